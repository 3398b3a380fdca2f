package models

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/datasets/cluster"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/layers/variational"
	"github.com/gpc-dev/gpc/solvers"
)

// Model is a trained or untrained classifier composed of parts. Build one
// with New, train it with Fit, then Predict; Save and Load persist it.
type Model struct {
	// Opts are the resolved options (the preset's parts filled in).
	Opts Options
	// D is the input dimension, C the number of classes, N the training size.
	D, C, N int

	lik    likelihoods.Likelihood
	engine Engine
	// engineState is what the engine's fit left beyond the parameters
	// (Stateful engines), nil for none.
	engineState any
	kernels     []kernels.Kernel
	post        *variational.Posterior
	inputs      inputs.Model
	// meanSamples are draws of q(u)'s mean sharing its covariance: the
	// prediction averages over them (the mean-field model's option (i)).
	meanSamples [][]float64
	// fit is the training state Fit leaves for Continue (nil before Fit
	// and after Load).
	fit *trainState
	// scaler is the input standardisation Fit computed
	// (Options.Inputs.Standardize), nil when the inputs are used as given.
	scaler *datasets.Scaler
}

// New returns an untrained model; its parameters are created from the data
// by Fit (length-scales and inducing points depend on the training set).
func New(opts Options) (*Model, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	opts = opts.Defaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Opts: opts}
	if m.lik, err = m.newLikelihood(); err != nil {
		return nil, err
	}
	if m.inputs, err = inputs.New(opts.Inputs.Model, opts.Inputs.Config); err != nil {
		return nil, err
	}
	if m.engine, err = engineFor(opts.Inference); err != nil {
		return nil, err
	}
	if err := m.engine.Supports(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Name is the model's preset name, or "custom" for a composition of parts.
func (m *Model) Name() string {
	if m.Opts.Model == "" {
		return "custom"
	}
	return m.Opts.Model
}

// Likelihood returns the observation model.
func (m *Model) Likelihood() likelihoods.Likelihood { return m.lik }

// Inputs returns the input model.
func (m *Model) Inputs() inputs.Model { return m.inputs }

// InputNoise returns the input-noise part, nil for a model without one.
func (m *Model) InputNoise() *inputs.Noise { return m.inputs.Noise() }

// UsesGivenNoise reports whether the model reads input-noise variances
// given with the data (training and test rows), rather than learning them
// or having none.
func (m *Model) UsesGivenNoise() bool {
	n := m.inputs.Noise()
	return n != nil && !n.Learn
}

// CheckClasses reports whether the likelihood is defined for c classes.
func (m *Model) CheckClasses(c int) error {
	if c < 2 {
		return fmt.Errorf("models: training data has %d class; need at least 2", c)
	}
	if cc, ok := m.lik.(likelihoods.ClassCounter); ok && cc.Classes() != c {
		return fmt.Errorf("models: the %s likelihood is for %d classes, but the data have %d; use a multi-class likelihood such as robustmax", m.Opts.Likelihood.Name, cc.Classes(), c)
	}
	return nil
}

// params returns every global parameter of the model (not the per-row
// local ones, which the engine updates row by row), Fixed ones included.
func (m *Model) params() []*layers.Param {
	var ps []*layers.Param
	seen := map[*layers.Param]bool{}
	add := func(qs ...*layers.Param) {
		for _, q := range qs {
			if q != nil && !seen[q] {
				seen[q] = true
				ps = append(ps, q)
			}
		}
	}
	for _, k := range m.kernels {
		add(k.Params()...)
	}
	add(m.post.Params()...)
	add(m.lik.Params()...)
	add(m.inputs.Params()...)
	return ps
}

// trainable returns the non-fixed global parameters.
func (m *Model) trainable() []*layers.Param {
	return slices.DeleteFunc(m.params(), func(p *layers.Param) bool { return p.Fixed })
}

func (m *Model) newLikelihood() (likelihoods.Likelihood, error) {
	o := m.Opts.Likelihood
	if o.Custom != nil {
		return o.Custom, nil
	}
	return likelihoods.New(o.Name, likelihoods.Config{Epsilon: o.Epsilon, Points: o.Quadrature, Delta: o.Delta, FixDelta: o.FixDelta, DeltaPrior: o.DeltaPrior, Samples: o.Samples})
}

// inducing returns M for a training set of n rows.
func (m *Model) inducing(n int) int {
	if m.Opts.Posterior.Family == "full" {
		return n
	}
	return min(m.Opts.Posterior.Inducing, n)
}

// initialize creates the parameters from the training data, following the
// original code: ℓ = median pairwise distance of 1000 rows drawn with
// replacement (SE), amplitude e, σ₀² = e⁻²⁰; inducing points drawn per
// latent function with replacement from the training rows (the "full"
// family: Z = X, held fixed); q(u) at the prior; the input model's own.
func (m *Model) initialize(train *datasets.Dataset, warn io.Writer) error {
	o := m.Opts
	m.D, m.C, m.N = train.D, train.C, train.N
	if err := m.CheckClasses(m.C); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(o.Train.Seed, 0x6770))
	latent := m.lik.Latent(m.C)
	init := KernelInit{Variance: math.E, Noise: math.Exp(-20)}
	if o.Kernel.Name == "poly" {
		init = KernelInit{Lengthscale: meanSquaredNorm(train, rng), Variance: 1.0 / 512, Noise: 1}
	} else {
		init.Lengthscale = medianDistance(train, rng)
	}
	if o.Kernel.Init != nil {
		init = *o.Kernel.Init
	}
	if err := m.makeKernels(latent, init); err != nil {
		return err
	}
	M := m.inducing(m.N)
	var z [][]float64
	switch {
	case o.Posterior.Family == "full":
		z = [][]float64{slices.Clone(train.X)}
	case o.Posterior.ZInit == "kmeans":
		c, err := cluster.KMeans(train.X, m.N, m.D, M, cluster.Config{Seed: o.Train.Seed, Sample: max(20000, M)})
		if err != nil {
			return fmt.Errorf("models: k-means inducing inputs: %w", err)
		}
		nz := latent
		if o.Posterior.SharedZ {
			nz = 1
		}
		for range nz {
			z = append(z, slices.Clone(c))
		}
	default:
		nz := latent
		if o.Posterior.SharedZ {
			nz = 1
		}
		z = make([][]float64, nz)
		for c := range z {
			z[c] = make([]float64, 0, M*m.D)
			for j := 0; j < M; j++ {
				z[c] = append(z[c], train.Row(rng.IntN(m.N))...)
			}
		}
	}
	// q(u) starts at the prior, which needs chol(K_ZZ): a failure there gets
	// the training loop's remedy, the same bounded jitter ladder.
	jitter := o.Posterior.Jitter
	for tries := 0; ; tries++ {
		post, err := variational.New("q", m.postConfig(latent, M, jitter), m.kernels, z)
		if err == nil {
			m.post = post
			break
		}
		if !errors.Is(err, graph.ErrNotPositiveDefinite) {
			return err
		}
		if tries == solvers.DefaultMaxJitterIncreases {
			return &NotPositiveDefiniteError{Stage: "training", Jitter: jitter, Raised: jitter > o.Posterior.Jitter, Err: fmt.Errorf("K_ZZ at initialisation: %w", err)}
		}
		next, ok := solvers.NextJitter(jitter, 0)
		if !ok {
			return &NotPositiveDefiniteError{Stage: "training", Jitter: jitter, Raised: jitter > o.Posterior.Jitter, Err: fmt.Errorf("K_ZZ at initialisation: %w", err)}
		}
		fmt.Fprintf(warn, "models: warning: K_ZZ is not positive definite at initialisation; jitter raised to %g\n", next)
		jitter = next
	}
	return m.inputs.Init(m.D, m.C, train, o.Train.Seed)
}

