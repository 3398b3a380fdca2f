// Package inputs provides input models: how the inputs at which the latent
// functions are evaluated relate to the observed inputs x̃. An input model
// is one part of a composed classifier (models.Options.Inputs), beside the
// kernel, the likelihood and the posterior family:
//
//   - observed: f is evaluated at x̃ (MGP, SVGP);
//   - latent: noiseless inputs x_i with a free q(x_i) per training point,
//     held as per-row local parameters (NIMGP);
//   - amortised: q(x_i) computed from (x̃_i, y_i) by two networks (NIMGP_NN);
//   - first-order: f at x̃ with variances inflated by Δ = ∂μᵀ V ∂μ, the
//     gradient of the predictive mean from automatic differentiation
//     (NIMGP_FO);
//   - sampled: each step evaluates f at a fresh draw x ~ N(x̃, V) (the
//     "MGP (sampling)" baseline).
//
// Every model with input noise shares one Noise part: variances given per
// point (or one value for all), or one variance per dimension learned.
// A user adds an input model by implementing Model and calling Register.
package inputs

import (
	"fmt"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/local"
)

// RowFill writes the values of training row i of ds into dst.
type RowFill func(ds *datasets.Dataset, i int, dst []float64)

// Batch is the training graph of one minibatch of fixed size, as an input
// model declares what it needs of it. The inference engine implements it
// and fills every declared input before each step.
type Batch interface {
	// Scope binds parameters into the batch's graph.
	Scope() *layers.Scope
	// Size is the number of rows B.
	Size() int
	// X is the B×D input of the batch's observed inputs x̃.
	X() *G.Node
	// Rows declares a B×width input filled before each step with fill for
	// each batch row's training row.
	Rows(name string, width int, fill RowFill) *G.Node
	// Local declares the B×Width input of the batch's rows of a local
	// parameter table; the engine returns its gradient to the table.
	Local(p *local.Param) *G.Node
	// Normals declares a B×width input of standard normal draws, fresh at
	// every step.
	Normals(name string, width int) *G.Node
}

// Test is a prediction graph over a fixed number of rows.
type Test interface {
	// Scope binds parameters into the prediction graph.
	Scope() *layers.Scope
	// X is the n×D input of the inputs at which to predict: the observed
	// x̃*, or, for a Sampler, one draw of the noiseless inputs.
	X() *G.Node
	// Noise declares the n×D input of the test rows' input-noise variances:
	// those given with the test rows, else the noise model's (Noise.At).
	Noise() *G.Node
}

// Conditional gives the Gaussian marginals of the latent functions at inputs
// in a graph (a posterior family bound into that graph).
type Conditional interface {
	// ClassMarginals returns per latent function the n-vectors of means and
	// variances at the rows of x.
	ClassMarginals(x *G.Node) (mu, v []*G.Node, err error)
	// Marginals returns the n×L matrices of means and variances at x.
	Marginals(x *G.Node) (mu, v *G.Node, err error)
}

// Model is an input model.
type Model interface {
	// Name is the model's registry name.
	Name() string
	// Init creates the parameters for d inputs and c classes. With a
	// training set it also sets their initial values from the data and
	// checks any given noise; without one (Load) it creates the structure
	// only, to be overwritten by stored values.
	Init(d, c int, train *datasets.Dataset, seed uint64) error
	// Params returns the global trainable parameters (noise, networks).
	Params() []*layers.Param
	// Locals returns the per-row parameter tables (nil for none).
	Locals() []*local.Param
	// Train returns the n×L means and variances of the latent functions
	// for the batch, and the n-vector of extra per-row ELBO terms (nil for
	// none), given the posterior's marginals.
	Train(b Batch, f Conditional) (mu, v, extra *G.Node, err error)
	// Predict returns the latent marginals at the test graph's inputs.
	Predict(t Test, f Conditional) (mu, v *G.Node, err error)
	// Noise returns the model's input-noise part, nil when it has none.
	Noise() *Noise
	// ParamGroups counts the model's parameters by group ("noise", "nn",
	// "q(x)").
	ParamGroups() map[string]int
}

// Passthrough is implemented by input models that evaluate the latent
// functions at the observed inputs as they are, with no parameters, noise
// or per-row state. Engines that work on the latent values at the training
// inputs (EP, Laplace, MCMC) need such an input model.
type Passthrough interface {
	// Passthrough reports whether the model is the identity on the inputs.
	Passthrough() bool
}

