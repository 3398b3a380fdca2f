// Package ep is expectation propagation for Gaussian-process models whose
// likelihood factorises over latent values: Gaussian site approximations
// t̃_i(f_i) = Z̃_i N(f_i | ν̃_i/τ̃_i, 1/τ̃_i) in natural parameters, updated
// against a dense prior covariance (Rasmussen & Williams, Algorithms 3.5
// and 3.6), sequentially with rank-one updates or in parallel, with
// damping, skip rules for non-positive cavities, convergence on the site
// parameters, and the EP approximation to the log marginal likelihood
// (the evidence). Sites persist between runs so that hyper-parameter
// optimisation warm-starts EP. The evidence's gradient with respect to the
// prior at the fixed point is Evidence's graph (see evidence.go).
package ep

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Tilted is what EP needs of a likelihood: the normaliser and moments of
// the tilted distribution p(y | f) N(f | m, v) / Z for one latent value.
type Tilted interface {
	TiltedMoments(y, m, v float64) (logZ, mean, variance float64)
}

// Config controls a run.
type Config struct {
	// Damping δ ∈ (0, 1]: a site moves to δ·(its update) + (1−δ)·(its old
	// value), in natural parameters (1: no damping, R&W's probit EP).
	Damping float64
	// Tol is the convergence threshold on the largest change of a site's
	// natural parameters in a sweep, relative to 1 + |old| (default 1e-8).
	Tol float64
	// MaxSweeps bounds the sweeps (default 200); MinSweeps forces at least
	// that many (default 1).
	MaxSweeps, MinSweeps int
	// Parallel updates every site from the same posterior, then refactorises
	// (O(N³) per sweep with no rank-one updates); the default is R&W's
	// sequential schedule.
	Parallel bool
	// Context, when set, stops a run between site updates with an error
	// wrapping its error: a run is one evaluation of the evidence for an
	// optimiser, and a sweep over thousands of sites takes seconds, too
	// long to wait for after SIGTERM.
	Context context.Context
}

// stopEvery is how many site updates pass between checks of the context:
// each costs O(N) to O(N²), far more than a check.
const stopEvery = 16

// stopped returns the context's error, if the run has one that ended.
func (c Config) stopped() error {
	if c.Context == nil {
		return nil
	}
	if err := c.Context.Err(); err != nil {
		return fmt.Errorf("ep: stopped: %w", err)
	}
	return nil

}

// cancelled returns the error of the run's context, if it has one and it
// is done.
func (c Config) cancelled() error {
	if c.Context == nil {
		return nil
	}
	return c.Context.Err()
}

func (c Config) defaults() Config {
	if c.Damping == 0 {
		c.Damping = 1
	}
	if c.Tol == 0 {
		c.Tol = 1e-8
	}
	if c.MaxSweeps == 0 {
		c.MaxSweeps = 200
	}
	if c.MinSweeps == 0 {
		c.MinSweeps = 1
	}
	return c
}

// Sites are the site natural parameters, one per latent value.
type Sites struct {
	Tau, Nu []float64
}

// NewSites returns n sites at zero (the prior).
func NewSites(n int) *Sites { return &Sites{Tau: make([]float64, n), Nu: make([]float64, n)} }

// Result is a converged (or stopped) EP run.
type Result struct {
	// Mean and Cov are the posterior N(μ, Σ) over the latent values,
	// Σ = (K⁻¹ + S̃)⁻¹, μ = Σν̃.
	Mean []float64
	Cov  *mat.SymDense
	// Var is the diagonal of Σ (RunFITC fills only this, not Cov).
	Var []float64
	// LogZ is the EP evidence log Z_EP.
	LogZ float64
	// Sweeps run; Converged says whether Tol was met; Skipped counts site
	// updates skipped for a non-positive cavity or a non-finite update.
	Sweeps    int
	Converged bool
	Skipped   int
}

// ErrNotConverged is wrapped by Run's error when MaxSweeps pass without
// convergence; the Result is still the last one.
var ErrNotConverged = errors.New("ep: not converged")

