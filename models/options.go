// Package models composes Gaussian-process classifiers from parts and
// trains, saves and applies them. A model is
//
//	kernel × likelihood × posterior family × input model × inference engine
//
// each part replaceable on its own (Options): kernels from layers/kernels
// or a user's KernelFactory; likelihoods from layers/likelihoods' registry
// or a user's; the sparse variational posterior (whitened or not, Z shared
// or per function) or the non-sparse one with Z = X held fixed; an input
// model from layers/inputs (observed, latent q(x_i), amortised, first-order,
// sampled); and stochastic variational inference (models/svi).
//
// Named models are presets (Presets, RegisterPreset), one file each: the
// noisy-input paper's MGP, NIMGP, NIMGP_NN and NIMGP_FO, and binary SVGP.
// Nothing outside the preset files asks which preset a model is: questions
// such as "does it use input noise?" are asked of the model's parts.
package models

import (
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// KernelInit carries the data-driven initial values a kernel factory uses.
type KernelInit struct {
	// Lengthscale is ℓ (dividing squared distances): the median pairwise
	// distance of up to 1000 training rows for stationary kernels, the mean
	// squared norm for the polynomial kernel.
	Lengthscale float64
	Variance    float64 // σ²
	Noise       float64 // σ₀²
}

// KernelFactory makes latent function c's kernel; name is unique per
// function. It is how a user-written kernel enters a model.
type KernelFactory func(name string, d int, init KernelInit) kernels.Kernel

// Options composes a model. Model names a preset whose parts fill what the
// other fields leave empty; a part given explicitly must be one the preset
// accepts. With Model empty the parts alone define the model (defaults:
// SE kernel, robust-max likelihood, sparse posterior, observed inputs).
// The zero value of every other field means the noisy-input paper's
// original code's default (see Defaults).
type Options struct {
	Model      string
	Kernel     KernelOptions
	Likelihood LikelihoodOptions
	Posterior  PosteriorOptions
	Inputs     InputOptions
	// Inference names a registered Engine (EngineNames): "svi" (stochastic
	// variational inference, the default), "ep" (expectation propagation
	// for one latent function: with the "full" family full EP, with the
	// "sparse" family EP on the FITC prior, i.e. generalised FITC; kernel
	// hyper-parameters and Z maximise the EP evidence by L-BFGS, one
	// iteration per epoch), "mf" (the SVGP paper's sparse mean-field
	// bound, probit only), or one a package registered, such as "laplace"
	// (models/laplace: the Laplace approximation for any likelihood on the
	// full family). Empty takes the preset's engine; another engine must
	// support the preset's parts.
	Inference string
	// EP configures the "ep" engine.
	EP    EPOptions
	Train TrainOptions
}

// KernelOptions selects the kernel of every latent function.
type KernelOptions struct {
	// Name is "se" (default), "se-iso" (one length-scale for every input),
	// "poly", "matern32", "matern52" or "linear"; Factory, if set,
	// overrides it.
	Name    string
	Degree  int           // polynomial degree (default 9)
	Factory KernelFactory `json:"-"`
	// Shared gives all latent functions one kernel, hyper-parameters
	// included (GPflow's single kernel with num_latent = C, which the
	// additive-noise paper's code uses). With shared inducing inputs the
	// latent functions then share K_ZZ, its Cholesky factor and K_Zx,
	// computed once per step instead of once per class. Without it (the
	// default, the noisy-input and SVGP papers' models) each latent
	// function has its own.
	Shared bool `json:",omitempty"`
	// Init, if set, replaces the initial values drawn from the data (the
	// median-distance ℓ, σ² = e, σ₀² = e⁻²⁰): a model defined with fixed
	// starting values, such as HTPC's ℓ = σ² = 1 with no white noise.
	Init *KernelInit `json:",omitempty"`
	// FixVariance holds the kernels' amplitude σ² at its initial value (a
	// kernel with an Amplitude method): HTPC's copula needs unit-variance
	// latent processes.
	FixVariance bool `json:",omitempty"`
}

// LikelihoodOptions selects the observation model.
type LikelihoodOptions struct {
	// Name is a registered likelihood (likelihoods.Names: robustmax,
	// probit, logit, …); Custom, if set, overrides it and must be supplied
	// again to Load.
	Name       string
	Epsilon    float64                // robust-max label-flip probability (default 1e-3)
	Quadrature int                    // Gauss–Hermite points (default 20)
	Custom     likelihoods.Likelihood `json:"-"`
	// Delta is the additive-noise likelihoods' (gpc1, gpc2, gpc3) initial δ,
	// or its value with FixDelta (default 1e-3); FixDelta keeps it fixed.
	Delta    float64
	FixDelta bool
	// DeltaPrior is robustmax-beta's Beta(a, b) prior on ε (zero: Beta(1, 9)).
	DeltaPrior [2]float64 `json:",omitempty"`
	// Samples is softmax's Monte Carlo draws per row in the ELBO (zero: 100).
	Samples int `json:",omitempty"`
}

// PosteriorOptions selects the posterior family.
type PosteriorOptions struct {
	// Family is "sparse" (q(u) at M inducing inputs, the default) or "full"
	// (Z = X held fixed: the non-sparse variational Gaussian).
	Family string
	// Inducing is M, the inducing points per latent function (capped at N).
	Inducing int
	Whitened bool
	SharedZ  bool
	// Jitter on K_ZZ and k(x,x): 1e-3 for stationary kernels, 1e-10 for the
	// polynomial one, as in the original code.
	Jitter float64
	// ZInit is how inducing inputs start: "random" (rows drawn with
	// replacement, per latent function: the noisy-input paper's code) or
	// "kmeans" (k-means centres of the training inputs, shared: the SVGP
	// paper's). Empty takes the preset's, else random.
	ZInit string
	// MeanSamples > 0 makes the mean-field engine predict by its option (i),
	// averaging over that many draws of q(g) (default 0: option (ii), the
	// Gaussian approximation).
	MeanSamples int
}

// InputOptions selects the input model and its settings.
type InputOptions struct {
	// Model is a registered input model (inputs.Names: observed, latent,
	// amortised, first-order, sampled).
	Model string
	// Standardize makes Fit standardise every input column with the
	// training rows' mean and population standard deviation (a constant
	// column is only centred), keep that transform in the model (Save
	// stores it) and apply it to every input Predict, Marginals and Continue
	// receive; given noise variances are divided by the squared scale.
	// Learned noise variances, kernel length-scales and q(u) are then in
	// standardised units; LearnedNoise and InducingInputs report them in
	// the inputs' units. Without it (the zero value, the original code's
	// behaviour) the inputs are used as given, and inputs of an extreme
	// scale (×1e6, ×1e−6) leave the length-scale heuristics and the
	// optimiser at a constant classifier. gpc train sets it unless
	// --no-standardize. Standardising data that are already standardised
	// is the identity up to round-off. FitStream does not standardise.
	Standardize bool `json:",omitempty"`
	inputs.Config
}

// EPOptions are expectation propagation's settings (zero: defaults).
type EPOptions struct {
	// Damping δ ∈ (0, 1] of site updates in natural parameters (default 1).
	Damping float64
	// Tol on the largest relative change of a site in a sweep (default 1e-8).
	Tol float64
	// MaxSweeps per EP run (default 200).
	MaxSweeps int
	// Parallel updates all sites from one posterior per sweep.
	Parallel bool
}

// TrainOptions are the inference engine's settings.
type TrainOptions struct {
	Epochs, Batch int
	// LR is Adam's learning rate or Adadelta's step rate.
	LR   float64
	Seed uint64
	// Optimizer is "adam" (default), "adadelta" (climin's: decay 0.9,
	// offset 1e-4, step rate LR) or "lbfgs" (full batch; Epochs bounds the
	// iterations), for the svi engine.
	Optimizer string
	// FreezeHyper and FreezeZ hold the kernel and likelihood
	// hyper-parameters, and the inducing inputs, at their initial values for
	// that many epochs (L-BFGS: iterations) first: the SVGP paper's "fix Z
	// and the hyper-parameters, then free them" schedule.
	FreezeHyper, FreezeZ int
	// LocalAdam is how per-row local parameters (NIMGP's q(x_i)) are
	// stepped: "dense" (default: every row at every step, TensorFlow's Adam
	// as the noisy-input paper's authors ran it) or "lazy" (only the
	// batch's rows, each with its own step count: O(B) instead of O(N) per
	// step, but a row then moves about √(N/B) times less far).
	LocalAdam string `json:",omitempty"`
}

// Resolve returns the options with the preset's parts filled in, or an
// error naming the part that contradicts the preset.
func (o Options) Resolve() (Options, error) {
	if o.Likelihood.Custom != nil {
		o.Likelihood.Name = "custom"
	}
	if o.Model == "" {
		if o.Inputs.Model == "" {
			o.Inputs.Model = "observed"
		}
		if o.Likelihood.Name == "" {
			o.Likelihood.Name = "robustmax"
		}
		if o.Posterior.Family == "" {
			o.Posterior.Family = "sparse"
		}
		return o, nil
	}
	p, ok := LookupPreset(o.Model)
	if !ok {
		return o, fmt.Errorf("models: unknown model %q (want one of %s)", o.Model, presetList())
	}
	if p.Defaults != nil {
		p.Defaults(&o)
	}
	switch {
	case o.Inputs.Model == "":
		o.Inputs.Model = p.Inputs
	case o.Inputs.Model != p.Inputs:
		return o, fmt.Errorf("models: model %s has %s inputs, not %s; leave the model empty to compose the parts yourself", p.Name, p.Inputs, o.Inputs.Model)
	}
	if o.Posterior.Family == "" {
		o.Posterior.Family = p.Posterior
	}
	if o.Posterior.ZInit == "" {
		o.Posterior.ZInit = p.ZInit
	}
	// Another engine may fit the preset's composition: whether it can is
	// the engine's to say (Engine.Supports, at New).
	if o.Inference == "" {
		o.Inference = p.Inference
	}
	switch {
	case o.Likelihood.Custom != nil:
		// A user's likelihood replaces the preset's; its fit to the data is
		// checked at Fit.
	case o.Likelihood.Name == "":
		o.Likelihood.Name = p.Likelihoods[0]
	case !contains(p.Likelihoods, o.Likelihood.Name):
		return o, fmt.Errorf("models: model %s takes the %s likelihood, not %s (%s); choose a model built for it or give the parts without a model", p.Name, joinOr(p.Likelihoods), o.Likelihood.Name, describeLikelihood(o.Likelihood.Name))
	}
	return o, nil
}

// describeLikelihood says what kind of likelihood a registered name is.
func describeLikelihood(name string) string {
	l, err := likelihoods.New(name, likelihoods.Config{})
	if err != nil {
		return "unknown"
	}
	if cc, ok := l.(likelihoods.ClassCounter); ok {
		return fmt.Sprintf("a %d-class likelihood", cc.Classes())
	}
	return "a multi-class likelihood"
}

// Defaults fills zero fields with the original code's settings.
func (o Options) Defaults() Options {
	if o.Kernel.Name == "" {
		o.Kernel.Name = "se"
	}
	if o.Kernel.Degree == 0 {
		o.Kernel.Degree = 9
	}
	if o.Likelihood.Epsilon == 0 {
		o.Likelihood.Epsilon = 1e-3
	}
	if o.Likelihood.Quadrature == 0 {
		o.Likelihood.Quadrature = 20
	}
	if o.Posterior.Inducing == 0 {
		o.Posterior.Inducing = 100
	}
	if o.Posterior.ZInit == "" {
		o.Posterior.ZInit = "random"
	}
	if o.Posterior.Jitter == 0 {
		o.Posterior.Jitter = 1e-3
		if o.Kernel.Name == "poly" {
			o.Posterior.Jitter = 1e-10
		}
	}
	o.Inputs.Config = o.Inputs.Config.Defaults()
	if o.Inference == "" {
		o.Inference = "svi"
	}
	if o.Train.Epochs == 0 {
		o.Train.Epochs = 100
	}
	if o.Train.Batch == 0 {
		o.Train.Batch = 50
	}
	if o.Train.LR == 0 {
		o.Train.LR = 0.01
	}
	if o.Train.Optimizer == "" {
		o.Train.Optimizer = "adam"
	}
	return o
}

// KernelNames are the built-in kernels.
var KernelNames = []string{"se", "se-iso", "poly", "matern32", "matern52", "linear"}

// Optimizers are the svi engine's optimisers.
var Optimizers = []string{"adam", "adadelta", "lbfgs"}

// PosteriorFamilies are the posterior families.
var PosteriorFamilies = []string{"sparse", "full"}

// Validate reports the first invalid setting of resolved options.
func (o Options) Validate() error {
	if o.Kernel.Factory == nil && !contains(KernelNames, o.Kernel.Name) {
		return fmt.Errorf("models: unknown kernel %q (want %s)", o.Kernel.Name, joinOr(KernelNames))
	}
	if o.Likelihood.Custom == nil {
		if _, err := likelihoods.New(o.Likelihood.Name, likelihoods.Config{Epsilon: o.Likelihood.Epsilon, Points: o.Likelihood.Quadrature}); err != nil {
			return fmt.Errorf("models: %w", err)
		}
	}
	if o.Posterior.ZInit != "random" && o.Posterior.ZInit != "kmeans" {
		return fmt.Errorf("models: inducing-input initialisation %q (want random or kmeans)", o.Posterior.ZInit)
	}
	if !contains(PosteriorFamilies, o.Posterior.Family) {
		return fmt.Errorf("models: unknown posterior family %q (want %s)", o.Posterior.Family, joinOr(PosteriorFamilies))
	}
	if !contains(inputs.Names(), o.Inputs.Model) {
		return fmt.Errorf("models: unknown input model %q (want %s)", o.Inputs.Model, joinOr(inputs.Names()))
	}
	if err := o.Inputs.Config.Validate(); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	if _, err := engineFor(o.Inference); err != nil {
		return err
	}
	if d := o.EP.Damping; d < 0 || d > 1 || o.EP.Tol < 0 || o.EP.MaxSweeps < 0 {
		return fmt.Errorf("models: EP damping %g outside (0, 1], or negative tolerance or sweeps", d)
	}
	switch {
	case o.Kernel.Degree < 1:
		return fmt.Errorf("models: polynomial degree %d", o.Kernel.Degree)
	case o.Posterior.MeanSamples < 0 || o.Posterior.MeanSamples > 100000:
		return fmt.Errorf("models: %d mean samples (want 0 to 100000)", o.Posterior.MeanSamples)
	case o.Posterior.Inducing < 1:
		return fmt.Errorf("models: %d inducing points", o.Posterior.Inducing)
	case o.Posterior.Jitter < 0 || math.IsNaN(o.Posterior.Jitter):
		return fmt.Errorf("models: negative jitter %g", o.Posterior.Jitter)
	case o.Train.Epochs < 1 || o.Train.Batch < 1:
		return fmt.Errorf("models: %d epochs of batch %d", o.Train.Epochs, o.Train.Batch)
	case !(o.Train.LR > 0) || math.IsInf(o.Train.LR, 0):
		return fmt.Errorf("models: learning rate %g", o.Train.LR)
	case !contains(Optimizers, o.Train.Optimizer):
		return fmt.Errorf("models: unknown optimizer %q (want %s)", o.Train.Optimizer, joinOr(Optimizers))
	case o.Train.FreezeHyper < 0 || o.Train.FreezeZ < 0:
		return fmt.Errorf("models: negative freeze (hyper-parameters %d, Z %d)", o.Train.FreezeHyper, o.Train.FreezeZ)
	case o.Train.LocalAdam != "" && o.Train.LocalAdam != "dense" && o.Train.LocalAdam != "lazy":
		return fmt.Errorf("models: local Adam %q (want dense or lazy)", o.Train.LocalAdam)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// joinOr lists names as "a, b or c".
func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " or " + names[len(names)-1]
}
