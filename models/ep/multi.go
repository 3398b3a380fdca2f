package ep

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// MultiTilted is a likelihood whose EP sites each touch several latent
// functions (one per class), such as the robust-max likelihood's sites
// Θ(f_y − f_k) on the pair (f_{y_i}, f_k). Each site is approximated by an
// independent Gaussian on every latent value it touches and, when the
// likelihood has per-row outlier indicators z_i ~ Bernoulli(ρ), ρ ~ Beta,
// by a Bernoulli on z_i (Hernández-Lobato et al. 2011, §2.4–2.5).
//
// The methods use only built-in types so that a likelihood package need
// not import this one.
type MultiTilted interface {
	// SiteLatents lists, for a row labelled y of classes classes, the
	// latent functions each of the row's sites touches.
	SiteLatents(y, classes int) [][]int
	// MultiTiltedMoments gives the tilted distribution of one site of a
	// row of classes classes, touching latents whose cavities are the
	// independent N(m[j], v[j]) (in SiteLatents' order), the row's outlier
	// indicator having cavity log-odds logitZ (−Inf without indicators).
	// It writes ∂log Z/∂m[j] into grad and −∂²log Z/∂m[j]² into curv and
	// returns log Z and the log-odds of the site's Bernoulli part on z_i.
	MultiTiltedMoments(classes int, m, v []float64, logitZ float64, grad, curv []float64) (logZ, logitSite float64)
	// OutlierPrior returns the Beta(a0, b0) prior of the outlier rate ρ;
	// ok is false when rows have no outlier indicators (ρ ≡ 0).
	OutlierPrior() (a0, b0 float64, ok bool)
}

// MultiConfig controls a multi-latent EP run. Zero values take the
// defaults, the robust paper's where it gives one.
type MultiConfig struct {
	// Damping ε ∈ (0, 1] of every site update in natural parameters
	// (default 0.5). A sweep whose parallel update makes a class posterior
	// improper is redone with ε halved.
	Damping float64
	// Tol is the convergence threshold on the largest change of a site
	// parameter in a sweep: a Gaussian natural parameter relative to
	// 1 + |old|, a Bernoulli part as a probability (its log-odds grow
	// without bound as the fit sharpens while the probability saturates), a
	// Beta part relative to Q's a + b (default 1e-3, the authors').
	Tol float64
	// MaxSweeps bounds the sweeps (default 1000, the authors'); a negative
	// value runs none (the posterior at the given sites).
	MaxSweeps int
	// Acceleration is the memory of the Anderson acceleration of the damped
	// sweeps (default 10; negative for plain sweeps). It changes the path to
	// the fixed point, not the fixed point.
	Acceleration int
	// MomentBeta projects the ρ part of a z-prior site onto a Beta by its
	// mean and second moment (the authors' code) rather than by EP's KL
	// projection (matching E[log ρ], E[log(1−ρ)]); only the latter makes
	// EP's fixed point a stationary point of the evidence, so that its
	// gradient is exact.
	MomentBeta bool
}

func (c MultiConfig) defaults() MultiConfig {
	if c.Damping == 0 {
		c.Damping = 0.5
	}
	if c.Tol == 0 {
		c.Tol = 1e-3
	}
	if c.MaxSweeps == 0 {
		c.MaxSweeps = 1000
	}
	if c.MaxSweeps < 0 {
		c.MaxSweeps = 0
	}
	if c.Acceleration == 0 {
		c.Acceleration = 10
	}
	return c
}

// MultiSites are multi-latent EP's site approximations in natural
// parameters. Site s of the layout carries a Gaussian (precision Tau[e],
// precision × mean Nu[e]) on each latent value it touches (entries e of
// the layout), and with outlier indicators a Bernoulli on z_i (Logit[s],
// its log-odds). The z-prior site of row i carries a Beta on ρ
// (ρ^(A_i−1)(1−ρ)^(B_i−1)) and a Bernoulli on z_i (LogitZ[i]). Site
// normalisers are not stored: the evidence recomputes them.
type MultiSites struct {
	N      int       `json:"n"`
	Tau    []float64 `json:"tau"`
	Nu     []float64 `json:"nu"`
	Logit  []float64 `json:"logit,omitempty"`
	A      []float64 `json:"a,omitempty"`
	B      []float64 `json:"b,omitempty"`
	LogitZ []float64 `json:"logit_z,omitempty"`
}

