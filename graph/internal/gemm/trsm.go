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
	if vectorLeft(s, n, ldb, len(b), m) {
		scaleColumn(alpha, m, b, ldb)
		impl.Implementation.Dtrsv(ul, tA, d, m, a, lda, b, ldb)
		return
	}
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

// TrsmTo solves op(T)·X = alpha·B like Dtrsm (side Left) with B read
// from src and X written to dst, which may be the same slice, and reports
// true; for arguments the blocked code does not take (see blockedLeft; a
// single column; alpha 0) it does nothing and reports false, and the
// caller copies B to dst and calls Dtrsm. It saves an op whose result
// must not overwrite its input the copy, a pass over B.
func TrsmTo(ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, src []float64, lds int, dst []float64, ldd int) bool {
	return triTo(triPlan{solve: true, m: m, n: n, src: src, lds: lds, b: dst, ldb: ldd}, ul, tA, d, alpha, a, lda)
}

// TrmmTo computes alpha·op(T)·B like Dtrmm (side Left) with B read from
// src and the result written to dst; see TrsmTo.
func TrmmTo(ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, src []float64, lds int, dst []float64, ldd int) bool {
	return triTo(triPlan{m: m, n: n, src: src, lds: lds, b: dst, ldb: ldd}, ul, tA, d, alpha, a, lda)
}

// triTo runs the call p describes (operands, shape, solve and triRHS
// set) if the blocked code takes it, and reports whether it did.
func triTo(p triPlan, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a []float64, lda int) bool {
	if alpha == 0 || p.n == 1 || !blockedLeft(blas.Left, ul, tA, d, p.m, p.n, lda, p.lds, len(a), len(p.src)) ||
		p.ldb < max(1, p.n) || len(p.b) < p.ldb*(p.m-1)+p.n {
		return false
	}
	defer start().done()
	packedTriPlan(p, ul, tA != blas.NoTrans, d, alpha, a, lda)
	return true
}

// TrsmLowerTo computes tril(op(L)⁻¹·alpha·tril(B)) for a lower-triangular
// m×m L and an m×m B read from src (its strict upper triangle is not read),
// writing the lower-triangular result, zeros above the diagonal, to dst
// (which may be src), and reports true; for arguments the blocked code does
// not take it does nothing and reports false. Column j of the result
// depends on rows j… alone, so the solve skips the zero rows: a third of
// a full solve's multiply-adds. It is the whitened factor L⁻¹L_q of an
// unwhitened variational family, and (transposed) that factor's gradient.
func TrsmLowerTo(tA blas.Transpose, d blas.Diag, m int, alpha float64, a []float64, lda int, src []float64, lds int, dst []float64, ldd int) bool {
	return triTo(triPlan{solve: true, triRHS: true, m: m, n: m, src: src, lds: lds, b: dst, ldb: ldd}, blas.Lower, tA, d, alpha, a, lda)
}

// vectorLeft reports whether a left-side triangular routine has a single
// right-hand column, which the level-2 routines handle 3.5–8× faster than
// the packed path or gonum's Dtrsm (m = 300, one core: a solve 18–21 µs
// against 68–81, a product 8–9 against 68–74; BenchmarkTriVector).
func vectorLeft(s blas.Side, n, ldb, lb, m int) bool {
	return s == blas.Left && n == 1 && m > 0 && ldb >= 1 && lb >= ldb*(m-1)+1
}

// scaleColumn multiplies the column b[0], b[ldb], … b[(m−1)·ldb] by alpha,
// setting it to zero without reading it when alpha is 0, as BLAS does.
func scaleColumn(alpha float64, m int, b []float64, ldb int) {
	switch alpha {
	case 1:
	case 0:
		for i := range m {
			b[i*ldb] = 0
		}
	default:
		for i := range m {
			b[i*ldb] *= alpha
		}
	}
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
