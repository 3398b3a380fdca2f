package models

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// KernelInit carries the data-driven initial values a KernelFactory
// receives: those of the kernel KernelOptions.Name names when it reports
// them (kernels.InitReporter: SE, Matérn and polynomial — the polynomial's
// ℓ is the mean squared norm), else those of the stationary kernels (ℓ,
// dividing squared distances, the median pairwise distance of 1000
// training rows drawn with replacement; σ² = e; σ₀² = e⁻²⁰); all ones when
// Load rebuilds the kernel for the stored values to overwrite. A
// registered kernel (kernels.Register) initialises itself instead, from
// kernels.Data.
type KernelInit struct {
	Lengthscale float64
	Variance    float64 // σ²
	Noise       float64 // σ₀²
}

// KernelFactory makes latent function c's kernel; name is unique per
// function. It is how a user-written kernel enters a model through the
// API; one registered with kernels.Register can instead be named in
// KernelOptions.Name (and on the command line and in specs), and a saved
// model with it reloads without the factory.
type KernelFactory func(name string, d int, init KernelInit) kernels.Kernel

// Options composes a model. Model names a preset whose parts fill what the
// other fields leave empty; a part given explicitly must be one the preset
// accepts. With Model empty the parts alone define the model (defaults:
// SE kernel, robust-max likelihood, sparse posterior, observed inputs).
// The zero value of every other field means the preset's training
// (Preset.Train) or the noisy-input paper's original code's default (see
// Defaults); the zero Options train as gpc train does without flags, to
// convergence and on standardised inputs.
type Options struct {
	Model      string
	Kernel     KernelOptions
	Likelihood LikelihoodOptions
	Posterior  PosteriorOptions
	Inputs     InputOptions
	// Inference names a registered Engine (EngineNames): "svi" (stochastic
	// variational inference, the default), "ep" (expectation propagation:
	// for one latent function with the "full" family full EP, with the
	// "sparse" family EP on the FITC prior, i.e. generalised FITC; for a
	// likelihood whose sites couple latent functions (ep.MultiTilted, such
	// as robustmax-rho) multi-latent EP on the full prior; kernel
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
	// Settings configure engines registered outside this package, as
	// "engine.key" → value (say "mcmc.chains" → "4"): an engine reads and
	// validates the keys under its own name (in Supports, so that a bad
	// value fails at New), so that a new engine needs no field here. They
	// are part of the options a checkpoint fingerprints and Save stores.
	Settings map[string]string `json:",omitempty"`
}

// Setting returns the value of engine setting key for the engine named
// engine ("" and false when unset).
func (o Options) Setting(engine, key string) (string, bool) {
	v, ok := o.Settings[engine+"."+key]
	return v, ok
}

// KernelOptions selects the kernel of every latent function.
type KernelOptions struct {
	// Name is a kernel expression over the registered kernels
	// (kernels.Names: se, the default, poly, matern32, …; sums and products
	// such as "matern52+linear" or "se*poly(3)", see kernels.Parse). Save
	// stores it and Load rebuilds it. Factory, if set, overrides it for
	// building; Name then still tells Load which kernel has the
	// factory's parameters, if any does.
	Name    string
	Degree  int           // degree of a kernel that has one and is given none in Name (default 9)
	Factory KernelFactory `json:"-"`
	// Shared gives all latent functions one kernel, hyper-parameters
	// included (GPflow's single kernel with num_latent = C, which the
	// additive-noise paper's code uses). With shared inducing inputs the
	// latent functions then share K_ZZ, its Cholesky factor and K_Zx,
	// computed once per step instead of once per class. Without it (the
	// default, the noisy-input and SVGP papers' models) each latent
	// function has its own.
	Shared bool `json:",omitempty"`
	// LatentNoise > 0 gives every latent function the shared kernel (as
	// Shared) plus a white noise ϑ_c² of its own starting there, learnt
	// with the kernel: the robust paper's SMGPC.
	LatentNoise float64 `json:",omitempty"`
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
	// Jitter on K_ZZ and k(x,x); zero takes the kernel's own
	// (kernels.JitterOf: 1e-3 for stationary kernels, 1e-10 for the
	// polynomial one, as in the original code).
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
	// the inputs' units. It is on unless NoStandardize is set (Defaults
	// sets it), as in gpc train, so that library and command line train
	// the same model: inputs of an extreme scale (×1e6, ×1e−6) would
	// otherwise leave the length-scale heuristics and the optimiser at a
	// constant classifier. Standardising data that are already
	// standardised is the identity up to round-off.
	Standardize bool `json:",omitempty"`
	// NoStandardize uses the inputs as given (gpc train --no-standardize;
	// the noisy-input paper's code, which the experiments reproduce).
	// FitStream needs it: it cannot compute the statistics in one pass.
	// A saved model records the outcome in Standardize, so the field is
	// not stored; Load derives it.
	NoStandardize bool `json:"-"`
	inputs.Config
}