// MultiLayout is which latent functions every site of every row touches.
type MultiLayout struct {
	// N rows, C classes (latent functions).
	N, C int
	// Row[i] is the first site of row i; Row[N] the number of sites.
	Row []int
	// Lat[s] lists the latents of site s and Entry[s] the index of its
	// first Gaussian part in MultiSites.Tau (its latents' parts follow).
	Lat   [][]int
	Entry []int
	// of[k][i] lists the entries of row i on latent k, in site order.
	of [][][]int
	// Robust reports outlier indicators; A0, B0 are then ρ's Beta prior.
	Robust bool
	A0, B0 float64
}

// maxMultiEntries bounds the Gaussian site parts a layout may have.
const maxMultiEntries = 1 << 28

// NewMultiLayout lays out the sites of the labels y (0..classes−1) under
// lik.
func NewMultiLayout(lik MultiTilted, y []int, classes int) (*MultiLayout, error) {
	if classes < 2 {
		return nil, fmt.Errorf("ep: %d classes; need at least 2", classes)
	}
	n := len(y)
	ly := &MultiLayout{N: n, C: classes, Row: make([]int, n+1), of: make([][][]int, classes)}
	for k := range ly.of {
		ly.of[k] = make([][]int, n)
	}
	ly.A0, ly.B0, ly.Robust = lik.OutlierPrior()
	if ly.Robust && !(ly.A0 > 0 && ly.B0 > 0 && !math.IsInf(ly.A0, 0) && !math.IsInf(ly.B0, 0)) {
		return nil, fmt.Errorf("ep: Beta prior (%g, %g) of the outlier rate must have positive finite parameters", ly.A0, ly.B0)
	}
	entries := 0
	for i, yi := range y {
		if yi < 0 || yi >= classes {
			return nil, fmt.Errorf("ep: label %d of row %d outside 0..%d", yi, i, classes-1)
		}
		ly.Row[i] = len(ly.Lat)
		for _, lat := range lik.SiteLatents(yi, classes) {
			if len(lat) == 0 {
				return nil, fmt.Errorf("ep: a site of row %d touches no latent function", i)
			}
			ly.Lat = append(ly.Lat, lat)
			ly.Entry = append(ly.Entry, entries)
			for _, k := range lat {
				if k < 0 || k >= classes {
					return nil, fmt.Errorf("ep: a site of row %d touches latent %d of %d", i, k, classes)
				}
				ly.of[k][i] = append(ly.of[k][i], entries)
				entries++
			}
			if entries > maxMultiEntries {
				return nil, fmt.Errorf("ep: more than %d site parameters", maxMultiEntries)
			}
		}
	}
	ly.Row[n] = len(ly.Lat)
	return ly, nil
}

func (ly *MultiLayout) entries() int {
	if len(ly.Lat) == 0 {
		return 0
	}
	s := len(ly.Lat) - 1
	return ly.Entry[s] + len(ly.Lat[s])
}

// NewSites returns sites at the prior: the Gaussian and likelihood-Bernoulli
// parts at zero and the z-prior sites at their projection under the prior,
// p̃_i = a0/(a0+b0) with a flat Beta part, so that the initial Q is the
// prior (the authors' initialisation).
func (ly *MultiLayout) NewSites() *MultiSites {
	e := ly.entries()
	s := &MultiSites{N: ly.N, Tau: make([]float64, e), Nu: make([]float64, e)}
	if !ly.Robust {
		return s
	}
	s.Logit = make([]float64, len(ly.Lat))
	s.A, s.B, s.LogitZ = make([]float64, ly.N), make([]float64, ly.N), make([]float64, ly.N)
	lz := math.Log(ly.A0) - math.Log(ly.B0)
	for i := range s.A {
		s.A[i], s.B[i], s.LogitZ[i] = 1, 1, lz
	}
	return s
}

// Check reports whether s fits the layout (as sites read from a file must).
func (ly *MultiLayout) Check(s *MultiSites) error {
	if s == nil {
		return errors.New("ep: no sites")
	}
	e := ly.entries()
	if s.N != ly.N || len(s.Tau) != e || len(s.Nu) != e {
		return fmt.Errorf("ep: sites for %d rows with %d/%d Gaussian parts; the problem has %d rows and %d", s.N, len(s.Tau), len(s.Nu), ly.N, e)
	}
	if ly.Robust != (s.LogitZ != nil) {
		return errors.New("ep: sites with and without outlier indicators mixed")
	}
	if ly.Robust && (len(s.Logit) != len(ly.Lat) || len(s.A) != ly.N || len(s.B) != ly.N || len(s.LogitZ) != ly.N) {
		return errors.New("ep: malformed outlier-indicator sites")
	}
	for _, a := range s.arrays() {
		if !finite(a...) {
			return errors.New("ep: a site parameter is not finite")
		}
	}
	return nil
}

