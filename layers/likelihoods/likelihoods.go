// Package likelihoods provides observation models for GP classifiers as graph
// code: each computes the expected log-likelihood under Gaussian marginals of
// the latent functions, and predictive class probabilities. A user-defined
// likelihood implements Likelihood the same way; Expect1D does the
// one-dimensional Gauss–Hermite quadrature most of them need.
package likelihoods

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// Likelihood is an observation model p(y | f) for C classes.
type Likelihood interface {
	// Latent is the number of latent functions for the given number of classes.
	Latent(classes int) int
	// Targets encodes labels as the rows of the n×width target matrix that
	// ExpectedLogLik receives.
	Targets(labels []int, classes int) (data []float64, width int)
	// ExpectedLogLik returns the n-vector E[log p(y_i | f_i)] where f_i has
	// independent Gaussian marginals with n×L means mu and variances v.
	ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error)
	// Predict returns the n×C matrix of predictive class probabilities.
	Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error)
	// Params returns the likelihood's trainable parameters (often none).
	Params() []*layers.Param
}

// Prior is implemented by a likelihood whose parameters carry a prior: its
// log density (up to a constant; nil for none) joins the objective once
// per batch, unscaled, so the fit is MAP in those parameters.
type Prior interface {
	LogPrior(s *layers.Scope) (*G.Node, error)
}

// UnitProbit is implemented by binary likelihoods that may be the step of
// f plus unit Gaussian noise, p(y = 1 | f) = P(f + ε > 0), ε ~ N(0, 1):
// the probit. The SVGP paper's mean-field bound needs that form.
type UnitProbit interface {
	// UnitProbit reports whether the likelihood has that form.
	UnitProbit() bool
}

// JointPredictor is implemented by multi-latent likelihoods that predict
// from a joint Gaussian over each row's L latent values: an engine whose
// posterior couples the latent functions (Laplace's, through the
// likelihood's Hessian) passes it the correlations that Predict's
// independent marginals drop.
type JointPredictor interface {
	// PredictJoint returns the n×C class probabilities (row-major) for
	// latent values f_i ~ N(mu_i, S_i): mu is n×L and chol holds the lower
	// Cholesky factors of the S_i, n blocks of L×L, row-major.
	PredictJoint(mu, chol []float64, n, latent int) ([]float64, error)
}

// ClassCounter is implemented by likelihoods defined for one number of
// classes only (a binary likelihood: 2), so that a model can refuse data
// with another number before training.
type ClassCounter interface {
	Classes() int
}

// Sampled is implemented by likelihoods whose expected log-likelihood is a
// Monte Carlo estimate over draws of f_i ~ N(μ_i, ν_i) (Softmax). An engine
// that draws fresh standard normals at every step (models/svi) passes an
// n×DrawWidth(L) input of them to ExpectedLogLikDraws, for L latent
// functions, so that the ELBO's gradient is an unbiased reparameterised
// estimate; ExpectedLogLik is the same estimate on draws the likelihood
// fixes itself.
type Sampled interface {
	DrawWidth(latent int) int
	ExpectedLogLikDraws(s *layers.Scope, mu, v, y, eps *G.Node) (*G.Node, error)
}

// Config holds the settings of the built-in likelihoods.
type Config struct {
	// Epsilon is robust-max's label-flip probability (default 1e-3).
	Epsilon float64
	// Points is the number of Gauss–Hermite nodes (default 20).
	Points int
	// Delta is the additive-noise likelihoods' (gpc1, gpc2, gpc3) initial
	// δ, or its value with FixDelta (default 1e-3, the authors' initial
	// value and the fixed value the paper compares against). robustmax-learned
	// starts from Epsilon instead, its own setting.
	Delta float64
	// FixDelta keeps δ at Delta instead of learning it.
	FixDelta bool
	// DeltaPrior is robustmax-beta's Beta(a, b) prior on ε (zero: its
	// default Beta(1, 9)).
	DeltaPrior [2]float64
	// Samples is softmax's number of Monte Carlo draws per row in the
	// expected log-likelihood (default 100, GPflow's).
	Samples int
}

