package ep

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// LowRank is a FITC prior covariance K̃ = Λ + VᵀV over n latent values:
// Λ = diag(K − Q) and V = L_ZZ⁻¹ K_ZX (M×n), so that Q = VᵀV. EP on it
// costs O(n·M²) per sweep and O(n·M) memory, where the dense engine
// (Run) costs O(n³) and O(n²): the point of FITC.
type LowRank struct {
	Lambda []float64
	V      *mat.Dense
}

// fitcState holds EP's posterior on a LowRank prior in the form
//
//	Σ = P⁻¹Λ + G E⁻¹ Gᵀ,  P = I + ΛS̃,  G = P⁻¹Vᵀ,  E = I + V W Vᵀ,  W = S̃P⁻¹,
//
// (Woodbury on Σ⁻¹ = K̃⁻¹ + S̃), so that a marginal costs O(M²), a site
// update a rank-one change of E⁻¹ (Sherman–Morrison, O(M²)), and every
// quantity stays finite at τ̃ = 0 and at λ = 0 (an input on an inducing
// point).
type fitcState struct {
	p    LowRank
	n, m int
	Einv *mat.SymDense
	h    []float64 // Gᵀν̃ = Σ_j v_j ν̃_j / (1 + λ_j τ̃_j)
	ev   []float64 // scratch: E⁻¹v
	vi   []float64
}

func newFITCState(p LowRank) (*fitcState, error) {
	m, n := p.V.Dims()
	if len(p.Lambda) != n {
		return nil, fmt.Errorf("ep: FITC prior with %d diagonal entries for V of %d columns", len(p.Lambda), n)
	}
	for i, l := range p.Lambda {
		if !(l >= 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("ep: FITC prior diagonal %d is %g", i, l)
		}
	}
	return &fitcState{p: p, n: n, m: m, h: make([]float64, m), ev: make([]float64, m), vi: make([]float64, m)}, nil
}