func (s *MultiSites) clone() *MultiSites {
	c := *s
	for _, p := range []*[]float64{&c.Tau, &c.Nu, &c.Logit, &c.A, &c.B, &c.LogitZ} {
		if *p != nil {
			*p = append([]float64(nil), (*p)...)
		}
	}
	return &c
}

func (s *MultiSites) arrays() [][]float64 {
	out := [][]float64{s.Tau, s.Nu}
	if s.LogitZ != nil {
		out = append(out, s.Logit, s.A, s.B, s.LogitZ)
	}
	return out
}

// pack appends every site parameter to dst[:0]: the point EP's sweep map
// acts on.
func (s *MultiSites) pack(dst []float64) []float64 {
	dst = dst[:0]
	for _, a := range s.arrays() {
		dst = append(dst, a...)
	}
	return dst
}

func (s *MultiSites) unpack(x []float64) {
	for _, a := range s.arrays() {
		x = x[copy(a, x):]
	}
}

// naturals fills the total site precision and precision × mean of latent k.
func (ly *MultiLayout) naturals(s *MultiSites, k int, lam, ups []float64) {
	for i, es := range ly.of[k] {
		var t, u float64
		for _, e := range es {
			t += s.Tau[e]
			u += s.Nu[e]
		}
		lam[i], ups[i] = t, u
	}
}

// logitP returns logit p_i = logit p̃_i + Σ_s logit p̃_s over row i's sites.
func (ly *MultiLayout) logitP(s *MultiSites, i int) float64 {
	v := s.LogitZ[i]
	for j := ly.Row[i]; j < ly.Row[i+1]; j++ {
		v += s.Logit[j]
	}
	return v
}

// MultiPrior holds the per-latent prior covariances K_k and their lower
// Cholesky factors; latents given the same *mat.SymDense share a factor.
type MultiPrior struct {
	n int
	K []*mat.SymDense
	L [][]float64
}

// NewMultiPrior factorises the per-latent prior covariances.
func NewMultiPrior(K []*mat.SymDense) (*MultiPrior, error) {
	if len(K) < 2 {
		return nil, fmt.Errorf("ep: %d latent functions; multi-latent EP needs at least 2", len(K))
	}
	n := K[0].SymmetricDim()
	p := &MultiPrior{n: n, K: K, L: make([][]float64, len(K))}
	for k, Kk := range K {
		if Kk.SymmetricDim() != n {
			return nil, fmt.Errorf("ep: latent %d's prior is %d×%d, latent 0's %d×%d", k, Kk.SymmetricDim(), Kk.SymmetricDim(), n, n)
		}
		for j := 0; j < k; j++ {
			if K[j] == Kk {
				p.L[k] = p.L[j]
				break
			}
		}
		if p.L[k] != nil {
			continue
		}
		raw := Kk.RawSymmetric()
		a := make([]float64, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				a[i*n+j] = raw.Data[j*raw.Stride+i] // upper storage → lower
			}
		}
		if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: a}); !ok {
			return nil, fmt.Errorf("ep: latent %d's prior covariance is not positive definite (raise the jitter)", k)
		}
		for i := 0; i < n; i++ {
			clear(a[i*n+i+1 : (i+1)*n])
		}
		p.L[k] = a
	}
	return p, nil
}

// MultiResult is the EP approximation Q(f, z, ρ) = ∏_k N(f_k | μ_k, Σ_k) ·
// Bern(z | p) · Beta(ρ | a, b) at the end of a run.
type MultiResult struct {
	// Mean[k] and Var[k] are the marginal means and variances of f_k at
	// the training inputs.
	Mean, Var [][]float64
	// LogitP[i] is logit P(z_i = 1 | y, X) under Q (nil without indicators).
	LogitP []float64
	// A and B are Q's Beta parameters of ρ (0 without indicators).
	A, B float64
	// LogZ is the EP evidence log Z_EP.
	LogZ float64
	// Sweeps run; Converged says whether Tol was met; Skipped counts site
	// updates skipped for an invalid cavity or a non-finite result; Negative
	// counts Gaussian site parts of negative precision at the end (the
	// robust likelihood produces them); Redamped counts sweeps redone with
	// smaller damping; Accelerated those that took an Anderson step.
	Sweeps      int
	Converged   bool
	Skipped     int
	Negative    int
	Redamped    int
	Accelerated int
	// Change is the last sweep's largest site change (see MultiConfig.Tol).
	Change float64

	prior   *MultiPrior
	classes []*classPost
}

