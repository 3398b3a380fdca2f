package rmgpc

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/integrate/quad"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// predictBatch bounds the test rows per kernel evaluation (memory n × rows
// per class).
const predictBatch = 512

// Predict returns the predictive class probabilities (eq. 19) of the n rows
// of x (row-major n×D, raw inputs: the model applies its own
// standardisation), as n×C row-major probabilities:
//
//	P(y⋆ = k) = ρ/l + (1 − ρ) ∫ N(u | m_k, v_k) ∏_{k'≠k} Φ((u − m_{k'})/√v_{k'}) du,
//
// ρ = a/(a+b) (exact under Q, the integrand being linear in ρ; 0 for
// SMGPC), each integral by 1-D quadrature in u (see argmaxProb). The rows
// sum to one up to the quadrature error (below 1e-9 in the tests), which is
// not hidden by renormalising.
func (m *Model) Predict(x []float64, n int) ([]float64, error) {
	if m.Post == nil {
		return nil, fmt.Errorf("rmgpc: model not fitted")
	}
	if n < 0 || len(x) != n*m.D {
		return nil, fmt.Errorf("rmgpc: %d values for %d rows of %d inputs", len(x), n, m.D)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("rmgpc: input %d of test row %d is %v", i%m.D, i/m.D, v)
		}
	}
	out := make([]float64, 0, n*m.C)
	gh := newHermite(m.Config.Quadrature)
	rho := m.Post.Rho()
	mean, vari := make([][]float64, m.C), make([][]float64, m.C)
	for start := 0; start < n; start += predictBatch {
		rows := min(predictBatch, n-start)
		xs := append([]float64(nil), x[start*m.D:(start+rows)*m.D]...)
		m.standardize(xs, rows)
		if err := m.latent(xs, rows, mean, vari); err != nil {
			return nil, err
		}
		mk, vk := make([]float64, m.C), make([]float64, m.C)
		for r := 0; r < rows; r++ {
			for k := range mk {
				mk[k], vk[k] = mean[k][r], vari[k][r]
			}
			for k := range mk {
				out = append(out, rho/float64(m.C)+(1-rho)*gh.argmaxProb(k, mk, vk))
			}
		}
	}
	return out, nil
}

// Latent returns the predictive means and variances of every class's latent
// function at the n rows of x (raw inputs), as mean[k][r], vari[k][r]
// (eq. 20).
func (m *Model) Latent(x []float64, n int) (mean, vari [][]float64, err error) {
	if len(x) != n*m.D {
		return nil, nil, fmt.Errorf("rmgpc: %d values for %d rows of %d inputs", len(x), n, m.D)
	}
	xs := append([]float64(nil), x...)
	m.standardize(xs, n)
	mean, vari = make([][]float64, m.C), make([][]float64, m.C)
	return mean, vari, m.latent(xs, n, mean, vari)
}

// latent fills mean[k] and vari[k] for standardised rows xs:
// m_k = k⋆ᵀK_k⁻¹μ_k and v_k = κ_k − k⋆ᵀ(K_k⁻¹ − K_k⁻¹Σ_kK_k⁻¹)k⋆
// = κ_k − ‖u‖² + ‖U⁻ᵀu‖² with u = L⁻¹k⋆, by triangular solves.
func (m *Model) latent(xs []float64, rows int, mean, vari [][]float64) error {
	n := m.N
	kstar, kdiag, err := m.crossCov(xs, rows)
	if err != nil {
		return err
	}
	p := m.Post
	gen := func(r, c int, d []float64) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: c, Data: d}
	}
	// U = L⁻¹ K⋆ᵀ (n × rows), per distinct prior factor.
	us := map[*float64][]float64{}
	for k := 0; k < m.C; k++ {
		L := p.prior.L[k]
		cp := p.classes[k]
		u, ok := us[&L[0]]
		if !ok {
			u = make([]float64, n*rows)
			for r := 0; r < rows; r++ {
				for i := 0; i < n; i++ {
					u[i*rows+r] = kstar[r*n+i]
				}
			}
			blas64.Trsm(blas.Left, blas.NoTrans, 1, lower(n, L), gen(n, rows, u))
			us[&L[0]] = u
		}
		mean[k], vari[k] = make([]float64, rows), make([]float64, rows)
		alpha := cp.alphaOf(n, L)
		blas64.Gemv(blas.NoTrans, 1, gen(rows, n, kstar), blas64.Vector{N: n, Inc: 1, Data: alpha}, 0, blas64.Vector{N: rows, Inc: 1, Data: mean[k]})
		z := append([]float64(nil), u...)
		blas64.Trsm(blas.Left, blas.Trans, 1, upper(n, cp.uc), gen(n, rows, z))
		kappa := m.Config.Jitter
		if m.noise != nil {
			kappa += m.noise[k].Value(0)
		}
		for r := 0; r < rows; r++ {
			vari[k][r] = kdiag[r] + kappa
		}
		for i := 0; i < n; i++ {
			ui, zi := u[i*rows:(i+1)*rows], z[i*rows:(i+1)*rows]
			for r := range ui {
				vari[k][r] += zi[r]*zi[r] - ui[r]*ui[r]
			}
		}
		for r := range vari[k] {
			// Round-off can leave a hair below zero at a training input
			// that the data pin down; the latent variance is non-negative.
			vari[k][r] = math.Max(vari[k][r], 1e-12)
		}
	}
	return nil
}