// Run runs EP on the prior N(0, K) with targets y and likelihood lik,
// starting from (and updating) sites.
func Run(K *mat.SymDense, y []float64, lik Tilted, sites *Sites, cfg Config) (*Result, error) {
	cfg = cfg.defaults()
	n := K.SymmetricDim()
	switch {
	case len(y) != n || len(sites.Tau) != n || len(sites.Nu) != n:
		return nil, fmt.Errorf("ep: %d targets and %d/%d sites for a %d×%d prior", len(y), len(sites.Tau), len(sites.Nu), n, n)
	case !(cfg.Damping > 0 && cfg.Damping <= 1):
		return nil, fmt.Errorf("ep: damping %v outside (0, 1]", cfg.Damping)
	}
	mu, sigma, L, err := posterior(K, sites)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	si := make([]float64, n)
	for sweep := 1; sweep <= cfg.MaxSweeps; sweep++ {
		if err := cfg.cancelled(); err != nil {
			return nil, err
		}
		var change float64
		oldTau, oldNu := append([]float64(nil), sites.Tau...), append([]float64(nil), sites.Nu...)
		for i := 0; i < n; i++ {
			if i%stopEvery == 0 {
				if err := cfg.stopped(); err != nil {
					return nil, err
				}
			}
			sii := sigma.At(i, i)
			tauC := 1/sii - oldTauOr(sites, oldTau, i, cfg.Parallel)
			nuC := mu[i]/sii - oldNuOr(sites, oldNu, i, cfg.Parallel)
			if !(tauC > 0) {
				res.Skipped++
				continue
			}
			_, m, v := lik.TiltedMoments(y[i], nuC/tauC, 1/tauC)
			tauNew := 1/v - tauC
			nuNew := m/v - nuC
			if math.IsNaN(tauNew) || math.IsInf(tauNew, 0) || math.IsNaN(nuNew) || math.IsInf(nuNew, 0) {
				res.Skipped++
				continue
			}
			d := cfg.Damping
			tauNew = d*tauNew + (1-d)*sites.Tau[i]
			nuNew = d*nuNew + (1-d)*sites.Nu[i]
			if tauNew < 0 {
				// A negative site precision makes the posterior improper for
				// some priors; keep it at zero instead (GPML does likewise).
				tauNew = 0
			}
			change = math.Max(change, math.Abs(tauNew-sites.Tau[i])/(1+math.Abs(sites.Tau[i])))
			change = math.Max(change, math.Abs(nuNew-sites.Nu[i])/(1+math.Abs(sites.Nu[i])))
			dTau, dNu := tauNew-sites.Tau[i], nuNew-sites.Nu[i]
			sites.Tau[i], sites.Nu[i] = tauNew, nuNew
			if cfg.Parallel || dTau == 0 && dNu == 0 {
				continue
			}
			// Rank-one update of Σ for the change of site i's precision,
			// then μ = Σν̃ (R&W Algorithm 3.5, lines 8–9).
			// On the raw upper triangle: accessors cost more than the
			// arithmetic in this O(N²)-per-site loop.
			raw := sigma.RawSymmetric()
			if raw.Uplo != blas.Upper {
				return nil, errors.New("ep: internal error: Σ is not stored upper")
			}
			data, stride := raw.Data, raw.Stride
			for k := 0; k < i; k++ {
				si[k] = data[k*stride+i]
			}
			copy(si[i:], data[i*stride+i:i*stride+n])
			c := dTau / (1 + dTau*sii)
			// Σ −= c·s sᵀ on the upper triangle, a row at a time through
			// Daxpy: gonum's Dsyr loops in scalar Go, its Daxpy in assembly,
			// and these rows are the sweep's O(N²) per site.
			impl := blas64.Implementation()
			for a := 0; a < n; a++ {
				if ca := -c * si[a]; ca != 0 {
					impl.Daxpy(n-a, ca, si[a:], 1, data[a*stride+a:a*stride+n], 1)
				}
			}
			// μ = Σν̃ in O(N): with s the old column i of Σ,
			// Σ'ν̃' = μ + Δν̃·s − c·s·(sᵀν̃'), and sᵀν̃' = sᵀν̃ + Δν̃·s_i where
			// sᵀν̃ is the old μ_i.
			stn := mu[i] + dNu*si[i]
			for a := range mu {
				mu[a] += si[a] * (dNu - c*stn)
			}
		}
		// Refactorise from the sites: the rank-one updates accumulate
		// round-off (Algorithm 3.5, line 12).
		if mu, sigma, L, err = posterior(K, sites); err != nil {
			return nil, err
		}
		res.Sweeps = sweep
		if sweep >= cfg.MinSweeps && change < cfg.Tol {
			res.Converged = true
			break
		}
	}
	res.Mean, res.Cov = mu, sigma
	res.Var = make([]float64, n)
	var logDetL float64
	for i := range res.Var {
		res.Var[i] = sigma.At(i, i)
		logDetL += math.Log(L.At(i, i))
	}
	if res.LogZ, err = evidenceFrom(logDetL, y, lik, sites, mu, res.Var); err != nil {
		return nil, err
	}
	if !res.Converged {
		return res, fmt.Errorf("%w after %d sweeps", ErrNotConverged, res.Sweeps)
	}
	return res, nil
}