// Outliers returns P(z_i = 1 | y, X) for every row (zeros without
// indicators).
func (p *MultiResult) Outliers(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		if p.LogitP != nil {
			out[i] = sigmoid(p.LogitP[i])
		}
	}
	return out
}

// Rho returns Q's mean outlier rate a/(a+b) (0 without indicators).
func (p *MultiResult) Rho() float64 {
	if p.A == 0 && p.B == 0 {
		return 0
	}
	return p.A / (p.A + p.B)
}

// Cov returns latent k's posterior covariance Σ_k = VᵀV (n×n).
func (p *MultiResult) Cov(k int) *mat.SymDense {
	cp, n := p.classes[k], p.prior.n
	V := mat.NewDense(n, n, cp.v)
	var S mat.Dense
	S.Mul(V.T(), V)
	out := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			out.SetSym(i, j, (S.At(i, j)+S.At(j, i))/2)
		}
	}
	return out
}

// ErrImproper is wrapped when a class posterior stays improper (K⁻¹ + Λ not
// positive definite) even with the damping reduced twenty times.
var ErrImproper = errors.New("ep: improper EP posterior")

// classPost is one latent's Gaussian posterior N(μ, Σ), Σ = (K⁻¹ + Λ)⁻¹,
// written through K = L Lᵀ and C = I + Lᵀ Λ L = UᵀU (U upper triangular) as
// Σ = L C⁻¹ Lᵀ = VᵀV with V = U⁻ᵀ Lᵀ. Unlike R&W's B = I + Λ^½ K Λ^½ this
// needs no square root of Λ, whose entries the robust likelihood makes
// negative; C is positive definite exactly when the posterior is proper,
// and |C| = |I + ΛK|. (The upper factor because gonum's blocked Cholesky
// then works with left-side triangular solves, which are fast here.)
type classPost struct {
	uc, v      []float64 // U and V, row-major n×n
	w          []float64 // V υ, so μ = Vᵀw and υᵀΣυ = ‖w‖²
	mean, vari []float64
	logDetC    float64
}

func upper(n int, d []float64) blas64.Triangular {
	return blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: n, Data: d}
}

// refresh recomputes the posterior of a latent from its prior factor L and
// its sites' total precision lam and precision × mean ups. It returns
// false, leaving cp unusable, when C is not positive definite.
func (cp *classPost) refresh(n int, L, lam, ups []float64) bool {
	if len(cp.uc) != n*n {
		cp.uc, cp.v = make([]float64, n*n), make([]float64, n*n)
		cp.w, cp.mean, cp.vari = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	// W = Λ L into v (as scratch), then C = I + Lᵀ W into uc.
	for i := 0; i < n; i++ {
		li, wi := L[i*n:i*n+i+1], cp.v[i*n:(i+1)*n]
		clear(wi)
		for j, x := range li {
			wi[j] = lam[i] * x
		}
	}
	gen := func(d []float64) blas64.General { return blas64.General{Rows: n, Cols: n, Stride: n, Data: d} }
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, gen(L), gen(cp.v), 0, gen(cp.uc))
	for i := 0; i < n; i++ {
		cp.uc[i*n+i]++
	}
	if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: cp.uc}); !ok {
		return false
	}
	cp.logDetC = 0
	for i := 0; i < n; i++ {
		clear(cp.uc[i*n : i*n+i])
		cp.logDetC += 2 * math.Log(cp.uc[i*n+i])
	}
	// V = U⁻ᵀ Lᵀ.
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			cp.v[i*n+j] = L[j*n+i]
		}
	}
	blas64.Trsm(blas.Left, blas.Trans, 1, upper(n, cp.uc), gen(cp.v))
	clear(cp.vari)
	for j := 0; j < n; j++ {
		for i, x := range cp.v[j*n : (j+1)*n] {
			cp.vari[i] += x * x
		}
	}
	blas64.Gemv(blas.NoTrans, 1, gen(cp.v), blas64.Vector{N: n, Inc: 1, Data: ups}, 0, blas64.Vector{N: n, Inc: 1, Data: cp.w})
	blas64.Gemv(blas.Trans, 1, gen(cp.v), blas64.Vector{N: n, Inc: 1, Data: cp.w}, 0, blas64.Vector{N: n, Inc: 1, Data: cp.mean})
	for i, v := range cp.vari {
		if !(v > 0) || math.IsInf(v, 0) || math.IsNaN(cp.mean[i]) {
			return false
		}
	}
	return true
}

