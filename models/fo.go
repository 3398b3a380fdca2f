package models

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers/variational"
)

// firstOrderMarginals builds NIMGP_FO's marginals at the noisy inputs: each
// class's variance gains Δ_i = ∂μ_c(x̃_i)ᵀ V_i ∂μ_c(x̃_i). The gradient comes
// from graph.Grad of Σ_i μ_c(x̃_i) with respect to the inputs (row i is
// ∂μ_c(x̃_i)/∂x̃_i because μ_c(x̃_i) depends on no other row), so it works for
// any kernel, and the ELBO is later differentiated through it.
func (t *trainGraph) firstOrderMarginals() (mu, v *G.Node, err error) {
	if t.m.logNoise == nil {
		t.v = newFeed(t.g, "noise", t.B, t.m.D)
	}
	noise, _, err := t.noiseArgs(t.v)
	if err != nil {
		return nil, nil, err
	}
	return firstOrder(t.b, t.x.node, noise)
}

// firstOrder returns the n×C means and Δ-inflated variances at x for input
// noise variances noise (n×D, or a D-vector shared by all rows); shared by
// training and prediction.
func firstOrder(b *variational.Built, x, noise *G.Node) (mu, v *G.Node, err error) {
	mus, vs, err := b.ClassMarginals(x)
	if err != nil {
		return nil, nil, err
	}
	e := &graph.Chain{}
	for c := range mus {
		g, err := graph.Grad(e.Do(G.Sum(mus[c])), x)
		if err != nil {
			return nil, nil, fmt.Errorf("models: ∂μ_%d/∂x: %w", c, err)
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
	if mu, err = variational.Stack(mus); err != nil {
		return nil, nil, err
	}
	v, err = variational.Stack(vs)
	return mu, v, err
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
