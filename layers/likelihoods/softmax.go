package likelihoods

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// Softmax is the softmax likelihood p(y | f) = exp(f_y) / Σ_c exp(f_c)
// with its expected log-likelihood estimated by Monte Carlo, the way
// GPflow's Softmax does it for the sparse variational baselines the
// additive-noise paper compares against (100 draws per row):
//
//	E[log softmax_y(f_i)] ≈ (1/S) Σ_k log softmax_y(μ_i + √ν_i ∘ ε_ik),
//
// reparameterised, so that its gradient with respect to μ and ν is the
// estimate's own. Trained by an engine that supplies fresh draws at every
// step (see Sampled; models/svi does), the ELBO and its gradient are
// unbiased estimates; ExpectedLogLik alone uses draws fixed by Seed. There
// is no parameter: unlike GPCsm's closed-form bound (GumbelSoftmax) the
// estimate tends to E[log softmax] itself as S grows. Prediction averages
// the softmax over Draws shared draws, as GPCsm's does.
type Softmax struct {
	// Samples is the number of draws per row in the expected
	// log-likelihood (0 means 100, GPflow's).
	Samples int
	// Draws is the number of draws for Predict (0 means 1000).
	Draws int
	// Seed fixes ExpectedLogLik's draws and Predict's.
	Seed uint64
}

// NewSoftmax returns the Monte Carlo softmax likelihood with 100 draws per
// row in training, 1000 in prediction, and seed 1.
func NewSoftmax() *Softmax { return &Softmax{Samples: 100, Draws: 1000, Seed: 1} }

// Latent implements Likelihood: one latent function per class.
func (l *Softmax) Latent(classes int) int { return classes }

// Targets implements Likelihood: one-hot rows.
func (l *Softmax) Targets(labels []int, classes int) ([]float64, int) {
	return oneHot(labels, classes), classes
}

// Params implements Likelihood: none.
func (l *Softmax) Params() []*layers.Param { return nil }

func (l *Softmax) samples() int {
	if l.Samples > 0 {
		return l.Samples
	}
	return 100
}

// DrawWidth implements Sampled: Samples draws of every latent function.
func (l *Softmax) DrawWidth(latent int) int { return l.samples() * latent }

// ExpectedLogLik implements Likelihood on draws fixed by Seed (each row
// its own), so that repeated evaluations agree: a sample-average
// approximation. An engine that can draw calls ExpectedLogLikDraws instead.
func (l *Softmax) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	if err := sameMatrices("Softmax", mu, v, y); err != nil {
		return nil, err
	}
	n, w := mu.Shape()[0], l.DrawWidth(mu.Shape()[1])
	rng := rand.New(rand.NewPCG(l.Seed, 0x736f_6674_6d78)) // "softmx"
	eps := make([]float64, n*w)
	for i := range eps {
		eps[i] = rng.NormFloat64()
	}
	en := constant(s.G, fmt.Sprintf("softmax/draws/%dx%d/seed%d", n, w, l.Seed), tensor.Shape{n, w}, eps)
	return l.ExpectedLogLikDraws(s, mu, v, y, en)
}

// ExpectedLogLikDraws implements Sampled: the estimate on the n×(S·C)
// standard normals eps, draw k of row i in columns kC … kC+C−1. It is one
// op per row (graph.Rows) with its reverse pass written out; second
// derivatives go through the same estimate built from graph ops.
func (l *Softmax) ExpectedLogLikDraws(s *layers.Scope, mu, v, y, eps *G.Node) (*G.Node, error) {
	if err := sameMatrices("Softmax", mu, v, y); err != nil {
		return nil, err
	}
	n, c := mu.Shape()[0], mu.Shape()[1]
	if c < 2 {
		return nil, fmt.Errorf("likelihoods.Softmax: needs at least 2 classes, got %d", c)
	}
	sm := l.samples()
	if es := eps.Shape(); len(es) != 2 || es[0] != n || es[1] != sm*c {
		return nil, fmt.Errorf("likelihoods.Softmax: draws of shape %v, want %d×%d (%d draws of %d classes a row)", es, n, sm*c, sm, c)
	}
	out, err := graph.Rows(softmaxRows(c, sm), mu, v, y, eps)
	if err != nil {
		return nil, err
	}
	return graph.Reshape(out, tensor.Shape{n})
}