// RunMulti runs multi-latent EP on the per-latent priors pr, starting from
// (and updating) the sites s. The sweep is the robust paper's: the z-prior
// sites one at a time, then every likelihood site from the same Q, then Q
// rebuilt (one O(n³) factorisation per distinct prior). It checks ctx at
// every sweep and returns its error when cancelled. When MaxSweeps pass
// without convergence the error wraps ErrNotConverged and the result is
// still valid.
func RunMulti(ctx context.Context, pr *MultiPrior, ly *MultiLayout, lik MultiTilted, s *MultiSites, cfg MultiConfig) (*MultiResult, error) {
	cfg = cfg.defaults()
	n, l := pr.n, len(pr.K)
	switch {
	case n != ly.N || l != ly.C:
		return nil, fmt.Errorf("ep: a prior over %d rows × %d latents for a layout of %d × %d", n, l, ly.N, ly.C)
	case !(cfg.Damping > 0 && cfg.Damping <= 1):
		return nil, fmt.Errorf("ep: damping %v outside (0, 1]", cfg.Damping)
	case !(cfg.Tol > 0):
		return nil, fmt.Errorf("ep: tolerance %g must be positive", cfg.Tol)
	}
	if err := ly.Check(s); err != nil {
		return nil, err
	}
	robust := ly.Robust
	p := &MultiResult{prior: pr, classes: make([]*classPost, l), Mean: make([][]float64, l), Var: make([][]float64, l)}
	for k := range p.classes {
		p.classes[k] = &classPost{}
	}
	lam, ups := make([]float64, n), make([]float64, n)
	rebuild := func() bool {
		for k, cp := range p.classes {
			ly.naturals(s, k, lam, ups)
			if !cp.refresh(n, pr.L[k], lam, ups) {
				return false
			}
		}
		if robust {
			p.A, p.B = ly.A0, ly.B0
			for i := 0; i < n; i++ {
				p.A += s.A[i] - 1
				p.B += s.B[i] - 1
			}
			for i := 0; i < n; i++ {
				p.LogitP[i] = ly.logitP(s, i)
			}
		}
		return true
	}
	if robust {
		p.LogitP = make([]float64, n)
	}
	if !rebuild() {
		return nil, fmt.Errorf("%w: the starting sites give an improper posterior", ErrImproper)
	}
	// Sweep-start copies of the likelihood sites: the parallel update reads
	// the cavities of Q as it was and may have to be redone.
	old := s.clone()
	var acc *anderson
	if cfg.Acceleration > 0 {
		acc = &anderson{m: cfg.Acceleration}
	}
	sc := newSiteScratch()
	var x, fx []float64
	lastChange := math.Inf(1)
	for sweep := 1; sweep <= cfg.MaxSweeps; sweep++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// One sweep is the map F of the sites: x → F(x).
		if acc != nil {
			x = s.pack(x)
		}
		var zChange, change float64
		if robust {
			zChange = zSweep(ly, s, p, cfg)
		}
		copy(old.Tau, s.Tau)
		copy(old.Nu, s.Nu)
		if robust {
			copy(old.Logit, s.Logit)
		}
		d := cfg.Damping
		for attempt := 0; ; attempt++ {
			skipped := 0
			for i := 0; i < n; i++ {
				for j := ly.Row[i]; j < ly.Row[i+1]; j++ {
					if !siteUpdate(ly, lik, s, old, p, i, j, d, robust, sc) {
						skipped++
					}
				}
			}
			p.Skipped += skipped
			change = zChange
			for j := range s.Tau {
				change = math.Max(change, relChange(s.Tau[j], old.Tau[j]))
				change = math.Max(change, relChange(s.Nu[j], old.Nu[j]))
			}
			if robust {
				for j := range s.Logit {
					change = math.Max(change, math.Abs(sigmoid(s.Logit[j])-sigmoid(old.Logit[j])))
				}
			}
			// Anderson acceleration: the next sites extrapolate from the
			// last few residuals F(x) − x. Its fixed points are F's, so the
			// answer is unchanged; an extrapolation that makes a posterior
			// improper falls back to F(x) and forgets the history.
			if acc != nil && change > 2*lastChange {
				acc.reset()
			}
			if acc != nil && change >= cfg.Tol && change < accelStart && attempt == 0 {
				fx = s.pack(fx)
				if xn := acc.step(x, fx); xn != nil {
					s.unpack(xn)
					if zValid(ly, s) && rebuild() {
						p.Accelerated++
						break
					}
					acc.reset()
					s.unpack(fx)
				}
			}
			if rebuild() {
				break
			}
			if acc != nil {
				acc.reset()
			}
			if attempt == 20 {
				return nil, fmt.Errorf("%w in sweep %d", ErrImproper, sweep)
			}
			// Improper: redo the sweep's parallel step with half the damping.
			copy(s.Tau, old.Tau)
			copy(s.Nu, old.Nu)
			if robust {
				copy(s.Logit, old.Logit)
			}
			if !rebuild() {
				return nil, fmt.Errorf("%w: cannot restore sweep %d", ErrImproper, sweep)
			}
			d /= 2
			p.Redamped++
		}
		p.Sweeps, p.Change, lastChange = sweep, change, change
		if change < cfg.Tol {
			p.Converged = true
			break
		}
	}
	for k, cp := range p.classes {
		p.Mean[k], p.Var[k] = cp.mean, cp.vari
	}
	p.Negative = 0
	for _, t := range s.Tau {
		if t < 0 {
			p.Negative++
		}
	}
	var err error
	if p.LogZ, err = multiEvidence(ly, lik, p, s, sc); err != nil {
		return p, err
	}
	if !p.Converged && cfg.MaxSweeps > 0 {
		return p, fmt.Errorf("%w after %d sweeps (last change %.3g)", ErrNotConverged, p.Sweeps, p.Change)
	}
	return p, nil
}

