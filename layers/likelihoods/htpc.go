package likelihoods

import (
	"errors"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// HeavyTailed is the likelihood of the heavy-tailed process classifier
// (HTPC) of Wauthier & Jordan (NIPS 2010), the Laplace baseline of the
// robust multi-class paper (Hernández-Lobato et al. 2011, §3.2 of the
// project's digest). Each class k has a latent Gaussian value g_k, turned
// into a heavy-tailed one through the Gaussian copula, f_k = b_k τ(g_k) with
// τ = F₁⁻¹∘Φ the unit hyperbolic-secant quantile of Φ (with a unit-variance
// prior on g, f_k has the hyperbolic-secant marginal of scale b_k), and the
// label follows the softmax of f:
//
//	p(y = k | g) = exp(b_k τ(g_k)) / Σ_j exp(b_j τ(g_j)).
//
// The scales b_k are the likelihood's parameter ("htpc/b", one per class,
// stored on the log scale); the heavy tails make log p(y | g) non-concave
// in g, which the Laplace engine allows for. LogLik (Pointwise) is exact
// graph code whose derivatives to fourth order are closed-form (the τ op);
// ExpectedLogLik and Predict average over fixed standard-normal draws.
type HeavyTailed struct {
	// B holds log b_k; it is sized by Latent, once the classes are known.
	B *layers.Param
	// Samples is the number of draws per row in ExpectedLogLik (default 64).
	Samples int
	// Draws is the number of draws (in antithetic pairs) in Predict
	// (default 4096).
	Draws int
	// Seed fixes the draws of ExpectedLogLik and Predict.
	Seed uint64
	// InitB is the initial b_k (default 1).
	InitB float64
}

// NewHeavyTailed returns the HTPC likelihood with b_k = 1 at the start.
func NewHeavyTailed() *HeavyTailed { return &HeavyTailed{Samples: 64, Draws: 4096, InitB: 1} }

// Latent implements Likelihood: one latent Gaussian process per class. It
// also sizes b to the number of classes, which New does not know.
func (l *HeavyTailed) Latent(classes int) int {
	if l.B == nil || l.B.Shape[0] != classes {
		b := l.InitB
		if !(b > 0) {
			b = 1
		}
		l.B = layers.NewParam("htpc/b", tensor.Shape{classes}, b, layers.Exp)
	}
	return classes
}

// Targets implements Likelihood: one-hot rows.
func (l *HeavyTailed) Targets(labels []int, classes int) ([]float64, int) {
	return oneHot(labels, classes), classes
}

// Params implements Likelihood: the per-class scales b (nil before Latent).
func (l *HeavyTailed) Params() []*layers.Param {
	if l.B == nil {
		return nil
	}
	return []*layers.Param{l.B}
}

func (l *HeavyTailed) scales(s *layers.Scope, c int) (*G.Node, error) {
	if l.B == nil || l.B.Shape[0] != c {
		return nil, fmt.Errorf("likelihoods: htpc has %d latent columns but its scales are not sized for them (call Latent first)", c)
	}
	return s.Node(l.B)
}

// LogLik implements Pointwise: log softmax(b ⊙ τ(g))_y per row.
func (l *HeavyTailed) LogLik(s *layers.Scope, g, y *G.Node) (*G.Node, error) {
	if g.Dims() != 2 || y.Dims() != 2 || !g.Shape().Eq(y.Shape()) {
		return nil, fmt.Errorf("likelihoods: htpc LogLik wants n×C latent values and targets of one shape, got %v and %v", g.Shape(), y.Shape())
	}
	b, err := l.scales(s, g.Shape()[1])
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	f := e.Do(graph.ScaleColumns(e.Do(tauNode(g, 0)), b))
	lse := e.Do(logSumExpRows(f))
	fy := e.Do(G.Sum(e.Do(G.HadamardProd(y, f)), 1))
	return e.Do(G.Sub(fy, lse)), e.Err
}

func (l *HeavyTailed) samples() int {
	if l.Samples > 0 {
		return l.Samples
	}
	return 64
}

// ExpectedLogLik implements Likelihood by Monte Carlo over Samples fixed
// draws per row, g = μ + √ν ⊙ ε, so that other engines (svi) can fit the
// model; the Laplace engine uses LogLik instead.
func (l *HeavyTailed) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	if err := sameMatrices("htpc", mu, v); err != nil {
		return nil, err
	}
	n, c := mu.Shape()[0], mu.Shape()[1]
	k := l.samples()
	rng := rand.New(rand.NewPCG(l.Seed, 0x68747063)) // "htpc"
	e := &graph.Chain{}
	sd := e.Do(G.Sqrt(e.Do(G.Add(v, G.NewConstant(1e-300)))))
	var sum *G.Node
	for j := range k {
		eps := make([]float64, n*c)
		for i := range eps {
			eps[i] = rng.NormFloat64()
		}
		en := constant(s.G, fmt.Sprintf("htpc/draws/%dx%d/seed%d/%d", n, c, l.Seed, j), tensor.Shape{n, c}, eps)
		g := e.Do(G.Add(mu, e.Do(G.HadamardProd(sd, en))))
		if e.Err != nil {
			return nil, e.Err
		}
		ll, err := l.LogLik(s, g, y)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = ll
		} else {
			sum = e.Do(G.Add(sum, ll))
		}
	}
	return e.Do(G.HadamardProd(sum, G.NewConstant(1/float64(k)))), e.Err
}

func (l *HeavyTailed) draws() int {
	if l.Draws > 1 {
		return l.Draws + l.Draws%2
	}
	return 4096
}