func (m *Model) postConfig(latent, M int, jitter float64) variational.Config {
	p := m.Opts.Posterior
	full := p.Family == "full"
	return variational.Config{Latent: latent, M: M, D: m.D, Whitened: p.Whitened, SharedZ: p.SharedZ || full, FixedZ: full, Jitter: jitter}
}

// allocate creates the parameters' structure for sizes d, c and m without
// data, for Load to overwrite with stored values.
func (m *Model) allocate(d, c, n, M int) error {
	m.D, m.C, m.N = d, c, n
	if err := m.CheckClasses(c); err != nil {
		return err
	}
	latent := m.lik.Latent(c)
	init := KernelInit{Lengthscale: 1, Variance: 1, Noise: 1}
	if i := m.Opts.Kernel.Init; i != nil {
		// The stored parameters are the ones Init creates (no white noise
		// when its σ₀² is zero).
		init = *i
	}
	if err := m.makeKernels(latent, init); err != nil {
		return err
	}
	post, err := variational.New("q", m.postConfig(latent, M, m.Opts.Posterior.Jitter), m.kernels, nil)
	if err != nil {
		return err
	}
	m.post = post
	return m.inputs.Init(d, c, nil, m.Opts.Train.Seed)
}

func (m *Model) makeKernels(latent int, init KernelInit) error {
	m.kernels = make([]kernels.Kernel, latent)
	for c := range m.kernels {
		if c > 0 && m.Opts.Kernel.Shared {
			m.kernels[c] = m.kernels[0]
			continue
		}
		k, err := m.makeKernel(fmt.Sprintf("k%d", c), init)
		if err != nil {
			return err
		}
		if m.Opts.Kernel.FixVariance {
			a, ok := k.(interface{ Amplitude() *layers.Param })
			if !ok {
				return fmt.Errorf("models: the %s kernel has no amplitude to hold fixed", m.Opts.Kernel.Name)
			}
			a.Amplitude().Fixed = true
		}
		m.kernels[c] = k
	}
	return nil
}