// siteScratch holds a site's cavity and moments.
type siteScratch struct{ m, v, g, c []float64 }

func newSiteScratch() *siteScratch { return &siteScratch{} }

func (sc *siteScratch) size(k int) {
	if cap(sc.m) < k {
		sc.m, sc.v, sc.g, sc.c = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	}
	sc.m, sc.v, sc.g, sc.c = sc.m[:k], sc.v[:k], sc.g[:k], sc.c[:k]
}

// cavity fills sc.m, sc.v with site j's cavity under Q and the sites src;
// false when a cavity is not a proper Gaussian.
func cavity(ly *MultiLayout, src *MultiSites, p *MultiResult, i, j int, sc *siteScratch) bool {
	lat := ly.Lat[j]
	sc.size(len(lat))
	e0 := ly.Entry[j]
	for a, k := range lat {
		cp := p.classes[k]
		tc := 1/cp.vari[i] - src.Tau[e0+a]
		if !(tc > 0) || math.IsInf(tc, 0) {
			return false
		}
		sc.v[a] = 1 / tc
		sc.m[a] = (cp.mean[i]/cp.vari[i] - src.Nu[e0+a]) * sc.v[a]
	}
	return true
}

// siteUpdate refreshes site j of row i from the cavity of Q (as it was at
// the start of the sweep: old holds that sweep's sites) with damping d. It
// returns false if the update was skipped. With ∂log Z/∂m = g and
// −∂²log Z/∂m² = c on a latent of cavity N(m, v), the tilted variance is
// v − v²c, so the site's precision is c/(1 − vc) and its precision × mean
// (m + vg)·c/(1 − vc) + g.
func siteUpdate(ly *MultiLayout, lik MultiTilted, s, old *MultiSites, p *MultiResult, i, j int, d float64, robust bool, sc *siteScratch) bool {
	if !cavity(ly, old, p, i, j, sc) {
		return false
	}
	lpc := math.Inf(-1)
	if robust {
		lpc = p.LogitP[i] - old.Logit[j]
	}
	_, logitSite := lik.MultiTiltedMoments(ly.C, sc.m, sc.v, lpc, sc.g, sc.c)
	e0, k := ly.Entry[j], len(ly.Lat[j])
	var newT, newN [8]float64
	nt, nn := newT[:0], newN[:0]
	if k > len(newT) {
		nt, nn = make([]float64, 0, k), make([]float64, 0, k)
	}
	for a := 0; a < k; a++ {
		c, g, m, v := sc.c[a], sc.g[a], sc.m[a], sc.v[a]
		if !(1-v*c > 0) {
			return false
		}
		t := c / (1 - v*c)
		nt, nn = append(nt, t), append(nn, (m+v*g)*t+g)
	}
	if !finite(nt...) || !finite(nn...) || !finite(logitSite) {
		return false
	}
	for a := 0; a < k; a++ {
		e := e0 + a
		s.Tau[e] = d*nt[a] + (1-d)*old.Tau[e]
		s.Nu[e] = d*nn[a] + (1-d)*old.Nu[e]
	}
	if robust {
		s.Logit[j] = d*logitSite + (1-d)*old.Logit[j]
	}
	return true
}

// zValid reports whether the Beta part of Q and of every z-prior site's
// cavity is proper (always true without indicators).
func zValid(ly *MultiLayout, s *MultiSites) bool {
	if !ly.Robust {
		return true
	}
	a, b := ly.A0, ly.B0
	for i := range s.A {
		a += s.A[i] - 1
		b += s.B[i] - 1
	}
	if !(a > 0 && b > 0) {
		return false
	}
	for i := range s.A {
		if !(a-s.A[i]+1 > 0 && b-s.B[i]+1 > 0) || !finite(s.A[i], s.B[i], s.LogitZ[i]) {
			return false
		}
	}
	return true
}

