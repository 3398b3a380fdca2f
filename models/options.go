// Package models implements the multi-class GP classifiers of "Multi-class
// Gaussian process classification with noisy inputs" as Gorgonia graphs:
//
//   - MGP: sparse variational multi-class GP (noise-unaware baseline);
//   - NIMGP: noiseless inputs x_i as latent variables with q(x_i) per point;
//   - NIMGP_NN: q(x_i) amortised by two MLPs of (x̃_i, y_i);
//   - NIMGP_FO: first-order model, whose marginal variances gain
//     Δ = ∂μ_c(x̃)ᵀ V ∂μ_c(x̃) with ∂μ_c from automatic differentiation.
//
// All four share the variational posterior over inducing outputs, the
// likelihood and the training loop; each file named after a model holds
// what is specific to it. Every ELBO is differentiated automatically with
// graph.Grad (for NIMGP_FO through the gradient inside Δ).
package models

import (
	"fmt"

	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// Kind names a model.
type Kind string

// The four models.
const (
	MGP     Kind = "mgp"
	NIMGP   Kind = "nimgp"
	NIMGPNN Kind = "nimgp-nn"
	NIMGPFO Kind = "nimgp-fo"
)

// Kinds lists the models in the paper's order.
var Kinds = []Kind{MGP, NIMGP, NIMGPNN, NIMGPFO}

// usesNoise reports whether the model has an input-noise model.
func (k Kind) usesNoise() bool { return k != MGP }

// latentInputs reports whether the model has q(x_i).
func (k Kind) latentInputs() bool { return k == NIMGP || k == NIMGPNN }

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

// Options configures a model. The zero value of each field means the
// original code's default (see Defaults).
type Options struct {
	Kind Kind
	// Inducing is M, the inducing points per class (capped at N).
	Inducing int
	// Kernel is "se" (default), "poly", "matern32", "matern52" or "linear";
	// KernelFactory, if set, overrides it.
	Kernel        string
	Degree        int           // polynomial degree (default 9)
	KernelFactory KernelFactory `json:"-"`
	// Likelihood defaults to robust-max with ε = 1e-3 and 20 quadrature points.
	Likelihood likelihoods.Likelihood `json:"-"`
	Epsilon    float64
	Quadrature int
	Whitened   bool
	SharedZ    bool
	// Jitter on K_ZZ and k(x,x): 1e-3 for stationary kernels, 1e-10 for the
	// polynomial one, as in the original code.
	Jitter float64
	// Input noise. LearnNoise learns one log-variance per dimension shared by
	// all points, starting at NoiseInit. Otherwise the variances come per
	// point from the training data set (Dataset.Noise) or, if it has none,
	// NoiseVar for every entry.
	LearnNoise bool
	NoiseInit  float64
	NoiseVar   float64
	// PriorVar is s in p(x_i) = N(0, s·I) (default 1000).
	PriorVar float64
	// QXInitVar is the initial variance of q(x_i) for NIMGP (default 1e-5).
	QXInitVar float64
	// Hidden sizes of the NIMGP_NN networks (default {50}); Residual starts
	// the mean at x̃ and the log-variance near −10 (the "soft init").
	Hidden   []int
	Residual bool
	// TestSamples is S, the Monte Carlo samples of x* for NIMGP/NIMGP_NN
	// predictions (default 500, as the original code).
	TestSamples int
	// Training.
	Epochs, Batch int
	LR            float64
	Seed          uint64
}

// Defaults fills zero fields with the original code's settings.
func (o Options) Defaults() Options {
	if o.Kind == "" {
		o.Kind = MGP
	}
	if o.Inducing == 0 {
		o.Inducing = 100
	}
	if o.Kernel == "" {
		o.Kernel = "se"
	}
	if o.Degree == 0 {
		o.Degree = 9
	}
	if o.Epsilon == 0 {
		o.Epsilon = 1e-3
	}
	if o.Quadrature == 0 {
		o.Quadrature = 20
	}
	if o.Jitter == 0 {
		o.Jitter = 1e-3
		if o.Kernel == "poly" {
			o.Jitter = 1e-10
		}
	}
	if o.NoiseInit == 0 {
		o.NoiseInit = 0.1
	}
	if o.PriorVar == 0 {
		o.PriorVar = 1000
	}
	if o.QXInitVar == 0 {
		o.QXInitVar = 1e-5
	}
	if o.Hidden == nil {
		o.Hidden = []int{50}
	}
	if o.TestSamples == 0 {
		o.TestSamples = 500
	}
	if o.Epochs == 0 {
		o.Epochs = 100
	}
	if o.Batch == 0 {
		o.Batch = 50
	}
	if o.LR == 0 {
		o.LR = 0.01
	}
	return o
}

// Validate reports the first invalid setting.
func (o Options) Validate() error {
	switch o.Kind {
	case MGP, NIMGP, NIMGPNN, NIMGPFO:
	default:
		return fmt.Errorf("models: unknown model %q (want mgp, nimgp, nimgp-nn or nimgp-fo)", o.Kind)
	}
	switch o.Kernel {
	case "se", "poly", "matern32", "matern52", "linear":
	default:
		if o.KernelFactory == nil {
			return fmt.Errorf("models: unknown kernel %q (want se, poly, matern32, matern52 or linear)", o.Kernel)
		}
	}
	switch {
	case o.Inducing < 1:
		return fmt.Errorf("models: %d inducing points", o.Inducing)
	case o.Epsilon <= 0 || o.Epsilon >= 1:
		return fmt.Errorf("models: label-flip probability %g outside (0, 1)", o.Epsilon)
	case o.Quadrature < 1:
		return fmt.Errorf("models: %d quadrature points", o.Quadrature)
	case o.Jitter < 0:
		return fmt.Errorf("models: negative jitter %g", o.Jitter)
	case o.NoiseInit <= 0 || o.NoiseVar < 0:
		return fmt.Errorf("models: noise variances must be positive (init %g, given %g)", o.NoiseInit, o.NoiseVar)
	case o.PriorVar <= 0 || o.QXInitVar <= 0:
		return fmt.Errorf("models: prior variance %g and q(x) variance %g must be positive", o.PriorVar, o.QXInitVar)
	case o.TestSamples < 1:
		return fmt.Errorf("models: %d test samples", o.TestSamples)
	case o.Epochs < 1 || o.Batch < 1:
		return fmt.Errorf("models: %d epochs of batch %d", o.Epochs, o.Batch)
	case o.LR <= 0:
		return fmt.Errorf("models: learning rate %g", o.LR)
	}
	for _, h := range o.Hidden {
		if h < 1 {
			return fmt.Errorf("models: hidden layer of %d units", h)
		}
	}
	return nil
}
