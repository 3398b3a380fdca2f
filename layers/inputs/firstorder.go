package inputs

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/local"
)

// FirstOrder is the first-order input-noise model (NIMGP_FO): f at x̃ with
// each latent function's variance inflated by Δ_i = ∂μ_c(x̃_i)ᵀ V_i ∂μ_c(x̃_i),
// the gradient of the predictive mean coming from graph.Grad, so that it
// works for any kernel and the ELBO is differentiated through it; or Δ in
// closed form from a Conditional that offers one (Inflater).
type FirstOrder struct {
	Config
	noise *Noise
}

// Name implements Model.
func (*FirstOrder) Name() string { return "first-order" }

// Init implements Model.
func (m *FirstOrder) Init(d, c int, train *datasets.Dataset, seed uint64) error {
	return m.noise.init(d, train)
}

// Params implements Model.
func (m *FirstOrder) Params() []*layers.Param { return m.noise.Params() }

// Locals implements Model.
func (*FirstOrder) Locals() []*local.Param { return nil }

// Noise implements Model.
func (m *FirstOrder) Noise() *Noise { return m.noise }

// ParamGroups implements Model.
func (m *FirstOrder) ParamGroups() map[string]int {
	return map[string]int{"noise": countParams(m.noise.Params()...)}
}

// Train implements Model.
func (m *FirstOrder) Train(b Batch, f Conditional) (mu, v, extra *G.Node, err error) {
	noise, _, err := m.noise.args(b, false)
	if err != nil {
		return nil, nil, nil, err
	}
	mu, v, err = Inflated(f, b.X(), noise)
	return mu, v, nil, err
}

// Predict implements Model: Δ for the test rows' variances.
func (m *FirstOrder) Predict(t Test, f Conditional) (mu, v *G.Node, err error) {
	return Inflated(f, t.X(), t.Noise())
}

// Inflated returns the n×L means and Δ-inflated variances at x for input
// noise variances noise (n×D, or a D-vector shared by all rows). The
// gradient of Σ_i μ_c(x_i) with respect to x has row i equal to
// ∂μ_c(x_i)/∂x_i, because μ_c(x_i) depends on no other row.
func Inflated(f Conditional, x, noise *G.Node) (mu, v *G.Node, err error) {
	if fi, can := f.(Inflater); can {
		mus, vs, ok, err := fi.InflatedClassMarginals(x, noise)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			if mu, err = graph.Stack(mus...); err != nil {
				return nil, nil, err
			}
			v, err = graph.Stack(vs...)
			return mu, v, err
		}
	}
	mus, vs, err := f.ClassMarginals(x)
	if err != nil {
		return nil, nil, err
	}
	e := &graph.Chain{}
	for c := range mus {
		g, err := graph.Grad(e.Do(G.Sum(mus[c])), x)
		if err != nil {
			return nil, nil, fmt.Errorf("inputs: ∂μ_%d/∂x: %w", c, err)
		}
		// Δ_i = Σ_j g_ij² V_ij as one fused op; a learned V is a D-vector,
		// whose gradient is then a column sum without a B×D intermediate
		// (ten classes used to add ten B×D adjoints).
		delta := e.Do(graph.RowReduce(deltaTerm, g[0], noise))
		vs[c] = e.Do(G.Add(vs[c], delta))
	}
	if e.Err != nil {
		return nil, nil, e.Err
	}
	if mu, err = graph.Stack(mus...); err != nil {
		return nil, nil, err
	}
	v, err = graph.Stack(vs...)
	return mu, v, err
}

// Inflater is implemented by a Conditional that can build Inflated's
// marginals itself, Δ in closed form rather than through the gradient of
// the means (variational.Built, for dot-product kernels and noise
// variances shared by all rows); ok is false when it cannot, and Inflated
// differentiates the means.
type Inflater interface {
	InflatedClassMarginals(x, noise *G.Node) (mu, v []*G.Node, ok bool, err error)
}

// deltaTerm is g²·v, the summand of Δ_i = Σ_j g_ij² V_ij.
var deltaTerm = &graph.ElemFunc{
	Name: "deltaTerm",
	Cost: 1,
	F:    func(x []float64) float64 { return x[0] * x[0] * x[1] },
	DF: func(x, d []float64) {
		d[0], d[1] = 2*x[0]*x[1], x[0]*x[0]
	},
	FB: func(a [][]float64, out []float64) {
		g, v := a[0][:len(out)], a[1][:len(out)]
		for e := range out {
			out[e] = g[e] * g[e] * v[e]
		}
	},
	DFB: func(a [][]float64, k int, out []float64) {
		g, v := a[0][:len(out)], a[1][:len(out)]
		if k == 0 {
			for e := range out {
				out[e] = 2 * g[e] * v[e]
			}
			return
		}
		for e := range out {
			out[e] = g[e] * g[e]
		}
	},
	Stock: func(in G.Nodes) (*G.Node, error) {
		e := &graph.Chain{}
		return e.Do(G.HadamardProd(e.Do(G.Square(in[0])), in[1])), e.Err
	},
}