// EPOptions are expectation propagation's settings (zero: defaults; the
// multi-latent defaults are the robust paper's, see ep.MultiConfig).
type EPOptions struct {
	// Damping δ ∈ (0, 1] of site updates in natural parameters (default 1;
	// multi-latent 0.5).
	Damping float64
	// Tol on the largest relative change of a site in a sweep (default
	// 1e-8; multi-latent 1e-3 during the evidence search, a tenth of it for
	// the final run).
	Tol float64
	// MaxSweeps per EP run (default 200; multi-latent 1000).
	MaxSweeps int
	// Parallel updates all sites from one posterior per sweep.
	Parallel bool
}

// TrainOptions are the inference engine's settings. A zero field takes
// the preset's training (Preset.Train), else the defaults of Defaults.
type TrainOptions struct {
	// Epochs caps the training: minibatch epochs, or L-BFGS iterations
	// for full-batch fits (the svi engine's lbfgs, ep, mf). With the
	// "converged" stopping rule a fit usually ends before it and reports
	// (Model.FitReport) when it does not.
	Epochs, Batch int
	// LR is Adam's learning rate or Adadelta's step rate.
	LR   float64
	Seed uint64
	// Optimizer is "adam" (default), "adadelta" (climin's: decay 0.9,
	// offset 1e-4, step rate LR) or "lbfgs" (full batch; Epochs bounds the
	// iterations), for the svi engine.
	Optimizer string
	// Stop is the stopping rule. "converged" (the default) ends a fit
	// once its objective has stopped improving by more than Tolerance,
	// Epochs being a cap; "budget" runs every epoch of a minibatch fit and
	// leaves L-BFGS to the solver's own tests (solvers.DefaultFuncTol,
	// DefaultGradTol) within its Epochs iterations, which is how fits were
	// run before the stopping rule existed and how the experiments run.
	Stop string `json:",omitempty"`
	// Tolerance is the converged rule's threshold on the objective's
	// relative improvement, which must stay below it for ten iterations
	// or epochs in a row: per L-BFGS iteration (0: DefaultLBFGSTol), or
	// per epoch of the minibatch loss averaged over
	// solvers.DefaultPlateauWindow epochs (0: DefaultEpochTol).
	Tolerance float64 `json:",omitempty"`
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
	if o.Kernel.Name == "" && o.Kernel.Factory == nil {
		o.Kernel.Name = p.Kernel
	}
	o.Kernel.Shared = o.Kernel.Shared || p.SharedKernel
	if o.Kernel.LatentNoise == 0 {
		o.Kernel.LatentNoise = p.LatentNoise
	}
	// Another engine may fit the preset's composition: whether it can is
	// the engine's to say (Engine.Supports, at New).
	if o.Inference == "" {
		o.Inference = p.Inference
	}
	o.Train = o.Train.fill(p.Train)
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

// Defaults fills zero fields with the original code's settings, but for
// training, which is to convergence (TrainOptions.Stop) within a cap of
// DefaultEpochs, and input standardisation, which is on.
func (o Options) Defaults() Options {
	if o.Kernel.Name == "" {
		o.Kernel.Name = kernels.Default
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
		o.Posterior.Jitter = defaultJitter(o.Kernel)
	}
	o.Inputs.Config = o.Inputs.Config.Defaults()
	if o.Inference == "" {
		o.Inference = "svi"
	}
	if !o.Inputs.NoStandardize {
		o.Inputs.Standardize = true
	}
	if o.Train.Epochs == 0 {
		o.Train.Epochs = DefaultEpochs
	}
	if o.Train.Stop == "" {
		o.Train.Stop = StopConverged
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

// Training defaults.
const (
	// DefaultEpochs caps a fit whose preset states no cap: far more than
	// a converged fit of a few thousand rows needs, so that the stopping
	// rule, not the cap, ends it.
	DefaultEpochs = 1000
	// DefaultLBFGSTol is the converged rule's relative decrease per
	// L-BFGS iteration, to hold for LBFGSPlateau iterations in a row:
	// a hundred more iterations would then gain less than 0.1%. The ELBO
	// of a sparse model with free inducing inputs creeps up by 1e-5 to
	// 1e-6 of itself per iteration for thousands of iterations after its
	// predictions have settled (the SVGP paper's banana, M = 100: test
	// NLL 0.2342 at 1000 iterations, 0.2340 at 3234 where the change
	// falls below 1e-7); scipy's L-BFGS-B tolerance (2.2e-9 per
	// iteration), which GPflow stops at, would run such fits to any cap.
	DefaultLBFGSTol = 1e-5
	// LBFGSPlateau is the iterations in a row the converged rule needs.
	LBFGSPlateau = 10
	// DefaultEpochTol is the converged rule's relative decrease of the
	// smoothed minibatch loss per epoch: below it, a hundred more epochs
	// would improve the ELBO by less than 1%.
	DefaultEpochTol = 1e-4
)

// Stopping rules (TrainOptions.Stop).
const (
	StopConverged = "converged"
	StopBudget    = "budget"
)

// fill returns t with its zero fields taken from d.
func (t TrainOptions) fill(d TrainOptions) TrainOptions {
	if t.Epochs == 0 {
		t.Epochs = d.Epochs
	}
	if t.Batch == 0 {
		t.Batch = d.Batch
	}
	if t.LR == 0 {
		t.LR = d.LR
	}
	if t.Optimizer == "" {
		t.Optimizer = d.Optimizer
	}
	if t.Stop == "" {
		t.Stop = d.Stop
	}
	if t.Tolerance == 0 {
		t.Tolerance = d.Tolerance
	}
	if t.FreezeHyper == 0 {
		t.FreezeHyper = d.FreezeHyper
	}
	if t.FreezeZ == 0 {
		t.FreezeZ = d.FreezeZ
	}
	if t.LocalAdam == "" {
		t.LocalAdam = d.LocalAdam
	}
	return t
}

// lbfgsTol is the relative decrease per iteration at which an L-BFGS fit
// stops: the converged rule's tolerance, or under the budget rule the
// solver's own (solvers.DefaultFuncTol, through 0).
func (t TrainOptions) lbfgsTol() float64 {
	switch {
	case t.Stop == StopBudget:
		return 0
	case t.Tolerance > 0:
		return t.Tolerance
	}
	return DefaultLBFGSTol
}

// epochTol is the minibatch plateau's tolerance (0: run every epoch).
func (t TrainOptions) epochTol() float64 {
	switch {
	case t.Stop == StopBudget:
		return 0
	case t.Tolerance > 0:
		return t.Tolerance
	}
	return DefaultEpochTol
}

// MaxDegree bounds a kernel's degree (Options.Kernel.Degree, gpc train
// --degree), as an expression's poly(n) is bounded: far above the papers' 9.
const MaxDegree = 1000

// Optimizers are the svi engine's optimisers.
var Optimizers = []string{"adam", "adadelta", "lbfgs"}

// PosteriorFamilies are the posterior families.
var PosteriorFamilies = []string{"sparse", "full"}

// Validate reports the first invalid setting of resolved options.
func (o Options) Validate() error {
	if err := checkKernel(o.Kernel); err != nil {
		return err
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
	case o.Kernel.Degree < 1 || o.Kernel.Degree > MaxDegree:
		return fmt.Errorf("models: polynomial degree %d (want 1 to %d)", o.Kernel.Degree, MaxDegree)
	case o.Kernel.LatentNoise < 0 || math.IsNaN(o.Kernel.LatentNoise) || math.IsInf(o.Kernel.LatentNoise, 0):
		return fmt.Errorf("models: latent noise %g (want a finite value ≥ 0)", o.Kernel.LatentNoise)
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
	case o.Train.Stop != StopConverged && o.Train.Stop != StopBudget:
		return fmt.Errorf("models: stopping rule %q (want %s or %s)", o.Train.Stop, StopConverged, StopBudget)
	case !(o.Train.Tolerance >= 0) || math.IsInf(o.Train.Tolerance, 0):
		return fmt.Errorf("models: tolerance %g (want a finite value ≥ 0)", o.Train.Tolerance)
	case o.Inputs.Standardize && o.Inputs.NoStandardize:
		return errors.New("models: Inputs.Standardize and Inputs.NoStandardize are both set")
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