// anderson is Anderson acceleration (type II, Walker & Ni 2011) of a
// fixed-point iteration x ← F(x) with memory m: the next point is
// x + g − (ΔX + ΔG)γ, γ minimising ‖g − ΔGγ‖, g = F(x) − x, where ΔX and
// ΔG hold the last m differences of the points and of the residuals. EP's
// damped parallel sweep has a slow mode (on Glass it contracts by 0.998 a
// sweep: the robust-max likelihood sees only differences of the latents,
// so their common level is set by the prior alone), which this removes.
type anderson struct {
	m            int
	dx, dg       [][]float64
	xPrev, gPrev []float64
}

func (a *anderson) reset() { a.dx, a.dg, a.xPrev, a.gPrev = nil, nil, nil, nil }

// step takes the point x and F(x) and returns the extrapolated next point,
// or nil while there is no history.
func (a *anderson) step(x, fx []float64) []float64 {
	n := len(x)
	g := make([]float64, n)
	for i := range g {
		g[i] = fx[i] - x[i]
	}
	if a.xPrev != nil {
		dx, dg := make([]float64, n), make([]float64, n)
		for i := range dx {
			dx[i], dg[i] = x[i]-a.xPrev[i], g[i]-a.gPrev[i]
		}
		a.dx, a.dg = append(a.dx, dx), append(a.dg, dg)
		if len(a.dx) > a.m {
			a.dx, a.dg = a.dx[1:], a.dg[1:]
		}
	}
	a.xPrev, a.gPrev = append(a.xPrev[:0], x...), g
	mm := len(a.dg)
	if mm == 0 {
		return nil
	}
	A := mat.NewDense(n, mm, nil)
	for j, col := range a.dg {
		for i, v := range col {
			A.Set(i, j, v)
		}
	}
	var qr mat.QR
	qr.Factorize(A)
	var gamma mat.VecDense
	if err := qr.SolveVecTo(&gamma, false, mat.NewVecDense(n, g)); err != nil {
		a.reset()
		return nil
	}
	xn := make([]float64, n)
	for i := range xn {
		xn[i] = x[i] + g[i]
	}
	for j := 0; j < mm; j++ {
		c := gamma.AtVec(j)
		if math.IsNaN(c) || math.IsInf(c, 0) {
			a.reset()
			return nil
		}
		for i := range xn {
			xn[i] -= c * (a.dx[j][i] + a.dg[j][i])
		}
	}
	return xn
}

// accelStart is the sweep change below which Anderson steps begin: far
// from the fixed point the sweeps are too non-linear (sites change sign,
// updates are skipped) for a linear extrapolation to help.
const accelStart = 1e-2

func relChange(new, old float64) float64 { return math.Abs(new-old) / (1 + math.Abs(old)) }

// zSweep updates the z-prior sites one at a time (§2.5), Q's a, b and p_i
// following each update. The ρ part of the tilted distribution is a
// two-component Beta mixture, projected onto a Beta by matching E[log ρ]
// and E[log(1−ρ)] (EP's KL projection onto the Beta family), or with
// cfg.MomentBeta its mean and second moment (the authors' code). Only the
// former makes EP's fixed point a stationary point of log Z_EP, on which
// the evidence gradient relies. It returns the largest change.
func zSweep(ly *MultiLayout, s *MultiSites, p *MultiResult, cfg MultiConfig) float64 {
	var change float64
	d := cfg.Damping
	for i := range s.A {
		lpc := p.LogitP[i] - s.LogitZ[i]
		ac, bc := p.A-s.A[i]+1, p.B-s.B[i]+1
		if !(ac > 0 && bc > 0) {
			p.Skipped++
			continue
		}
		pc := sigmoid(lpc)
		S := ac + bc
		eb := ac / S
		w1, w0 := pc*eb, (1-pc)*(1-eb)
		Z := w1 + w0
		E1 := (w1*(ac+1) + w0*ac) / ((S + 1) * Z)
		E2 := (w1*(ac+1)*(ac+2) + w0*ac*(ac+1)) / ((S + 1) * (S + 2) * Z)
		vr := E2 - E1*E1
		an, bn := E1*(E1-E2)/vr, (1-E1)*(E1-E2)/vr
		// The site is the new Beta over the cavity: ã = a_new − a\ + 1.
		da, db := an-ac, bn-bc
		if !cfg.MomentBeta {
			var ok bool
			if da, db, ok = betaFromLogMoments(ac, bc, w1/Z, w0/Z, an, bn); !ok {
				p.Skipped++
				continue
			}
		}
		if !(ac+da > 0 && bc+db > 0) || !finite(da, db) {
			p.Skipped++
			continue
		}
		at := d*(da+1) + (1-d)*s.A[i]
		bt := d*(db+1) + (1-d)*s.B[i]
		lz := d*(math.Log(ac)-math.Log(bc)) + (1-d)*s.LogitZ[i]
		if !(ac+at-1 > 0 && bc+bt-1 > 0) {
			p.Skipped++
			continue
		}
		// Beta sites count pseudo-observations: a change matters relative
		// to Q's a + b (it moves E[ρ] by about that much), not to the
		// site's own size.
		change = math.Max(change, math.Abs(at-s.A[i])/(p.A+p.B))
		change = math.Max(change, math.Abs(bt-s.B[i])/(p.A+p.B))
		change = math.Max(change, math.Abs(sigmoid(lz)-sigmoid(s.LogitZ[i])))
		s.A[i], s.B[i], s.LogitZ[i] = at, bt, lz
		p.A, p.B = ac+at-1, bc+bt-1
		p.LogitP[i] = lpc + lz
	}
	return change
}

