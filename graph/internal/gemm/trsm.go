package gemm

import (
	"gonum.org/v1/gonum/blas"
)

// Dtrsm solves op(T)·X = alpha·B (side Left) for X, overwriting B, with
// one packing of B and the off-diagonal and diagonal work both in the
// micro-kernel (packedTri). gonum's own Dtrsm runs at its axpy speed,
// 1–2 G multiply-adds/s, and was a fifth of the MNIST step. Right-side
// solves, and triangles too small to pack, are left to gonum.
func (impl Implementation) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	defer start().done()
	if !blockedLeft(s, ul, tA, d, m, n, lda, ldb, len(a), len(b)) {
		impl.Implementation.Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	if alpha == 0 { // as BLAS: B is set to zero, not read
		for i := 0; i < m; i++ {
			clear(b[i*ldb : i*ldb+n])
		}
		return
	}
	packedTri(true, ul, tA != blas.NoTrans, d, m, n, alpha, a, lda, b, ldb)
}

// blockedLeft reports whether a left-side triangular routine of these
// arguments goes to this package's blocked code: the assembly kernel runs,
// the triangle spans more than one register tile and the work is worth
// packing, and the arguments are valid (invalid ones go to gonum for its
// standard panics). Narrow right-hand sides are blocked too: for a vector,
// building the coefficient panels costs more than the solve, yet the whole
// still beat gonum's column walk (one core, a transposed solve: 10.6
// against 16.1 µs at m = 100, 68 against 141 µs at m = 300).
func blockedLeft(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n, lda, ldb, la, lb int) bool {
	return KernelName != "go" && s == blas.Left && m > mr && m*m*n >= 2*smallMin &&
		(ul == blas.Upper || ul == blas.Lower) && (tA == blas.NoTrans || tA == blas.Trans || tA == blas.ConjTrans) &&
		(d == blas.Unit || d == blas.NonUnit) && n >= 0 && lda >= max(1, m) && ldb >= max(1, n) &&
		la >= lda*(m-1)+m && lb >= ldb*(m-1)+n
}