func (m *Model) makeKernel(name string, init KernelInit) (kernels.Kernel, error) {
	o := m.Opts.Kernel
	if o.Factory != nil {
		return o.Factory(name, m.D, init), nil
	}
	switch o.Name {
	case "se":
		return kernels.NewSE(name, m.D, init.Lengthscale, init.Variance, init.Noise), nil
	case "se-iso":
		return kernels.NewSEIsotropic(name, m.D, init.Lengthscale, init.Variance, init.Noise), nil
	case "poly":
		return kernels.NewPolynomial(name, o.Degree, m.D, init.Lengthscale, init.Variance, init.Noise), nil
	case "matern32":
		return kernels.NewMatern(name, 1.5, m.D, init.Lengthscale, init.Variance, init.Noise)
	case "matern52":
		return kernels.NewMatern(name, 2.5, m.D, init.Lengthscale, init.Variance, init.Noise)
	case "linear":
		return kernels.NewLinear(name, m.D, init.Lengthscale), nil
	}
	return nil, fmt.Errorf("models: unknown kernel %q", o.Name)
}

// medianDistance is √(median squared distance) between pairs of 1000 rows
// drawn with replacement (the original code's ℓ, which divides d²).
func medianDistance(ds *datasets.Dataset, rng *rand.Rand) float64 {
	n := 1000
	idx := make([]int, n)
	for i := range idx {
		idx[i] = rng.IntN(ds.N)
	}
	var d2 []float64
	for i := 0; i < n; i++ {
		a := ds.Row(idx[i])
		for j := i + 1; j < n; j++ {
			b := ds.Row(idx[j])
			var s float64
			for t := range a {
				s += (a[t] - b[t]) * (a[t] - b[t])
			}
			d2 = append(d2, s)
		}
	}
	slices.Sort(d2)
	med := d2[len(d2)/2]
	if len(d2)%2 == 0 {
		med = 0.5 * (d2[len(d2)/2-1] + d2[len(d2)/2])
	}
	if med <= 0 {
		return 1
	}
	return math.Sqrt(med)
}

// meanSquaredNorm is the mean ‖x‖² of 1000 random rows (the polynomial
// kernel's initial ℓ in the original MNIST code).
func meanSquaredNorm(ds *datasets.Dataset, rng *rand.Rand) float64 {
	var s float64
	for i := 0; i < 1000; i++ {
		for _, v := range ds.Row(rng.IntN(ds.N)) {
			s += v * v
		}
	}
	if s <= 0 {
		return 1
	}
	return s / 1000
}

// Kernels returns the latent functions' kernels (one per latent function;
// shared kernels repeat), for engines and inspection. Nil before Fit/Load.
func (m *Model) Kernels() []kernels.Kernel { return m.kernels }

// Posterior returns the model's posterior over the inducing outputs, q(u),
// through which every engine's fit predicts: an engine other than svi sets
// it from its own approximation (EP's Gaussian, Laplace's, MCMC's samples
// by SetMeanSamples). Nil before Fit/Load.
func (m *Model) Posterior() *variational.Posterior { return m.post }

// TrainableParams returns the model's global trainable parameters (kernels,
// q(u), likelihood, input model; not per-row local ones).
func (m *Model) TrainableParams() []*layers.Param { return m.trainable() }

// SetMeanSamples makes predictions average over draws of q(u)'s mean
// sharing its covariance (one slice of Latent·M values per draw, latent
// functions in order): the mean-field model's option (i), and a sampling
// engine's posterior with the covariance at zero. Save stores them. Nil
// returns to the single mean.
func (m *Model) SetMeanSamples(s [][]float64) error {
	if m.post == nil {
		return errors.New("models: SetMeanSamples before the model is fitted")
	}
	want := m.post.Latent * m.post.M
	for i, v := range s {
		if len(v) != want {
			return fmt.Errorf("models: mean sample %d has %d values, want %d (latent functions × inducing points)", i, len(v), want)
		}
	}
	m.meanSamples = s
	return nil
}