// softmaxRows is the per-row Monte Carlo estimate for c classes and sm
// draws: F = (1/S) Σ_k (Σ_c y_c f_kc − logsumexp_c f_kc) with
// f_k = μ + √ν ∘ ε_k. With p_k = softmax(f_k) and r_kc = y_c − p_kc its
// derivatives are ∂F/∂μ_c = (1/S) Σ_k r_kc, ∂F/∂ν_c = (1/S) Σ_k r_kc ε_kc /
// (2√ν_c), ∂F/∂ε_kc = r_kc √ν_c / S and ∂F/∂y_c = (1/S) Σ_k f_kc.
func softmaxRows(c, sm int) *graph.RowFunc {
	inv := 1 / float64(sm)
	cost := float64(c*sm) * 8
	return &graph.RowFunc{
		Name:    fmt.Sprintf("softmax-mc(C=%d,S=%d)", c, sm),
		Out:     1,
		Scratch: 2 * c,
		Cost:    cost,
		VJPCost: 1.5 * cost,
		F: func(in [][]float64, out, scratch []float64) {
			mu, y, eps := in[0], in[2], in[3]
			sd, f := sqrtInto(scratch[:c], in[1]), scratch[c:2*c]
			acc := 0.0
			for k := range sm {
				top := drawLogits(f, mu, sd, eps[k*c:(k+1)*c])
				dot := 0.0
				for j := range f {
					dot += y[j] * f[j]
				}
				z := 0.0
				for j := range f {
					z += math.Exp(f[j] - top)
				}
				acc += dot - top - math.Log(z)
			}
			out[0] = acc * inv
		},
		VJP: func(in [][]float64, g []float64, grad [][]float64, scratch []float64) {
			mu, y, eps := in[0], in[2], in[3]
			gmu, gv, gy, geps := grad[0], grad[1], grad[2], grad[3]
			sd, f := sqrtInto(scratch[:c], in[1]), scratch[c:2*c]
			gs := g[0] * inv
			for k := range sm {
				e := eps[k*c : (k+1)*c]
				ge := geps[k*c : (k+1)*c]
				top := drawLogits(f, mu, sd, e)
				for j := range f {
					gy[j] += gs * f[j]
				}
				z := 0.0
				for j := range f {
					f[j] = math.Exp(f[j] - top)
					z += f[j]
				}
				for j := range f {
					r := gs * (y[j] - f[j]/z)
					gmu[j] += r
					gv[j] += r * e[j] / (2 * sd[j])
					ge[j] += r * sd[j]
				}
			}
		},
		Graph: func(args []*G.Node) (*G.Node, error) { return softmaxGraph(args, c, sm) },
	}
}

// sqrtInto writes √v into sd and returns it: the draws' scales, shared by
// the forward and the reverse pass.
func sqrtInto(sd, v []float64) []float64 {
	for j := range sd {
		sd[j] = math.Sqrt(v[j])
	}
	return sd
}

// drawLogits writes one draw f = μ + sd ∘ e and returns its largest entry
// (log-sum-exp's shift), in the same order in both passes so that the
// reverse pass differentiates exactly the forward's values.
func drawLogits(f, mu, sd, e []float64) float64 {
	top := math.Inf(-1)
	for j := range f {
		f[j] = mu[j] + sd[j]*e[j]
		top = max(top, f[j])
	}
	return top
}

// softmaxGraph is softmaxRows's estimate from graph ops, for second
// derivatives (and as the reference the op is tested against).
func softmaxGraph(args []*G.Node, c, sm int) (*G.Node, error) {
	mu, v, y, eps := args[0], args[1], args[2], args[3]
	n := mu.Shape()[0]
	e := &graph.Chain{}
	sd := e.Do(G.Sqrt(v))
	var sum *G.Node
	for k := range sm {
		f := e.Do(G.Add(mu, e.Do(G.HadamardProd(sd, e.Do(graph.Take(eps, 1, k*c, (k+1)*c))))))
		if e.Err != nil {
			return nil, e.Err
		}
		lse, err := logSumExpRows(f)
		if err != nil {
			return nil, err
		}
		term := e.Do(G.Sub(e.Do(rowDot(f, y)), lse))
		if sum == nil {
			sum = term
		} else {
			sum = e.Do(G.Add(sum, term))
		}
	}
	mean := e.Do(G.HadamardProd(sum, G.NewConstant(1/float64(sm))))
	if e.Err != nil {
		return nil, e.Err
	}
	return graph.Reshape(mean, tensor.Shape{n, 1})
}

// Predict implements Likelihood: the softmax averaged over Draws draws
// shared by all test points, as GPCsm's predictive.
func (l *Softmax) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	return (&GumbelSoftmax{Draws: l.Draws, Seed: l.Seed}).Predict(s, mu, v)
}

// LogLik implements Pointwise: log softmax(f)_y per row, exactly. The
// Monte Carlo expectation at zero variance has the same value and gradient
// but its draws' √ν makes the second derivative 0·∞ at ν = 0.
func (l *Softmax) LogLik(s *layers.Scope, f, y *G.Node) (*G.Node, error) {
	if f.Dims() != 2 || y.Dims() != 2 || !f.Shape().Eq(y.Shape()) {
		return nil, fmt.Errorf("likelihoods: softmax LogLik wants n×C latent values and one-hot targets of one shape, got %v and %v", f.Shape(), y.Shape())
	}
	e := &graph.Chain{}
	lse := e.Do(logSumExpRows(f))
	fy := e.Do(G.Sum(e.Do(G.HadamardProd(y, f)), 1))
	return e.Do(G.Sub(fy, lse)), e.Err
}