// reset recomputes E⁻¹ and h from the sites (the rank-one updates
// accumulate round-off); it returns log|E|.
func (f *fitcState) reset(s *Sites) (float64, error) {
	m, n := f.m, f.n
	E := mat.NewSymDense(m, nil)
	for i := 0; i < m; i++ {
		E.SetSym(i, i, 1)
	}
	for i := range f.h {
		f.h[i] = 0
	}
	raw := f.p.V.RawMatrix()
	for j := 0; j < n; j++ {
		den := 1 + f.p.Lambda[j]*s.Tau[j]
		w := s.Tau[j] / den
		b := s.Nu[j] / den
		for a := 0; a < m; a++ {
			va := raw.Data[a*raw.Stride+j]
			f.h[a] += va * b
			if w == 0 {
				continue
			}
			for c := a; c < m; c++ {
				E.SetSym(a, c, E.At(a, c)+w*va*raw.Data[c*raw.Stride+j])
			}
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(E) {
		return 0, errors.New("ep: FITC's I + V S̃(I+ΛS̃)⁻¹ Vᵀ is not positive definite")
	}
	if f.Einv == nil {
		f.Einv = mat.NewSymDense(m, nil)
	}
	if err := ch.InverseTo(f.Einv); err != nil {
		return 0, fmt.Errorf("ep: FITC: %w", err)
	}
	return ch.LogDet(), nil
}

// column copies v_i.
func (f *fitcState) column(i int) []float64 {
	raw := f.p.V.RawMatrix()
	for a := 0; a < f.m; a++ {
		f.vi[a] = raw.Data[a*raw.Stride+i]
	}
	return f.vi
}

// marginal returns μ_i and Σ_ii, and leaves E⁻¹v_i in f.ev.
func (f *fitcState) marginal(i int, s *Sites) (mu, v float64) {
	vi := f.column(i)
	raw := f.Einv.RawSymmetric()
	m := f.m
	for a := 0; a < m; a++ {
		var t float64
		for c := 0; c < m; c++ {
			var e float64
			if a <= c {
				e = raw.Data[a*raw.Stride+c]
			} else {
				e = raw.Data[c*raw.Stride+a]
			}
			t += e * vi[c]
		}
		f.ev[a] = t
	}
	var q, r float64
	for a := 0; a < m; a++ {
		q += vi[a] * f.ev[a]
		r += f.h[a] * f.ev[a]
	}
	l := f.p.Lambda[i]
	den := 1 + l*s.Tau[i]
	return (l*s.Nu[i] + r) / den, l/den + q/(den*den)
}

// update applies site i's change from (tauOld, nuOld) to the sites' current
// values: E⁻¹ by Sherman–Morrison and h, using E⁻¹v_i left in f.ev by
// marginal(i).
func (f *fitcState) update(i int, tauOld, nuOld float64, s *Sites) error {
	l := f.p.Lambda[i]
	vi := f.column(i)
	denOld, denNew := 1+l*tauOld, 1+l*s.Tau[i]
	dw := s.Tau[i]/denNew - tauOld/denOld
	db := s.Nu[i]/denNew - nuOld/denOld
	for a := 0; a < f.m; a++ {
		f.h[a] += vi[a] * db
	}
	if dw == 0 {
		return nil
	}
	var q float64
	for a := 0; a < f.m; a++ {
		q += vi[a] * f.ev[a]
	}
	den := 1 + dw*q
	if !(den > 0) {
		return fmt.Errorf("ep: FITC site %d update makes E indefinite (1 + Δw·vᵀE⁻¹v = %g)", i, den)
	}
	c := dw / den
	raw := f.Einv.RawSymmetric()
	for a := 0; a < f.m; a++ {
		ca := c * f.ev[a]
		row := raw.Data[a*raw.Stride : a*raw.Stride+f.m]
		for b := a; b < f.m; b++ {
			row[b] -= ca * f.ev[b]
		}
	}
	return nil
}

// RunFITC runs EP on the FITC prior N(0, Λ + VᵀV), as Run does on a dense
// prior: sequential site updates (each O(M²)) or parallel ones, damping,
// the same skip rules and convergence test, and the same evidence. The
// Result's Cov is nil; Var holds the posterior marginal variances.
func RunFITC(p LowRank, y []float64, lik Tilted, sites *Sites, cfg Config) (*Result, error) {
	cfg = cfg.defaults()
	f, err := newFITCState(p)
	if err != nil {
		return nil, err
	}
	n := f.n
	switch {
	case len(y) != n || len(sites.Tau) != n || len(sites.Nu) != n:
		return nil, fmt.Errorf("ep: %d targets and %d/%d sites for a FITC prior over %d values", len(y), len(sites.Tau), len(sites.Nu), n)
	case !(cfg.Damping > 0 && cfg.Damping <= 1):
		return nil, fmt.Errorf("ep: damping %v outside (0, 1]", cfg.Damping)
	}
	for i, t := range sites.Tau {
		if t < 0 {
			return nil, fmt.Errorf("ep: site %d has negative precision %g", i, t)
		}
	}
	if _, err := f.reset(sites); err != nil {
		return nil, err
	}
	res := &Result{}
	mu, vr := make([]float64, n), make([]float64, n)
	for sweep := 1; sweep <= cfg.MaxSweeps; sweep++ {
		if err := cfg.cancelled(); err != nil {
			return nil, err
		}
		var change float64
		if err := cfg.stopped(); err != nil {
			return nil, err
		}
		if cfg.Parallel {
			for i := 0; i < n; i++ {
				mu[i], vr[i] = f.marginal(i, sites)
			}
		}
		for i := 0; i < n; i++ {
			if i%stopEvery == 0 {
				if err := cfg.stopped(); err != nil {
					return nil, err
				}
			}
			var mi, vi float64
			if cfg.Parallel {
				mi, vi = mu[i], vr[i]
			} else {
				mi, vi = f.marginal(i, sites)
			}
			tauC := 1/vi - sites.Tau[i]
			nuC := mi/vi - sites.Nu[i]
			if !(tauC > 0) {
				res.Skipped++
				continue
			}
			_, m, v := lik.TiltedMoments(y[i], nuC/tauC, 1/tauC)
			tauNew, nuNew := 1/v-tauC, m/v-nuC
			if math.IsNaN(tauNew) || math.IsInf(tauNew, 0) || math.IsNaN(nuNew) || math.IsInf(nuNew, 0) {
				res.Skipped++
				continue
			}
			d := cfg.Damping
			tauNew = d*tauNew + (1-d)*sites.Tau[i]
			nuNew = d*nuNew + (1-d)*sites.Nu[i]
			if tauNew < 0 {
				tauNew = 0 // as Run: a negative site precision is kept at zero
			}
			change = math.Max(change, math.Abs(tauNew-sites.Tau[i])/(1+math.Abs(sites.Tau[i])))
			change = math.Max(change, math.Abs(nuNew-sites.Nu[i])/(1+math.Abs(sites.Nu[i])))
			tauOld, nuOld := sites.Tau[i], sites.Nu[i]
			sites.Tau[i], sites.Nu[i] = tauNew, nuNew
			if cfg.Parallel {
				continue
			}
			if err := f.update(i, tauOld, nuOld, sites); err != nil {
				return nil, err
			}
		}
		if _, err := f.reset(sites); err != nil {
			return nil, err
		}
		res.Sweeps = sweep
		if sweep >= cfg.MinSweeps && change < cfg.Tol {
			res.Converged = true
			break
		}
	}
	logDetE, err := f.reset(sites)
	if err != nil {
		return nil, err
	}
	// log|B| = Σ log(1 + λτ̃) + log|E| for B = I + S̃^½K̃S̃^½ (determinant lemma).
	logDetL := logDetE / 2
	for i := 0; i < n; i++ {
		mu[i], vr[i] = f.marginal(i, sites)
		logDetL += math.Log1p(p.Lambda[i]*sites.Tau[i]) / 2
	}
	res.Mean, res.Var = mu, vr
	if res.LogZ, err = evidenceFrom(logDetL, y, lik, sites, mu, vr); err != nil {
		return nil, err
	}
	if !res.Converged {
		return res, fmt.Errorf("%w after %d sweeps", ErrNotConverged, res.Sweeps)
	}
	return res, nil
}

// InducingPosterior returns FITC-EP's posterior over the inducing outputs
// in the whitened coordinates of V = L_ZZ⁻¹K_ZX: q(L_ZZ⁻¹u) = N(E⁻¹Vb,
// E⁻¹) with b = ν̃/(1 + λτ̃), so that q(u) = N(L_ZZ E⁻¹Vb, L_ZZ E⁻¹ L_ZZᵀ)
// (Woodbury on K_ZX(K̃ + S̃⁻¹)⁻¹: both collapse to E⁻¹).
func InducingPosterior(p LowRank, sites *Sites) (mean []float64, cov *mat.SymDense, err error) {
	f, err := newFITCState(p)
	if err != nil {
		return nil, nil, err
	}
	if _, err := f.reset(sites); err != nil {
		return nil, nil, err
	}
	mean = make([]float64, f.m)
	var v mat.VecDense
	v.MulVec(f.Einv, mat.NewVecDense(f.m, f.h))
	copy(mean, v.RawVector().Data)
	return mean, f.Einv, nil
}
