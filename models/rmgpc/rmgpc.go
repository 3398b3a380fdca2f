// Package rmgpc is robust multi-class Gaussian-process classification
// (RMGPC; Hernández-Lobato, Hernández-Lobato & Dupont, NIPS 2011) fitted by
// expectation propagation, and its non-robust baseline SMGPC (Kim &
// Ghahramani 2006).
//
// The model: l latent functions f_k ~ GP(0, c), one per class, sharing the
// kernel's hyper-parameters; a label follows y = argmax_k f_k(x) unless a
// per-instance indicator z_i = 1, in which case it is uniform over the l
// classes; z_i ~ Bernoulli(ρ), ρ ~ Beta(a0, b0). EP approximates the
// posterior by a product of one Gaussian per class, a Bernoulli over z and a
// Beta over ρ. The likelihood sites are updated in parallel and the z-prior
// sites sequentially, with damping, as in the paper; every update is in
// natural parameters (derived step by step in ep.go's comments). Two
// departures from the authors' code, neither changing the model: the ρ part
// of a z-prior site is projected onto the Beta family by KL (matching
// E[log ρ], E[log(1−ρ)]) rather than by its first two moments, which makes
// EP's fixed point a stationary point of the evidence and so its gradient
// exact (Config.MomentBeta restores the authors' choice); and the damped
// sweeps are Anderson-accelerated, which changes the path to the fixed
// point, not the fixed point (on Glass at γ = 4.5 and Tol 1e-4, about
// 280 sweeps instead of 1600).
// SMGPC is the same EP with ρ ≡ 0 and a learnt latent noise ϑ_k² per class.
//
// Fit maximises the EP evidence over the kernel hyper-parameters by L-BFGS,
// warm-starting EP from the previous sites at each evaluation. The gradient
// is that of the evidence's prior-dependent part written as graph code with
// the sites held fixed (exact at an EP fixed point), so any kernel of
// layers/kernels gets it without hand-written derivatives.
//
// A fitted Model predicts class probabilities by 1-D quadrature of the
// paper's eq. (19), reports P(z_i = 1 | y, X) for every training row (eq.
// 21), and saves itself as JSON.
package rmgpc

