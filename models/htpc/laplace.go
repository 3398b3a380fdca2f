package htpc

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Hyper holds HTPC's hyper-parameters on the log scale, where the evidence
// is maximised: the kernel's log length-scale (γ of the paper's kernel (22)
// is the squared length-scale, γ = exp(2·LogEll)), the log amplitude of the
// latent Gaussian process, and log b_k, the scale of the hyperbolic-secant
// marginal of class k.
type Hyper struct {
	// LogEll is log ℓ, the kernel's log length-scale (γ = ℓ²).
	LogEll float64 `json:"log_ell"`
	// LogSigma is log σ, the latent Gaussian processes' log amplitude
	// (0 for the copula reading's unit-variance processes).
	LogSigma float64 `json:"log_sigma"`
	// LogB holds log b_k, one per class.
	LogB []float64 `json:"log_b"`
}

// Gamma is the paper's kernel parameter γ = ℓ², for reporting.
func (h Hyper) Gamma() float64 { return math.Exp(2 * h.LogEll) }

// B returns the marginal scales b_k.
func (h Hyper) B() []float64 {
	b := make([]float64, len(h.LogB))
	for k, v := range h.LogB {
		b[k] = math.Exp(v)
	}
	return b
}

func (h Hyper) clone() Hyper {
	h.LogB = append([]float64(nil), h.LogB...)
	return h
}

// problem is one training set with the parts every evaluation reuses.
type problem struct {
	n, d, l int
	x       []float64 // n×d
	y       []int
	d2      []float64 // n×n squared distances
	jitter  float64
	lik     *likGraph
	kern    *kernGraph

	newtonTol float64
	maxNewton int
}

func newProblem(x []float64, n, d int, y []int, l int, jitter, newtonTol float64, maxNewton int) (*problem, error) {
	p := &problem{n: n, d: d, l: l, x: x, y: y, jitter: jitter, newtonTol: newtonTol, maxNewton: maxNewton}
	p.d2 = sqDists(x, n, x, n, d)
	var err error
	if p.lik, err = newLikGraph(y, l); err != nil {
		return nil, err
	}
	if p.kern, err = newKernGraph(p.d2, n); err != nil {
		p.lik.close()
		return nil, err
	}
	return p, nil
}

func (p *problem) close() {
	p.lik.close()
	p.kern.close()
}

// sqDists returns the na×nb matrix of squared distances between the rows of
// a and of b.
func sqDists(a []float64, na int, b []float64, nb, d int) []float64 {
	out := make([]float64, na*nb)
	for i := range na {
		ai := a[i*d : (i+1)*d]
		for j := range nb {
			bj := b[j*d : (j+1)*d]
			var s float64
			for t := range d {
				u := ai[t] - bj[t]
				s += u * u
			}
			out[i*nb+j] = s
		}
	}
	return out
}

// seKernel is σ² exp(−d²/(2ℓ²)) elementwise on squared distances: kernel
// (22) of the paper with an amplitude.
func seKernel(d2 []float64, h Hyper) []float64 {
	s2 := math.Exp(2 * h.LogSigma)
	c := 0.5 * math.Exp(-2*h.LogEll)
	out := make([]float64, len(d2))
	for i, v := range d2 {
		out[i] = s2 * math.Exp(-c*v)
	}
	return out
}

// mode is the Laplace approximation at one setting of the hyper-parameters.
// The Newton iteration runs in whitened coordinates, g_k = L v_k with
// K = L Lᵀ, so the prior term is −½‖v‖² and the negative Hessian is
// A = I + Lᵀ W L (W = −∇²ℓ, block-diagonal per point), whose Cholesky
// factor gives both the Newton step and ½ log|I + K W| = ½ log|A|.
type mode struct {
	hyp Hyper
	b   []float64
	L   *mat.Dense // lower Cholesky factor of K (n×n)

	V, G []float64 // n×l, row-major: whitened and latent values, G = L V
	grad []float64 // ∂ℓ/∂G at G (n×l); at the mode, K⁻¹ĝ
	hess []float64 // per-point blocks ∂²ℓ_i/∂g_im∂g_ik, [i*l*l+m*l+k]

	chA     *mat.Cholesky // A, class-major ordering (index k*n+i)
	ll, psi float64       // ℓ(ĝ) and ℓ(ĝ) − ½ĝᵀK⁻¹ĝ
	logDetA float64
	// Evidence is the Laplace approximation to log p(y | X, θ).
	evidence float64

	iters    int
	gradNorm float64 // ‖∇_v Ψ‖₂ at the returned point
	// minEig estimates the smallest eigenvalue of A. Below 1 where W is
	// indefinite; near 0 the mode is about to merge with a saddle (a fold),
	// where −½ log|A| → +∞ and the Laplace evidence is meaningless.
	minEig float64
}