// crossCov evaluates k(x⋆, X) (rows × N) and k(x⋆, x⋆) with the kernel's
// graph code, so that any kernel predicts as it trains.
func (m *Model) crossCov(xs []float64, rows int) (kstar, kdiag []float64, err error) {
	g := G.NewGraph()
	s := layers.NewScope(g)
	e := &graph.Chain{}
	xn := graph.Input(g, "rmgpc/xstar", tensor.Shape{rows, m.D}, xs)
	tn := graph.Input(g, "rmgpc/x", tensor.Shape{m.N, m.D}, m.X)
	kx := e.Do(m.kernel.K(s, xn, tn))
	kd := e.Do(m.kernel.Diag(s, xn))
	if e.Err != nil {
		return nil, nil, e.Err
	}
	prog, err := graph.Compile(g, kx, kd)
	if err != nil {
		return nil, nil, err
	}
	defer prog.Close()
	if err := s.Sync(); err != nil {
		return nil, nil, err
	}
	if err := prog.Run(); err != nil {
		return nil, nil, err
	}
	if kstar, err = prog.Float64s(kx); err != nil {
		return nil, nil, err
	}
	kdiag, err = prog.Float64s(kd)
	return kstar, kdiag, err
}

// hermite holds the quadrature rules of the predictive integral: a
// Gauss–Hermite rule for ∫ e^{−t²} f(t) dt and a 20-node Gauss–Legendre
// rule on [−1, 1] for the composite rule.
type hermite struct{ t, w, lx, lw []float64 }

func newHermite(n int) hermite {
	h := hermite{t: make([]float64, n), w: make([]float64, n), lx: make([]float64, 20), lw: make([]float64, 20)}
	quad.Hermite{}.FixedLocations(h.t, h.w, math.Inf(-1), math.Inf(1))
	for i := range h.w {
		h.w[i] /= math.SqrtPi
	}
	quad.Legendre{}.FixedLocations(h.lx, h.lw, -1, 1)
	return h
}

// hermiteRatio is the largest ratio of latent variances handed to
// Gauss–Hermite: the Φ factors of a latent much narrower than f_k's are
// near-steps on the scale of the nodes, and with 96 nodes the rows' sums
// drift from one by ~1e-9 at a ratio of 5 but ~2e-4 at 30.
const hermiteRatio = 4

// argmaxProb is ∫ N(u | m_k, v_k) ∏_{k'≠k} Φ((u − m_{k'})/√v_{k'}) du: the
// probability that f_k is the largest of independent N(m, v) latents. With
// comparable variances it is Gauss–Hermite in u = m_k + √(2v_k) t;
// otherwise a composite Gauss–Legendre rule whose panels break at every
// latent's mean ± 1, 2, 4, 8 standard deviations, so that each step-like
// Φ and the Gaussian are resolved on their own scales.
func (h hermite) argmaxProb(k int, m, v []float64) float64 {
	vmin, vmax := v[0], v[0]
	for _, x := range v {
		vmin, vmax = math.Min(vmin, x), math.Max(vmax, x)
	}
	integrand := h.integrand(k, m, v)
	if vmax <= hermiteRatio*vmin {
		return h.gaussHermite(k, m, v, integrand)
	}
	return h.composite(k, m, v, integrand)
}

// integrand is u ↦ ∏_{k'≠k} Φ((u − m_{k'})/√v_{k'}).
func (h hermite) integrand(k int, m, v []float64) func(float64) float64 {
	return func(u float64) float64 {
		var lp float64
		for kk := range m {
			if kk != k {
				lp += graph.LogNormCDFValue((u - m[kk]) / math.Sqrt(v[kk]))
			}
		}
		return math.Exp(lp)
	}
}

func (h hermite) gaussHermite(k int, m, v []float64, integrand func(float64) float64) float64 {
	sk := math.Sqrt(v[k])
	var total float64
	for j, t := range h.t {
		total += h.w[j] * integrand(m[k]+math.Sqrt2*sk*t)
	}
	return total
}

func (h hermite) composite(k int, m, v []float64, integrand func(float64) float64) float64 {
	sk := math.Sqrt(v[k])
	lo, hi := m[k]-10*sk, m[k]+10*sk
	bps := []float64{lo, hi}
	offs := []float64{-8, -4, -2, -1, 0, 1, 2, 4, 8}
	for kk := range m {
		s := math.Sqrt(v[kk])
		for _, o := range offs {
			if b := m[kk] + o*s; b > lo && b < hi {
				bps = append(bps, b)
			}
		}
	}
	slices.Sort(bps)
	var total float64
	for i := 1; i < len(bps); i++ {
		a, b := bps[i-1], bps[i]
		if !(b > a) {
			continue
		}
		c, r := (a+b)/2, (b-a)/2
		for j, x := range h.lx {
			u := c + r*x
			z := (u - m[k]) / sk
			total += h.lw[j] * r * math.Exp(-z*z/2) / (sk * math.Sqrt(2*math.Pi)) * integrand(u)
		}
	}
	return total
}