// betaFromLogMoments returns a − ac and b − bc for the Beta(a, b) with
// E[log ρ] and E[log(1−ρ)] equal to those of the mixture
// w1·Beta(ac+1, bc) + w0·Beta(ac, bc+1) (w1 + w0 = 1). Newton's method runs
// in the offsets (a − ac, b − bc), which are O(1), on differences of ψ
// formed without cancellation (digammaDiff): at b in the millions plain
// digamma differences lose half their digits. (a, b) is the starting
// point.
func betaFromLogMoments(ac, bc, w1, w0, a, b float64) (float64, float64, bool) {
	S := ac + bc
	da, db := a-ac, b-bc
	if !finite(da, db) || !(a > 0 && b > 0) {
		da, db = w1, w0
	}
	for it := 0; it < 50; it++ {
		a, b = ac+da, bc+db
		dab := da + db - 1 // a + b − (S + 1)
		f1 := digammaDiff(ac, da) - digammaDiff(S+1, dab) - w1/ac
		f2 := digammaDiff(bc, db) - digammaDiff(S+1, dab) - w0/bc
		tab := trigamma(a + b)
		j11, j12 := trigamma(a)-tab, -tab
		j21, j22 := -tab, trigamma(b)-tab
		det := j11*j22 - j12*j21
		sa := (f1*j22 - f2*j12) / det
		sb := (j11*f2 - j21*f1) / det
		if !finite(sa, sb) {
			return 0, 0, false
		}
		// Keep a and b positive.
		step := 1.0
		for ac+da-step*sa <= 0 || bc+db-step*sb <= 0 {
			step /= 2
			if step < 1e-10 {
				return 0, 0, false
			}
		}
		da -= step * sa
		db -= step * sb
		if math.Abs(step*sa) < 1e-13*(1+math.Abs(da)) && math.Abs(step*sb) < 1e-13*(1+math.Abs(db)) {
			break
		}
	}
	return da, db, finite(da, db) && ac+da > 0 && bc+db > 0
}

// digammaDiff is ψ(x+d) − ψ(x). For x and x+d at least 20 it uses the
// asymptotic series ψ(x) = ln x − 1/(2x) − 1/(12x²) + 1/(120x⁴) −
// 1/(252x⁶) + O(x⁻⁸) term by term, each difference written in d so that
// nothing cancels.
func digammaDiff(x, d float64) float64 {
	y := x + d
	if x < 20 || y < 20 {
		return mathext.Digamma(y) - mathext.Digamma(x)
	}
	r := d / x
	l := math.Log1p(r)
	pow := func(p float64) float64 { return math.Expm1(p * l) } // (y/x)^p − 1
	x2, y2 := x*x, y*y
	return l + d/(2*x*y) + d*(x+y)/(12*x2*y2) -
		pow(4)/(120*y2*y2) + pow(6)/(252*y2*y2*y2)
}

func trigamma(x float64) float64 { return mathext.Zeta(2, x) }

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// logSigmoid is log σ(x) = −log(1 + e^−x), stable in both tails.
func logSigmoid(x float64) float64 {
	if x >= 0 {
		return -math.Log1p(math.Exp(-x))
	}
	return x - math.Log1p(math.Exp(x))
}

// logAddExp is log(e^a + e^b) without overflow.
func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}
