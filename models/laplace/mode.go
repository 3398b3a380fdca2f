package laplace

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/solvers"
)

// problem is one training set with the graphs every evaluation reuses.
type problem struct {
	n, l int
	lik  *likGraph
	kern *kernGraph
	set  Settings
}

// mode is the Laplace approximation at one setting of the parameters. The
// Newton iteration runs in whitened coordinates, f_c = L_c v_c with
// K_c = L_c L_cᵀ, so the prior term is −½‖v‖² and the negative Hessian is
// A = I + Lᵀ W L (L = blockdiag(L_c), W = −∇²ℓ block-diagonal per row),
// whose Cholesky factor gives the Newton step and ½ log|I + K W| = ½ log|A|.
type mode struct {
	L []*mat.Dense // lower Cholesky factors of K_c (n×n)

	V, F []float64 // n×L, row-major: whitened and latent values, F_c = L_c V_c
	grad []float64 // ∂ℓ/∂F at F (n×L); at the mode, K⁻¹f̂
	hess []float64 // per-row blocks ∂²ℓ_i/∂f_im∂f_ik, [i*L*L+m*L+k]

	chA      *mat.Cholesky // A, class-major ordering (index k*n+i)
	ll, psi  float64       // ℓ(f̂) and ℓ(f̂) − ½ f̂ᵀK⁻¹f̂
	logDetA  float64
	evidence float64 // the Laplace approximation to log p(y | X, θ)

	iters    int
	gradNorm float64 // max |∇_v Ψ| at the returned point
	// minEig estimates the smallest eigenvalue of A: below 1 where W is
	// indefinite (a likelihood not log-concave in f), near 0 where the mode
	// is about to merge with a saddle and −½ log|A| → +∞.
	minEig float64
}

// errNotMaximum reports a stationary point where A is not positive
// definite: a saddle, so there is no Laplace approximation there.
var errNotMaximum = errors.New("laplace: the Newton iteration ended where the log posterior is not locally concave")

// factors returns the Cholesky factors of the prior covariances at the
// current parameters; a failure is solvers.ErrNotPositiveDefinite, which
// the L-BFGS driver answers by raising the jitter.
func (p *problem) factors() ([]*mat.Dense, error) {
	ks, err := p.kern.covariances()
	if err != nil {
		return nil, err
	}
	out := make([]*mat.Dense, len(ks))
	done := map[*float64]*mat.Dense{}
	for c, k := range ks {
		if d, ok := done[&k[0]]; ok {
			out[c] = d
			continue
		}
		for _, v := range k {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("laplace: the kernel matrix of latent function %d is not finite: %w", c, solvers.ErrNotPositiveDefinite)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(p.n, append([]float64(nil), k...))) {
			return nil, fmt.Errorf("laplace: the kernel matrix of latent function %d: %w", c, solvers.ErrNotPositiveDefinite)
		}
		var lt mat.TriDense
		ch.LTo(&lt)
		out[c] = mat.DenseCopyOf(&lt)
		done[&k[0]] = out[c]
	}
	return out, nil
}