// DeltaReader is implemented by likelihoods that can say whether they read
// Config.Delta and Config.FixDelta, so that a caller can tell whether a δ
// setting would be ignored; a likelihood that does not implement it reads
// neither.
type DeltaReader interface {
	ReadsDelta() bool
}

// ReadsDelta reports whether l reads Config.Delta and Config.FixDelta.
func ReadsDelta(l Likelihood) bool {
	d, ok := l.(DeltaReader)
	return ok && d.ReadsDelta()
}

// DeltaReaders lists the registered likelihoods that read Config.Delta,
// sorted, for messages that say where a δ setting applies.
func DeltaReaders() []string {
	var out []string
	for _, name := range Names() {
		if l, err := New(name, Config{}); err == nil && ReadsDelta(l) {
			out = append(out, name)
		}
	}
	return out
}

// Factory makes a likelihood from its settings.
type Factory func(Config) Likelihood

var registry = layers.Registry[Factory]{Kind: "likelihood"}

// Register adds a likelihood under name (as the CLI, specs and saved
// models name it); it fails if the name is taken.
func Register(name string, f Factory) error {
	if err := registry.Register(name, f); err != nil {
		return fmt.Errorf("likelihoods: %w", err)
	}
	return nil
}

// Names lists the registered likelihoods, sorted.
func Names() []string { return registry.Names() }

// New returns the likelihood registered under name; zero settings take
// their defaults.
func New(name string, c Config) (Likelihood, error) {
	f, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("likelihoods: %w", err)
	}
	if c.Epsilon == 0 {
		c.Epsilon = 1e-3
	}
	if c.Points == 0 {
		c.Points = 20
	}
	if c.Delta == 0 {
		c.Delta = 1e-3
	}
	if !(c.Epsilon > 0 && c.Epsilon < 1) {
		return nil, fmt.Errorf("likelihoods: label-flip probability %g outside (0, 1)", c.Epsilon)
	}
	if c.Points < 1 {
		return nil, fmt.Errorf("likelihoods: %d quadrature points", c.Points)
	}
	if c.Samples < 0 {
		return nil, fmt.Errorf("likelihoods: %d Monte Carlo draws", c.Samples)
	}
	// Above 1/2 a binary robust likelihood would favour the wrong label.
	if !(c.Delta > 0 && c.Delta < 0.5) {
		return nil, fmt.Errorf("likelihoods: robust-likelihood δ %g outside (0, 1/2)", c.Delta)
	}
	return f(c), nil
}

func init() {
	for name, f := range map[string]Factory{
		"robustmax": func(c Config) Likelihood { return &RobustMax{Epsilon: c.Epsilon, Points: c.Points} },
		"probit":    func(c Config) Likelihood { return &Bernoulli{Link: "probit", Points: c.Points} },
		"logit":     func(c Config) Likelihood { return &Bernoulli{Link: "logit", Points: c.Points} },
		"gpc1":      additive(StepNoise),
		"gpc2":      additive(ProbitNoise),
		"gpc3":      additive(LogitNoise),
		"gpcsm":     func(c Config) Likelihood { return NewGumbelSoftmax() },
		"softmax": func(c Config) Likelihood {
			l := NewSoftmax()
			if c.Samples > 0 {
				l.Samples = c.Samples
			}
			return l
		},
		"robustmax-learned": func(c Config) Likelihood {
			l := NewAdditive("likelihood", StepNoise, c.Epsilon)
			l.Points, l.Multi = c.Points, true
			return l
		},
		// Robust-max with ε learned under a Beta prior (default Beta(1, 9),
		// the robust paper's prior on its outlier rate, put on ε itself): the
		// outlier-robust model trained by sparse variational inference.
		"robustmax-beta": func(c Config) Likelihood {
			l := NewAdditive("likelihood", StepNoise, c.Epsilon)
			l.Points, l.Multi, l.Prior = c.Points, true, [2]float64{1, 9}
			if c.DeltaPrior[0] > 0 && c.DeltaPrior[1] > 0 {
				l.Prior = c.DeltaPrior
			}
			return l
		},
	} {
		if err := Register(name, f); err != nil {
			panic(err)
		}
	}
}