// IsPassthrough reports whether m implements Passthrough and is the identity.
func IsPassthrough(m Model) bool {
	p, ok := m.(Passthrough)
	return ok && p.Passthrough()
}

// Sampler is implemented by input models whose predictions average the
// class probabilities over draws of the noiseless test inputs.
type Sampler interface {
	// Samples is the number of draws per prediction.
	Samples() int
	// SetSamples changes the number of draws (a prediction-time setting).
	SetSamples(n int)
	// TestPosterior writes the mean and standard deviation of the
	// noiseless input given one observed row xt with noise variances v.
	TestPosterior(xt, v, mean, sd []float64)
}

// Config holds every input model's settings; each model reads its own.
type Config struct {
	// Noise configures the input-noise part of the noise-aware models.
	Noise NoiseConfig
	// PriorVar is s in the prior p(x_i) = N(0, s·I) of latent and amortised
	// inputs (default 1000).
	PriorVar float64
	// QXInitVar is the initial variance of a latent q(x_i) (default 1e-5).
	QXInitVar float64
	// Hidden are the amortised networks' hidden sizes (default {50});
	// Residual starts the mean at x̃ and the log-variance near −10.
	Hidden   []int
	Residual bool
	// TestSamples is the number of draws of x* per prediction of a Sampler
	// (default 500).
	TestSamples int
}

// Defaults fills zero fields with the noisy-input paper's settings.
func (c Config) Defaults() Config {
	c.Noise = c.Noise.Defaults()
	if c.PriorVar == 0 {
		c.PriorVar = 1000
	}
	if c.QXInitVar == 0 {
		c.QXInitVar = 1e-5
	}
	if c.Hidden == nil {
		c.Hidden = []int{50}
	}
	if c.TestSamples == 0 {
		c.TestSamples = 500
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if err := c.Noise.Validate(); err != nil {
		return err
	}
	switch {
	case !(c.PriorVar > 0) || !(c.QXInitVar > 0):
		return fmt.Errorf("inputs: prior variance %g and q(x) variance %g must be positive", c.PriorVar, c.QXInitVar)
	case c.TestSamples < 1:
		return fmt.Errorf("inputs: %d test samples", c.TestSamples)
	}
	for _, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("inputs: hidden layer of %d units", h)
		}
	}
	return nil
}

// Factory makes an input model from its settings.
type Factory func(Config) Model

var registry = layers.Registry[Factory]{Kind: "input model"}

// Register adds an input model under name; it fails if the name is taken.
func Register(name string, f Factory) error {
	if err := registry.Register(name, f); err != nil {
		return fmt.Errorf("inputs: %w", err)
	}
	return nil
}

// Names lists the registered input models, sorted.
func Names() []string { return registry.Names() }

// New returns the input model registered under name.
func New(name string, c Config) (Model, error) {
	f, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	return f(c.Defaults()), nil
}

func init() {
	for name, f := range map[string]Factory{
		"observed": func(Config) Model { return &Observed{} },
		// Zero variances only mean no Δ in the first-order model and no
		// perturbation in the sampled one; the latent models divide by them.
		"latent": func(c Config) Model {
			return &Latent{Config: c, noise: newNoise(c.Noise, "the latent input model", true)}
		},
		"amortised": func(c Config) Model {
			return &Amortised{Config: c, noise: newNoise(c.Noise, "the amortised input model", true)}
		},
		"first-order": func(c Config) Model {
			return &FirstOrder{Config: c, noise: newNoise(c.Noise, "the first-order input model", false)}
		},
		"sampled": func(c Config) Model {
			return &Sampled{Config: c, noise: newNoise(c.Noise, "the sampled input model", false)}
		},
		"sampled-mc": func(c Config) Model {
			return &SampledMC{Sampled{Config: c, noise: newNoise(c.Noise, "the sampled input model", false)}}
		},
	} {
		if err := Register(name, f); err != nil {
			panic(err)
		}
	}
}

// countParams adds the sizes of ps.
func countParams(ps ...*layers.Param) int {
	n := 0
	for _, p := range slices.DeleteFunc(ps, func(p *layers.Param) bool { return p == nil }) {
		n += len(p.Data)
	}
	return n
}

// Perturber is implemented by input models whose parameters start where a
// gradient check would find trivially zero terms (networks at small
// weights, q(x_i) at a tiny variance): Perturb moves them to a generic
// point drawn from rng.
type Perturber interface {
	Perturb(rng *rand.Rand)
}