// findMode runs damped Newton from v0 (nil: the prior mean) on the
// factors L and returns the Laplace approximation there. It stops with
// ctx's error when ctx is cancelled.
func (p *problem) findMode(ctx context.Context, L []*mat.Dense, v0 []float64) (*mode, error) {
	n, l := p.n, p.l
	m := &mode{L: L, V: make([]float64, n*l), F: make([]float64, n*l)}
	if v0 != nil {
		copy(m.V, v0)
	}
	vNew := make([]float64, n*l)
	fNew := make([]float64, n*l)
	step := make([]float64, n*l)
	finish := func(ch *mat.Cholesky) {
		m.chA = ch
		m.logDetA = ch.LogDet()
		m.evidence = m.psi - 0.5*m.logDetA
		m.minEig = minEigenvalue(ch, n*l)
	}
	for it := 0; ; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.latent(L, m.V, m.F)
		ll, grad, hess, err := p.lik.newtonTerms(m.F)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(ll) || math.IsInf(ll, 0) {
			return nil, fmt.Errorf("%w (log p(y | f) = %v at Newton iteration %d)", errNoDerivatives, ll, it)
		}
		if it == 0 && maxAbs(grad) == 0 && maxAbs(hess) == 0 {
			// Piecewise constant in f (an exact step likelihood): the
			// Gaussian at the mode would be the prior, whatever the labels.
			return nil, fmt.Errorf("%w (its gradient and curvature are zero at every row)", errNoDerivatives)
		}
		m.ll, m.grad, m.hess, m.iters = ll, grad, hess, it
		m.psi = ll - 0.5*dot(m.V, m.V)
		gv := p.whitenedGrad(L, grad, m.V)
		m.gradNorm = maxAbs(gv)
		A := p.negHessian(L, hess)
		ch, lambda := factorizeDamped(A, n*l)
		if ch == nil {
			return nil, errors.New("laplace: Newton system not positive definite even with damping")
		}
		if m.gradNorm < p.set.NewtonTol || it >= p.set.MaxNewton {
			if lambda > 0 {
				return nil, errNotMaximum
			}
			finish(ch)
			if m.gradNorm >= p.set.NewtonTol {
				return m, fmt.Errorf("laplace: Newton did not converge in %d iterations (max |∇Ψ| = %g)", it, m.gradNorm)
			}
			return m, nil
		}
		dv := mat.NewVecDense(n*l, nil)
		if err := ch.SolveVecTo(dv, mat.NewVecDense(n*l, gv)); err != nil {
			return nil, fmt.Errorf("laplace: Newton step: %w", err)
		}
		for k := range l {
			for i := range n {
				step[i*l+k] = dv.AtVec(k*n + i)
			}
		}
		slope := dot(gv, dv.RawVector().Data) // > 0: the (damped) system is positive definite
		// Backtracking (Armijo) on Ψ, allowing for Ψ's rounding error: near
		// the mode the predicted gain falls below it, and a strict test
		// would reject the quadratically convergent full step.
		noise := 64 * epsilon * (math.Abs(m.ll) + 0.5*dot(m.V, m.V) + 1)
		alpha, accepted := 1.0, false
		for range 60 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for i := range vNew {
				vNew[i] = m.V[i] + alpha*step[i]
			}
			p.latent(L, vNew, fNew)
			lln, err := p.lik.value(fNew)
			if err == nil && !math.IsNaN(lln) && !math.IsInf(lln, 0) {
				if lln-0.5*dot(vNew, vNew) >= m.psi+1e-4*alpha*slope-noise {
					accepted = true
					break
				}
			}
			alpha /= 2
		}
		if !accepted {
			// No increase is representable along the Newton direction: Ψ is
			// maximised to working precision.
			if lambda > 0 {
				return nil, errNotMaximum
			}
			finish(ch)
			if m.gradNorm > 1e-6 {
				return m, fmt.Errorf("laplace: Newton line search failed with max |∇Ψ| = %g", m.gradNorm)
			}
			return m, nil
		}
		copy(m.V, vNew)
	}
}

// latent writes F_c = L_c V_c.
func (p *problem) latent(L []*mat.Dense, v, f []float64) {
	n, l := p.n, p.l
	col := make([]float64, n)
	for c := range l {
		for i := range n {
			col[i] = v[i*l+c]
		}
		lc := L[c].RawMatrix()
		for i := range n {
			row := lc.Data[i*lc.Stride : i*lc.Stride+i+1]
			var s float64
			for j, a := range row {
				s += a * col[j]
			}
			f[i*l+c] = s
		}
	}
}

// whitenedGrad returns L_cᵀ ∂ℓ/∂F_c − V_c, class-major.
func (p *problem) whitenedGrad(L []*mat.Dense, grad, v []float64) []float64 {
	n, l := p.n, p.l
	out := make([]float64, n*l)
	g := make([]float64, n)
	for c := range l {
		for i := range n {
			g[i] = grad[i*l+c]
		}
		var r mat.VecDense
		r.MulVec(L[c].T(), mat.NewVecDense(n, g))
		for i := range n {
			out[c*n+i] = r.AtVec(i) - v[i*l+c]
		}
	}
	return out
}

// wAt returns W_i[k][k'] = −∂²ℓ_i/∂f_ik∂f_ik'.
func wAt(hess []float64, l, i, k, k2 int) float64 { return -hess[i*l*l+k*l+k2] }

// negHessian assembles A = I + Lᵀ W L (nL×nL, class-major): block (k, k')
// is δ_kk' I + L_kᵀ diag(w_kk') L_k' with w_kk'(i) = W_i[k][k'].
func (p *problem) negHessian(L []*mat.Dense, hess []float64) []float64 {
	n, l := p.n, p.l
	N := n * l
	a := make([]float64, N*N)
	dl := mat.NewDense(n, n, nil)
	var blk mat.Dense
	for k := range l {
		for k2 := k; k2 < l; k2++ {
			zero := true
			for i := range n {
				w := wAt(hess, l, i, k, k2)
				zero = zero && w == 0
				row := L[k2].RawRowView(i)
				dst := dl.RawRowView(i)
				for j := range row {
					dst[j] = w * row[j]
				}
			}
			if zero {
				continue
			}
			blk.Reset()
			blk.Mul(L[k].T(), dl)
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
// not positive definite: away from the mode a likelihood that is not
// log-concave makes −∇²Ψ indefinite, and the damped system still gives an
// ascent direction. It returns the λ used.
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
	b := make([]float64, len(a))
	for range 40 {
		copy(b, a)
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
// iteration (two triangular solves a step). The Rayleigh quotient of A⁻¹
// approaches λ_max(A⁻¹) from below, so an unconverged estimate errs high;
// 100 steps are ample for the guard it serves.
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
		next := mat.Dot(v, w)
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
