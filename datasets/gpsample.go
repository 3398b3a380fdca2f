package datasets

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"
)

// seKernel is the paper's squared-exponential kernel
// k(x,x') = amp·exp(−½ Σ_j (x_j−x'_j)²/sqLs), where sqLs (the paper's ℓ_j)
// divides the squared difference, i.e. it is a squared length-scale — this
// is how both the paper's formula and the authors' code read (see
// shared/docs/noisy-inputs-paper-versions-and-tables.md §1).
func seKernel(a, b []float64, amp, sqLs float64) float64 {
	var s float64
	for j := range a {
		d := a[j] - b[j]
		s += d * d
	}
	return amp * math.Exp(-0.5*s/sqLs)
}

// sampleGP draws nf independent functions from GP(0, k + sigma0sq·I) at the
// n points of x (row-major n×d), exactly, via a Cholesky factor of the n×n
// covariance. The SE kernel on dense points is numerically singular, so a
// jitter (relative to amp) is added to the diagonal, starting at 1e-10 and
// multiplied by 10 until the factorisation succeeds; the jitter used is
// returned. Its effect is white noise of standard deviation √jitter, far
// below any scale that matters for argmax labels. alpha[c] = (K + jitter·I +
// sigma0sq·I)⁻¹ f_c, the weights of the GP posterior mean given the draw
// (SyntheticOracle), comes out as Lᵀ⁻¹ z_c of the standard normals z_c
// behind f_c = L z_c: one triangular solve, no second factorisation.
//
// It returns ctx's error once ctx is done, checked every 64 rows of the
// covariance, between the blocks of the factorisation (64 columns: at
// n = 6000 a check every few tens of milliseconds of a factorisation of
// seconds) and between the functions drawn.
func sampleGP(ctx context.Context, x []float64, n, d int, amp, sqLs, sigma0sq float64, nf int, r *rand.Rand) (f, alpha [][]float64, jitter float64, err error) {
	if err := ctx.Err(); err != nil { // before allocating the n×n covariance
		return nil, nil, 0, err
	}
	k := mat.NewSymDense(n, nil)
	for i := range n {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, 0, err
			}
		}
		xi := x[i*d : (i+1)*d]
		for j := 0; j <= i; j++ {
			k.SetSym(i, j, seKernel(xi, x[j*d:(j+1)*d], amp, sqLs))
		}
	}
	var l *mat.TriDense
	for rel := 1e-10; ; rel *= 10 {
		if rel > 1e-3 {
			return nil, nil, 0, fmt.Errorf("datasets: GP covariance of %d points not positive definite even with jitter %g", n, jitter)
		}
		jitter = rel * amp
		kj := mat.NewSymDense(n, nil)
		kj.CopySym(k)
		for i := range n {
			kj.SetSym(i, i, kj.At(i, i)+jitter+sigma0sq)
		}
		var ok bool
		if l, ok, err = choleskyL(ctx, kj); err != nil {
			return nil, nil, 0, err
		}
		if ok {
			break
		}
	}
	f, alpha = make([][]float64, nf), make([][]float64, nf)
	z := mat.NewVecDense(n, nil)
	for c := range nf {
		if err := ctx.Err(); err != nil {
			return nil, nil, 0, err
		}
		for i := range n {
			z.SetVec(i, r.NormFloat64())
		}
		var fc mat.VecDense
		fc.MulVec(l, z)
		f[c] = make([]float64, n)
		for i := range n {
			f[c][i] = fc.AtVec(i)
		}
		alpha[c] = make([]float64, n)
		for i := range n {
			alpha[c][i] = z.AtVec(i)
		}
		blas64.Trsv(blas.Trans, l.RawTriangular(), blas64.Vector{N: n, Data: alpha[c], Inc: 1})
	}
	return f, alpha, jitter, nil
}

// choleskyL factorises a = L Lᵀ, overwriting a, and returns L, with ok
// false when a is not positive definite. It is gonum's blocked Dpotrf
// (upper storage, as mat.Cholesky.Factorize calls it) step for step, the
// same BLAS calls in the same order, so its factor is bit for bit
// mat.Cholesky's (TestCholeskyLMatchesGonum) and the data sets drawn
// before stay the same; what it adds is a check of ctx before each block
// of columns, which the single gonum call cannot give.
func choleskyL(ctx context.Context, a *mat.SymDense) (l *mat.TriDense, ok bool, err error) {
	raw := a.RawSymmetric()
	n, lda, u := raw.N, raw.Stride, raw.Data
	if raw.Uplo != blas.Upper {
		return nil, false, fmt.Errorf("datasets: choleskyL: want upper storage")
	}
	impl := lapackgonum.Implementation{}
	bi := blas64.Implementation()
	nb := impl.Ilaenv(1, "DPOTRF", string(blas.Upper), n, -1, -1, -1)
	if nb <= 1 || n <= nb {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		ok = impl.Dpotf2(blas.Upper, n, u, lda)
	} else {
		ok = true
		for j := 0; j < n && ok; j += nb {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			jb := min(nb, n-j)
			bi.Dsyrk(blas.Upper, blas.Trans, jb, j,
				-1, u[j:], lda,
				1, u[j*lda+j:], lda)
			if ok = impl.Dpotf2(blas.Upper, jb, u[j*lda+j:], lda); !ok {
				break
			}
			if j+jb < n {
				bi.Dgemm(blas.Trans, blas.NoTrans, jb, n-j-jb, j,
					-1, u[j:], lda, u[j+jb:], lda,
					1, u[j*lda+j+jb:], lda)
				bi.Dtrsm(blas.Left, blas.Upper, blas.Trans, blas.NonUnit, jb, n-j-jb,
					1, u[j*lda+j:], lda,
					u[j*lda+j+jb:], lda)
			}
		}
	}
	if !ok {
		return nil, false, nil
	}
	// L = Uᵀ, copied as mat.Cholesky.LTo copies it.
	ld := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			ld[i*n+j] = u[j*lda+i]
		}
	}
	return mat.NewTriDense(n, mat.Lower, ld), true, nil
}

// argmax returns the index of the largest f[c][i] over c (lowest c on ties),
// the paper's labelling rule (1): y = argmax_c f^c(x).
func argmax(f [][]float64, i int) int {
	best := 0
	for c := 1; c < len(f); c++ {
		if f[c][i] > f[best][i] {
			best = c
		}
	}
	return best
}