// Hermite returns Gauss–Hermite nodes and weights for ∫ e^{−t²} f(t) dt.
func Hermite(points int) (t, w []float64) {
	hermiteMu.Lock()
	defer hermiteMu.Unlock()
	if c, ok := hermiteCache[points]; ok {
		return c[0], c[1]
	}
	t, w = make([]float64, points), make([]float64, points)
	quad.Hermite{}.FixedLocations(t, w, math.Inf(-1), math.Inf(1))
	hermiteCache[points] = [2][]float64{t, w}
	return t, w
}

var (
	hermiteMu    sync.Mutex
	hermiteCache = map[int][2][]float64{}
)

// constant returns a graph input node holding fixed data; its name encodes the
// data's identity so that Gorgonia's node merging cannot confuse two of them.
func constant(g *G.ExprGraph, name string, shape tensor.Shape, data []float64) *G.Node {
	return graph.Input(g, name, shape, append([]float64(nil), data...))
}

// quadNodes returns F (n×K) with F_ik = μ_i + √(2 v_i) t_k, and the row of
// weights w_k/√π as a K×1 matrix, so that E[h(f_i)] ≈ (h(F) W)_i.
func quadNodes(g *G.ExprGraph, mu, v *G.Node, points int) (f, w *G.Node, err error) {
	n := mu.Shape()[0]
	t, wt := Hermite(points)
	ws := make([]float64, points)
	for k := range ws {
		ws[k] = wt[k] / math.SqrtPi
	}
	tn := constant(g, fmt.Sprintf("gh%d/t", points), tensor.Shape{points}, t)
	w = constant(g, fmt.Sprintf("gh%d/w", points), tensor.Shape{points, 1}, ws)
	sd, err := G.HadamardProd(v, G.NewConstant(2.0))
	if err != nil {
		return nil, nil, err
	}
	if sd, err = G.Sqrt(sd); err != nil {
		return nil, nil, err
	}
	nk := tensor.Shape{n, points}
	sdB, err := graph.BroadcastTo(sd, nk, []int{1})
	if err != nil {
		return nil, nil, err
	}
	tB, err := graph.BroadcastTo(tn, nk, []int{0})
	if err != nil {
		return nil, nil, err
	}
	muB, err := graph.BroadcastTo(mu, nk, []int{1})
	if err != nil {
		return nil, nil, err
	}
	st, err := G.HadamardProd(sdB, tB)
	if err != nil {
		return nil, nil, err
	}
	f, err = G.Add(muB, st)
	return f, w, err
}

// Expect1D returns the n-vector E[h(f_i)] for f_i ~ N(mu_i, v_i) by
// Gauss–Hermite quadrature with the given number of points; h maps the n×K
// matrix of quadrature nodes to an n×K matrix of values. It is the building
// block for user-defined likelihoods.
func Expect1D(g *G.ExprGraph, mu, v *G.Node, points int, h func(f *G.Node) (*G.Node, error)) (*G.Node, error) {
	if mu.Dims() != 1 || v.Dims() != 1 {
		return nil, fmt.Errorf("likelihoods.Expect1D: want vectors, got shapes %v and %v", mu.Shape(), v.Shape())
	}
	f, w, err := quadNodes(g, mu, v, points)
	if err != nil {
		return nil, err
	}
	hv, err := h(f)
	if err != nil {
		return nil, err
	}
	e, err := graph.MatMul(hv, w, false, false)
	if err != nil {
		return nil, err
	}
	return graph.Reshape(e, tensor.Shape{mu.Shape()[0]})
}

// Column returns column j of an n×L matrix as an n-vector.
func Column(x *G.Node, j int) (*G.Node, error) { return graph.Column(x, j) }

// Columns stacks n-vectors as the columns of an n×len(cols) matrix.
func Columns(cols ...*G.Node) (*G.Node, error) { return graph.Stack(cols...) }

// oneHot encodes labels as rows of an n×C indicator matrix.
func oneHot(labels []int, classes int) []float64 {
	y := make([]float64, len(labels)*classes)
	for i, l := range labels {
		y[i*classes+l] = 1
	}
	return y
}