// Predict implements Likelihood: E[softmax(b ⊙ τ(g))] for independent
// Gaussian g_k ~ N(μ_k, ν_k), averaged over Draws antithetic standard-normal
// draws held in the graph (the same for every row, so a row's
// probabilities do not depend on its batch). Forward only, like the other
// Monte Carlo predictives.
func (l *HeavyTailed) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	if err := sameMatrices("htpc", mu, v); err != nil {
		return nil, err
	}
	n, c := mu.Shape()[0], mu.Shape()[1]
	b, err := l.scales(s, c)
	if err != nil {
		return nil, err
	}
	half := l.draws() / 2
	rng := rand.New(rand.NewPCG(l.Seed, 0x4854504325))
	t := make([]float64, half*c)
	for i := range t {
		t[i] = rng.NormFloat64()
	}
	tn := constant(s.G, fmt.Sprintf("htpc/predict-draws/%dx%d/seed%d", half, c, l.Seed), tensor.Shape{half, c}, t)
	return G.ApplyOp(mcHTPCOp{n: n, c: c, k: half}, mu, v, b, tn)
}

// PredictJoint implements JointPredictor: E[softmax(b ⊙ τ(g))] for
// g ~ N(μ_i, S_i) with the cross-class covariances that the Laplace
// posterior carries (they are strong: HTPC's classes compete through the
// softmax), over Draws antithetic draws, the same for every row.
func (l *HeavyTailed) PredictJoint(mu, chol []float64, n, c int) ([]float64, error) {
	if l.B == nil || l.B.Shape[0] != c {
		return nil, fmt.Errorf("likelihoods: htpc has %d latent values per row but its scales are not sized for them", c)
	}
	if len(mu) != n*c || len(chol) != n*c*c {
		return nil, fmt.Errorf("likelihoods: htpc PredictJoint got %d means and %d factor entries for %d rows of %d", len(mu), len(chol), n, c)
	}
	b := make([]float64, c)
	for k := range b {
		b[k] = l.B.Value(k)
	}
	half := l.draws() / 2
	rng := rand.New(rand.NewPCG(l.Seed, 0x4854504325))
	z := make([]float64, half*c)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	out := make([]float64, n*c)
	g, f := make([]float64, c), make([]float64, c)
	for j := range n {
		ch := chol[j*c*c : (j+1)*c*c]
		p := out[j*c : (j+1)*c]
		for s := range half {
			zs := z[s*c : (s+1)*c]
			for sign := -1.0; sign <= 1; sign += 2 {
				for k := range c {
					v := mu[j*c+k]
					for t := 0; t <= k; t++ {
						v += sign * ch[k*c+t] * zs[t]
					}
					g[k] = v
				}
				mx := math.Inf(-1)
				for k := range c {
					f[k] = b[k] * tau(g[k])
					mx = math.Max(mx, f[k])
				}
				var zsum float64
				for k := range f {
					f[k] = math.Exp(f[k] - mx)
					zsum += f[k]
				}
				for k := range f {
					p[k] += f[k] / zsum
				}
			}
		}
		for k := range p {
			p[k] /= float64(2 * half)
		}
	}
	return out, nil
}

// mcHTPCOp averages softmax(b ⊙ τ(μ ± √ν ⊙ t)) over antithetic draws t.
type mcHTPCOp struct {
	noGradOp
	n, c, k int
}

func (op mcHTPCOp) Arity() int { return 4 }
func (op mcHTPCOp) Type() hm.Type {
	return hm.NewFnType(matType, matType, vecType, matType, matType)
}
func (op mcHTPCOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.c}, nil
}
func (op mcHTPCOp) String() string        { return fmt.Sprintf("MCHTPC{%dx%d,%d}", op.n, op.c, op.k) }
func (op mcHTPCOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op mcHTPCOp) Hashcode() uint32      { return hashString(op.String()) }
func (op mcHTPCOp) DiffWRT(int) []bool    { return []bool{false, false, false, false} }
func (op mcHTPCOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, errNoGrad
}

func (op mcHTPCOp) Do(vs ...G.Value) (G.Value, error) {
	var in [4][]float64
	for i := range in {
		x, err := graph.Float64s(vs[i])
		if err != nil {
			return nil, err
		}
		in[i] = x
	}
	mu, v, b, t := in[0], in[1], in[2], in[3]
	n, c, k := op.n, op.c, op.k
	if len(mu) != n*c || len(v) != n*c || len(b) != c || len(t) != k*c {
		return nil, errors.New("likelihoods: htpc predictive got inputs of the wrong size")
	}
	out := make([]float64, n*c)
	f := make([]float64, c)
	sd := make([]float64, c)
	for i := range n {
		for j := range c {
			sd[j] = math.Sqrt(math.Max(v[i*c+j], 0))
		}
		p := out[i*c : (i+1)*c]
		for s := range k {
			ts := t[s*c : (s+1)*c]
			for sign := -1.0; sign <= 1; sign += 2 {
				mx := math.Inf(-1)
				for j := range c {
					f[j] = b[j] * tau(mu[i*c+j]+sign*sd[j]*ts[j])
					mx = math.Max(mx, f[j])
				}
				var z float64
				for j := range f {
					f[j] = math.Exp(f[j] - mx)
					z += f[j]
				}
				for j := range f {
					p[j] += f[j] / z
				}
			}
		}
		for j := range p {
			p[j] /= float64(2 * k)
		}
	}
	return graph.NewValue(tensor.Shape{n, c}, out), nil
}

func init() {
	if err := Register("htpc", func(Config) Likelihood { return NewHeavyTailed() }); err != nil {
		panic(err)
	}
}