func oldTauOr(s *Sites, old []float64, i int, parallel bool) float64 {
	if parallel {
		return old[i]
	}
	return s.Tau[i]
}

func oldNuOr(s *Sites, old []float64, i int, parallel bool) float64 {
	if parallel {
		return old[i]
	}
	return s.Nu[i]
}

func mulVec(a *mat.SymDense, x, dst []float64) {
	var v mat.VecDense
	v.MulVec(a, mat.NewVecDense(len(x), x))
	copy(dst, v.RawVector().Data)
}

// posterior returns μ = Σν̃ and Σ = K − K S̃^½ B⁻¹ S̃^½ K with
// B = I + S̃^½ K S̃^½ (R&W Algorithm 3.5, line 12), stable for τ̃ = 0, and
// B's Cholesky factor, which the evidence needs too.
func posterior(K *mat.SymDense, s *Sites) ([]float64, *mat.SymDense, *mat.TriDense, error) {
	n := K.SymmetricDim()
	L, sq, err := FactorB(K, s)
	if err != nil {
		return nil, nil, nil, err
	}
	// V = L⁻¹ S̃^½ K, Σ = K − VᵀV.
	sk := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			sk.Set(i, j, sq[i]*K.At(i, j))
		}
	}
	var V mat.Dense
	if err := V.Solve(L, sk); err != nil {
		return nil, nil, nil, fmt.Errorf("ep: %w", err)
	}
	// VᵀV by a general product rather than gonum's Dsyrk: twice the
	// flops, but on the project's blocked Dgemm kernel (graph/internal/gemm,
	// installed under blas64), several times faster than Dsyrk at these n.
	var vtv mat.Dense
	vtv.Mul(V.T(), &V)
	sigma := mat.NewSymDense(n, nil)
	raw, kr := sigma.RawSymmetric(), K.RawSymmetric()
	vr := vtv.RawMatrix()
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			raw.Data[i*raw.Stride+j] = kr.Data[i*kr.Stride+j] - vr.Data[i*vr.Stride+j]
		}
	}
	mu := make([]float64, n)
	mulVec(sigma, s.Nu, mu)
	return mu, sigma, L, nil
}

// FactorB returns the lower Cholesky factor of B = I + S̃^½ K S̃^½ and the
// diagonal of S̃^½: the stable form in which EP's posterior, its evidence
// and a FITC posterior over inducing outputs are all written.
func FactorB(K *mat.SymDense, s *Sites) (*mat.TriDense, []float64, error) {
	n := K.SymmetricDim()
	sq := make([]float64, n)
	for i, t := range s.Tau {
		if t < 0 {
			return nil, nil, fmt.Errorf("ep: site %d has negative precision %g", i, t)
		}
		sq[i] = math.Sqrt(t)
	}
	B := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := sq[i] * K.At(i, j) * sq[j]
			if i == j {
				v++
			}
			B.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(B) {
		return nil, nil, errors.New("ep: I + S̃^½KS̃^½ is not positive definite")
	}
	L := mat.NewTriDense(n, mat.Lower, nil)
	ch.LTo(L)
	return L, sq, nil
}

// evidenceFrom is log Z_EP at the sites (R&W eq. 3.65, in GPML's stable
// form): Σ log Ẑ_i at the cavities, minus what the site normalisers and the
// Gaussian part cancel. logDetL is ½ log|B| for B = I + S̃^½KS̃^½; mu and
// v are the posterior means and marginal variances.
func evidenceFrom(logDetL float64, y []float64, lik Tilted, s *Sites, mu, v []float64) (float64, error) {
	n := len(y)
	var sumLZ, t1, t2, t3, t4 float64
	for i := 0; i < n; i++ {
		sii := v[i]
		tauC := 1/sii - s.Tau[i]
		nuC := mu[i]/sii - s.Nu[i]
		if !(tauC > 0) {
			return 0, fmt.Errorf("ep: the cavity of site %d has precision %g at the evidence", i, tauC)
		}
		lz, _, _ := lik.TiltedMoments(y[i], nuC/tauC, 1/tauC)
		sumLZ += lz
		t2 += nuC * (s.Tau[i]/tauC*nuC - 2*s.Nu[i]) / (s.Tau[i] + tauC)
		t3 += s.Nu[i] * s.Nu[i] / (tauC + s.Tau[i])
		t4 += math.Log1p(s.Tau[i] / tauC)
	}
	// ν̃ᵀΣν̃ = ν̃ᵀμ.
	for i, nu := range s.Nu {
		t1 += nu * mu[i]
	}
	nlZ := logDetL - sumLZ - t1/2 - t2/2 + t3/2 - t4/2
	return -nlZ, nil
}
