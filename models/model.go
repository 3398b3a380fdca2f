package models

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/layers/mlp"
	"github.com/gpc-dev/gpc/layers/variational"
	"github.com/gpc-dev/gpc/solvers"
)

// Model is a trained or untrained classifier. Build one with New, train it
// with Fit, then Predict; Save and Load persist it.
type Model struct {
	Opts Options
	// D is the input dimension, C the number of classes, N the training size.
	D, C, N int

	lik     likelihoods.Likelihood
	kernels []kernels.Kernel
	post    *variational.Posterior
	// logNoise is the learned per-dimension log input-noise variance.
	logNoise *layers.Param
	// q(x_i) of NIMGP: means and log-variances of every training point.
	qxMean, qxLogVar []float64
	enc              *mlp.Encoder
	// trainNoise holds the given per-point variances of the training rows.
	trainNoise []float64
	// fit is the training state Fit leaves for Continue (nil before Fit
	// and after Load).
	fit *trainState
}

// New returns an untrained model; its parameters are created from the data
// by Fit (length-scales and inducing points depend on the training set).
func New(opts Options) (*Model, error) {
	opts = opts.Defaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Model{Opts: opts}, nil
}

// Likelihood returns the observation model.
func (m *Model) Likelihood() likelihoods.Likelihood { return m.lik }

// params returns every graph parameter of the model (not q(x_i), which is
// updated row by row).
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
	add(m.logNoise)
	if m.enc != nil {
		add(m.enc.Mean.Params()...)
		add(m.enc.LogVar.Params()...)
	}
	return ps
}

func (m *Model) newLikelihood() likelihoods.Likelihood {
	if m.Opts.Likelihood != nil {
		return m.Opts.Likelihood
	}
	return &likelihoods.RobustMax{Epsilon: m.Opts.Epsilon, Points: m.Opts.Quadrature}
}

// initialize creates the parameters from the training data, following the
// original code: ℓ = median pairwise distance of 1000 rows drawn with
// replacement (SE), amplitude e, σ₀² = e⁻²⁰; inducing points drawn per class
// with replacement from the training rows; q(u) at the prior; q(x_i) means at
// x̃_i with variance QXInitVar.
func (m *Model) initialize(train *datasets.Dataset, warn io.Writer) error {
	o := m.Opts
	m.D, m.C, m.N = train.D, train.C, train.N
	if m.C < 2 {
		return fmt.Errorf("models: training data has %d class; need at least 2", m.C)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6770))
	m.lik = m.newLikelihood()
	latent := m.lik.Latent(m.C)
	init := KernelInit{Variance: math.E, Noise: math.Exp(-20)}
	if o.Kernel == "poly" {
		init = KernelInit{Lengthscale: meanSquaredNorm(train, rng), Variance: 1.0 / 512, Noise: 1}
	} else {
		init.Lengthscale = medianDistance(train, rng)
	}
	m.kernels = make([]kernels.Kernel, latent)
	for c := range m.kernels {
		k, err := m.makeKernel(fmt.Sprintf("k%d", c), init)
		if err != nil {
			return err
		}
		m.kernels[c] = k
	}
	M := min(o.Inducing, m.N)
	nz := latent
	if o.SharedZ {
		nz = 1
	}
	z := make([][]float64, nz)
	for c := range z {
		z[c] = make([]float64, 0, M*m.D)
		for j := 0; j < M; j++ {
			z[c] = append(z[c], train.Row(rng.IntN(m.N))...)
		}
	}
	// q(u) starts at the prior, which needs chol(K_ZZ): a failure there gets
	// the training loop's remedy, a bounded jitter increase with a warning.
	jitter := o.Jitter
	for tries := 0; ; tries++ {
		post, err := variational.New("q", variational.Config{Latent: latent, M: M, D: m.D, Whitened: o.Whitened, SharedZ: o.SharedZ, Jitter: jitter}, m.kernels, z)
		if err == nil {
			m.post = post
			break
		}
		if !errors.Is(err, graph.ErrNotPositiveDefinite) || tries == solvers.DefaultMaxJitterIncreases {
			return err
		}
		next := math.Max(jitter*solvers.JitterGrowth, solvers.JitterFloor)
		fmt.Fprintf(warn, "models: warning: K_ZZ is not positive definite at initialisation; jitter raised to %g\n", next)
		jitter = next
	}
	if o.Kind.usesNoise() && o.LearnNoise {
		m.logNoise = layers.NewParam("noise/logvar", tensor.Shape{m.D}, o.NoiseInit, layers.Exp)
	}
	if o.Kind.usesNoise() && !o.LearnNoise {
		m.trainNoise = givenNoise(train, o.NoiseVar)
		if err := checkGivenNoise(o.Kind, m.trainNoise, m.D); err != nil {
			return err
		}
	}
	switch o.Kind {
	case NIMGP:
		m.qxMean = slices.Clone(train.X)
		m.qxLogVar = make([]float64, len(train.X))
		for i := range m.qxLogVar {
			m.qxLogVar[i] = math.Log(o.QXInitVar)
		}
	case NIMGPNN:
		enc, err := mlp.NewEncoder("enc", mlp.EncoderConfig{D: m.D, C: m.C, Hidden: o.Hidden, Residual: o.Residual, Seed: o.Seed ^ 0x5eed})
		if err != nil {
			return err
		}
		m.enc = enc
	}
	return nil
}

func (m *Model) makeKernel(name string, init KernelInit) (kernels.Kernel, error) {
	o := m.Opts
	if o.KernelFactory != nil {
		return o.KernelFactory(name, m.D, init), nil
	}
	switch o.Kernel {
	case "se":
		return kernels.NewSE(name, m.D, init.Lengthscale, init.Variance, init.Noise), nil
	case "poly":
		return kernels.NewPolynomial(name, o.Degree, m.D, init.Lengthscale, init.Variance, init.Noise), nil
	case "matern32":
		return kernels.NewMatern(name, 1.5, m.D, init.Lengthscale, init.Variance, init.Noise)
	case "matern52":
		return kernels.NewMatern(name, 2.5, m.D, init.Lengthscale, init.Variance, init.Noise)
	case "linear":
		return kernels.NewLinear(name, m.D, init.Lengthscale), nil
	}
	return nil, fmt.Errorf("models: unknown kernel %q", o.Kernel)
}

// givenNoise returns the per-point variances: the data set's, or v everywhere.
func givenNoise(ds *datasets.Dataset, v float64) []float64 {
	if ds.Noise != nil {
		return slices.Clone(ds.Noise)
	}
	out := make([]float64, ds.N*ds.D)
	for i := range out {
		out[i] = v
	}
	return out
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

// checkGivenNoise rejects input-noise variances a model cannot use: NIMGP's
// E log p(x̃|x) divides by them, so they must be positive; NIMGP_FO only
// needs them non-negative (zero means no Δ).
func checkGivenNoise(kind Kind, v []float64, d int) error {
	for i, x := range v {
		bad := math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (x == 0 && kind.latentInputs())
		if bad {
			return fmt.Errorf("models: %s needs positive input-noise variances, got %v at row %d, column %d (set Options.NoiseVar, Dataset.Noise or LearnNoise)", kind, x, i/d, i%d+1)
		}
	}
	return nil
}