// errNotMaximum reports a stationary point where A is not positive
// definite: a saddle, so there is no Laplace approximation there.
var errNotMaximum = errors.New("htpc: the Newton iteration ended where the log posterior is not locally concave")

// findMode runs damped Newton from v0 (nil: the prior mean) and returns the
// Laplace approximation at h.
func (p *problem) findMode(h Hyper, v0 []float64) (*mode, error) {
	n, l := p.n, p.l
	kv := seKernel(p.d2, h)
	for i := range n {
		kv[i*n+i] += p.jitter
	}
	var chK mat.Cholesky
	if !chK.Factorize(mat.NewSymDense(n, kv)) {
		return nil, fmt.Errorf("htpc: kernel matrix not positive definite at ℓ=%g σ=%g", math.Exp(h.LogEll), math.Exp(h.LogSigma))
	}
	var lt mat.TriDense
	chK.LTo(&lt)
	m := &mode{hyp: h.clone(), b: h.B(), L: mat.DenseCopyOf(&lt)}
	m.V = make([]float64, n*l)
	if v0 != nil {
		copy(m.V, v0)
	}
	m.G = make([]float64, n*l)
	vNew := make([]float64, n*l)
	gNew := make([]float64, n*l)
	step := make([]float64, n*l)
	for it := 0; ; it++ {
		p.latent(m.L, m.V, m.G)
		ll, grad, hess, err := p.lik.newtonTerms(m.G, m.b)
		if err != nil {
			return nil, err
		}
		m.ll, m.grad, m.hess, m.iters = ll, grad, hess, it
		m.psi = ll - 0.5*dot(m.V, m.V)
		// ∇_v Ψ = Lᵀ ∂ℓ/∂G − V, in class-major order for the solve.
		gv := p.whitenedGrad(m.L, grad, m.V)
		m.gradNorm = math.Sqrt(dot(gv, gv))
		A := p.negHessian(m.L, hess)
		ch, lambda := factorizeDamped(A, n*l)
		if ch == nil {
			return nil, errors.New("htpc: Newton system not positive definite even with damping")
		}
		if maxAbs(gv) < p.newtonTol || it >= p.maxNewton {
			if lambda > 0 {
				return nil, errNotMaximum
			}
			m.chA = ch
			m.logDetA = ch.LogDet()
			m.evidence = m.psi - 0.5*m.logDetA
			m.minEig = minEigenvalue(ch, n*l)
			if it >= p.maxNewton && maxAbs(gv) >= p.newtonTol {
				return m, fmt.Errorf("htpc: Newton did not converge in %d iterations (max |∇Ψ| = %g)", it, maxAbs(gv))
			}
			return m, nil
		}
		dv := mat.NewVecDense(n*l, nil)
		if err := ch.SolveVecTo(dv, mat.NewVecDense(n*l, gv)); err != nil {
			return nil, fmt.Errorf("htpc: Newton step: %w", err)
		}
		for k := range l {
			for i := range n {
				step[i*l+k] = dv.AtVec(k*n + i)
			}
		}
		slope := dot(gv, dv.RawVector().Data) // > 0: A (damped) is positive definite
		// Backtracking (Armijo) on Ψ: the full Newton step near the mode,
		// shorter ones where Ψ is far from quadratic, so it cannot diverge.
		// Ψ's rounding error is allowed for: near the mode the predicted
		// gain ½·slope falls below it, and a strict test would reject the
		// quadratically convergent full step in favour of ever tinier ones.
		noise := 64 * epsilon * (math.Abs(m.ll) + 0.5*dot(m.V, m.V) + 1)
		alpha, accepted := 1.0, false
		for range 60 {
			for i := range vNew {
				vNew[i] = m.V[i] + alpha*step[i]
			}
			p.latent(m.L, vNew, gNew)
			lln, err := p.lik.value(gNew, m.b)
			if err == nil && !math.IsNaN(lln) {
				psiNew := lln - 0.5*dot(vNew, vNew)
				if psiNew >= m.psi+1e-4*alpha*slope-noise {
					accepted = true
					break
				}
			}
			alpha /= 2
		}
		if !accepted {
			// No increase is representable along the Newton direction:
			// Ψ is maximised to working precision.
			if lambda > 0 {
				return nil, errNotMaximum
			}
			m.chA = ch
			m.logDetA = ch.LogDet()
			m.evidence = m.psi - 0.5*m.logDetA
			m.minEig = minEigenvalue(ch, n*l)
			if maxAbs(gv) > 1e-6 {
				return m, fmt.Errorf("htpc: Newton line search failed with max |∇Ψ| = %g", maxAbs(gv))
			}
			return m, nil
		}
		copy(m.V, vNew)
	}
}