import (
	"fmt"
	"io"
	"math"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// Config controls the model, EP and the hyper-parameter search. Zero
// values select the defaults, which are the paper's where it gives one.
type Config struct {
	// A0 and B0 are the Beta(a0, b0) prior on the outlier rate ρ (defaults
	// 1 and 9: prior mean 0.1). Ignored by SMGPC.
	A0 float64 `json:"a0"`
	B0 float64 `json:"b0"`
	// SMGPC fixes ρ = 0 (no outlier indicators) and explains errors by a
	// latent Gaussian noise ϑ_k² added to each class's prior covariance,
	// learnt with the kernel: the paper's §3.1 baseline, RMGPC's limit as
	// B0 → ∞ (with ϑ_k² → 0), run as its own code path without z sites.
	SMGPC bool `json:"smgpc,omitempty"`
	// Noise is the initial ϑ_k² of every class under SMGPC (default 1, the
	// authors' code default).
	Noise float64 `json:"noise,omitempty"`

	// MomentBeta projects the ρ part of a z-prior site's tilted
	// distribution onto a Beta by matching its mean and second moment, as
	// the authors' code does, instead of EP's KL projection (matching
	// E[log ρ] and E[log(1−ρ)]). The fixed point then differs slightly and
	// the evidence gradient is no longer exact (it was 0.3–1.4% off finite
	// differences on a test problem); on Glass both give the same outliers
	// and evidences within 2e-4.
	MomentBeta bool `json:"moment_beta,omitempty"`

	// Damping ε ∈ (0, 1]: each site moves to ε·(its update) + (1−ε)·(its old
	// value) in natural parameters (default 0.5, the paper's). A sweep whose
	// parallel update makes a class posterior improper is redone with ε
	// halved.
	Damping float64 `json:"damping,omitempty"`
	// Tol is the convergence threshold on the largest change in a sweep of
	// a site parameter: a Gaussian natural parameter relative to 1 + |old|,
	// a Bernoulli parameter as a probability (logits of outlier sites grow
	// without bound as the fit sharpens while the probability saturates),
	// a Beta parameter relative to Q's a + b. Default 1e-3 (the authors'
	// threshold, on their measure). Fit's last EP run, whose posterior the
	// model keeps, uses Tol/10.
	Tol float64 `json:"tol,omitempty"`
	// MaxSweeps bounds the EP sweeps per run (default 1000, the authors').
	MaxSweeps int `json:"max_sweeps,omitempty"`
	// Acceleration is the memory of the Anderson acceleration of the EP
	// sweeps (default 10; negative for the paper's plain damped sweeps). It
	// changes the path to the fixed point, not the fixed point.
	Acceleration int `json:"acceleration,omitempty"`

	// Jitter is added to every prior covariance's diagonal (default 1e-3,
	// the authors' code; negative for none). The step likelihood is
	// invariant to scaling f, so the jitter relative to the kernel
	// amplitude is what sets the effective scale of RMGPC's prior.
	Jitter float64 `json:"jitter,omitempty"`
	// Lengthscale is the initial γ of the squared-exponential kernel
	// exp(−‖x−x'‖²/(2γ)) (γ is a squared length-scale, as in the paper's
	// eq. 22; default 1). With ARD every input gets its own γ_j.
	Lengthscale float64 `json:"lengthscale,omitempty"`
	ARD         bool    `json:"ard,omitempty"`
	// Variance is the kernel amplitude σ² (default 1). It is learnt only
	// with FitVariance: for RMGPC it is equivalent to rescaling the jitter,
	// and for SMGPC to rescaling the jitter and every ϑ_k², so the evidence
	// is nearly flat along it (the paper's kernel has none).
	Variance    float64 `json:"variance,omitempty"`
	FitVariance bool    `json:"fit_variance,omitempty"`
	// FixHyper skips the evidence maximisation: EP runs once at the
	// initial hyper-parameters.
	FixHyper bool `json:"fix_hyper,omitempty"`
	// Kernel replaces the squared-exponential kernel (its non-Fixed
	// parameters are learnt; Lengthscale, ARD, Variance and FitVariance are
	// then ignored). A model with a custom kernel cannot be saved.
	Kernel kernels.Kernel `json:"-"`

	// MaxIterations bounds the L-BFGS iterations (default 100).
	MaxIterations int `json:"max_iterations,omitempty"`
	// Progress, if non-nil, receives the evidence maximisation's progress
	// (solvers.LBFGSSettings.Progress): about a line a second.
	Progress io.Writer `json:"-"`
	// GradTol stops L-BFGS when every component of the gradient of the
	// evidence with respect to the log hyper-parameters is below it in
	// magnitude (default 1e-3: the evidence is a sum of O(n) terms and EP's
	// tolerance limits the gradient's accuracy).
	GradTol float64 `json:"grad_tol,omitempty"`

	// Quadrature is the number of Gauss–Hermite nodes of the predictive
	// integral (default 96). Where the classes' latent variances at a test
	// point differ by more than a factor 4, a composite Gauss–Legendre rule
	// replaces it (see argmaxProb), so rows sum to one within ~1e-9.
	Quadrature int `json:"quadrature,omitempty"`
	// NoStandardize leaves the inputs as given. By default Fit standardises
	// every column to zero mean and unit population standard deviation with
	// the training statistics (the paper's protocol) and Predict applies
	// the same transform, so a saved model takes raw inputs.
	NoStandardize bool `json:"no_standardize,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.A0 == 0 {
		c.A0 = 1
	}
	if c.B0 == 0 {
		c.B0 = 9
	}
	if c.Noise == 0 {
		c.Noise = 1
	}
	if c.Damping == 0 {
		c.Damping = 0.5
	}
	if c.Tol == 0 {
		c.Tol = 1e-3
	}
	if c.MaxSweeps == 0 {
		c.MaxSweeps = 1000
	}
	if c.Acceleration == 0 {
		c.Acceleration = 10
	}
	if c.Jitter == 0 {
		c.Jitter = 1e-3
	}
	if c.Jitter < 0 {
		c.Jitter = 0
	}
	if c.Lengthscale == 0 {
		c.Lengthscale = 1
	}
	if c.Variance == 0 {
		c.Variance = 1
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = 100
	}
	if c.GradTol == 0 {
		c.GradTol = 1e-3
	}
	if c.Quadrature == 0 {
		c.Quadrature = 96
	}
	return c
}

func (c Config) validate() error {
	switch {
	case !(c.A0 > 0) || !(c.B0 > 0) || math.IsInf(c.A0, 0) || math.IsInf(c.B0, 0):
		return fmt.Errorf("rmgpc: Beta prior (%g, %g) must have positive finite parameters", c.A0, c.B0)
	case !(c.Damping > 0 && c.Damping <= 1):
		return fmt.Errorf("rmgpc: damping %g outside (0, 1]", c.Damping)
	case !(c.Tol > 0):
		return fmt.Errorf("rmgpc: tolerance %g must be positive", c.Tol)
	case c.MaxSweeps < 0 || c.MaxIterations < 0:
		return fmt.Errorf("rmgpc: negative MaxSweeps (%d) or MaxIterations (%d)", c.MaxSweeps, c.MaxIterations)
	case !(c.Lengthscale > 0) || !(c.Variance > 0) || !(c.Noise > 0):
		return fmt.Errorf("rmgpc: initial lengthscale %g, variance %g and noise %g must be positive", c.Lengthscale, c.Variance, c.Noise)
	case c.Quadrature < 2:
		return fmt.Errorf("rmgpc: %d quadrature nodes", c.Quadrature)
	}
	return nil
}