// latent writes G = L V.
func (p *problem) latent(L *mat.Dense, v, g []float64) {
	var gm mat.Dense
	gm.Mul(L, mat.NewDense(p.n, p.l, v))
	copy(g, gm.RawMatrix().Data)
}

// whitenedGrad returns Lᵀ ∂ℓ/∂G − V in class-major order.
func (p *problem) whitenedGrad(L *mat.Dense, grad, v []float64) []float64 {
	n, l := p.n, p.l
	var lg mat.Dense
	lg.Mul(L.T(), mat.NewDense(n, l, grad))
	out := make([]float64, n*l)
	for k := range l {
		for i := range n {
			out[k*n+i] = lg.At(i, k) - v[i*l+k]
		}
	}
	return out
}

// negHessian assembles A = I + Lᵀ W L (nl×nl, class-major), block (k, k')
// being δ_kk' I + Lᵀ diag(w_kk') L with w_kk'(i) = −∂²ℓ_i/∂g_ik∂g_ik'.
func (p *problem) negHessian(L *mat.Dense, hess []float64) []float64 {
	n, l := p.n, p.l
	N := n * l
	a := make([]float64, N*N)
	dl := mat.NewDense(n, n, nil)
	var blk mat.Dense
	for k := range l {
		for k2 := k; k2 < l; k2++ {
			for i := range n {
				w := -hess[i*l*l+k*l+k2]
				row := L.RawRowView(i)
				dst := dl.RawRowView(i)
				for j := range row {
					dst[j] = w * row[j]
				}
			}
			blk.Reset()
			blk.Mul(L.T(), dl)
			for i := range n {
				src := blk.RawRowView(i)
				copy(a[(k*n+i)*N+k2*n:(k*n+i)*N+k2*n+n], src)
				if k2 != k {
					for j, v := range src {
						a[(k2*n+j)*N+k*n+i] = v
					}
				}
			}
		}
		for i := range n {
			a[(k*n+i)*N+k*n+i] += 1
		}
	}
	return a
}

// factorizeDamped factorises A, adding λI (Levenberg–Marquardt) when A is
// not positive definite: away from the mode the heavy-tailed transform makes
// ℓ non-concave in g, so −∇²Ψ can be indefinite, and the damped system
// still gives an ascent direction. It returns the λ used.
func factorizeDamped(a []float64, N int) (*mat.Cholesky, float64) {
	ch := new(mat.Cholesky)
	if ch.Factorize(mat.NewSymDense(N, a)) {
		return ch, 0
	}
	var scale float64
	for i := range N {
		scale = math.Max(scale, math.Abs(a[i*N+i]))
	}
	lambda := 1e-6 * math.Max(scale, 1)
	for range 40 {
		b := append([]float64(nil), a...)
		for i := range N {
			b[i*N+i] += lambda
		}
		if ch.Factorize(mat.NewSymDense(N, b)) {
			return ch, lambda
		}
		lambda *= 10
	}
	return nil, 0
}

// minEigenvalue estimates λ_min(A) from A's Cholesky factor by inverse
// iteration (two triangular solves a step, O(N²), against O(N³) for an
// eigendecomposition). The Rayleigh quotient of A⁻¹ approaches λ_max(A⁻¹)
// from below, so an unconverged estimate errs high; 100 steps are ample
// for the guard it serves.
func minEigenvalue(ch *mat.Cholesky, N int) float64 {
	v := mat.NewVecDense(N, nil)
	for i := range N {
		v.SetVec(i, 1+0.5*math.Sin(float64(i))) // no symmetry for an eigenvector to be orthogonal to
	}
	v.ScaleVec(1/mat.Norm(v, 2), v)
	w := mat.NewVecDense(N, nil)
	var rq float64
	for it := range 100 {
		if err := ch.SolveVecTo(w, v); err != nil {
			return math.NaN()
		}
		next := mat.Dot(v, w) // Rayleigh quotient of A⁻¹ at the unit v
		v.ScaleVec(1/mat.Norm(w, 2), w)
		if it > 5 && math.Abs(next-rq) <= 1e-6*next {
			rq = next
			break
		}
		rq = next
	}
	return 1 / rq
}

// epsilon is the float64 machine epsilon.
const epsilon = 0x1p-52

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func maxAbs(a []float64) float64 {
	var m float64
	for _, v := range a {
		m = math.Max(m, math.Abs(v))
	}
	return m
}
