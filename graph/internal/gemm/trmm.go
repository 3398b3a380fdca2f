package gemm

import (
	"gonum.org/v1/gonum/blas"
)

// Dtrmm computes B = alpha·op(T)·B (side Left) in place with one packing
// of B (packedTri): each block of rows is one micro-kernel call per sliver
// over the triangle's reach, so a triangular factor times a wide matrix
// (the variational marginals' Lᵀ·A) costs half a general product at the
// general product's rate. Right-side products are left to gonum.
func (impl Implementation) Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	defer start().done()
	if vectorLeft(s, n, ldb, len(b), m) {
		if alpha == 0 {
			scaleColumn(0, m, b, ldb)
			return
		}
		impl.Implementation.Dtrmv(ul, tA, d, m, a, lda, b, ldb)
		scaleColumn(alpha, m, b, ldb)
		return
	}
	if !blockedLeft(s, ul, tA, d, m, n, lda, ldb, len(a), len(b)) {
		impl.Implementation.Dtrmm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	if alpha == 0 { // as BLAS: B is set to zero, not read
		for i := 0; i < m; i++ {
			clear(b[i*ldb : i*ldb+n])
		}
		return
	}
	packedTri(false, ul, tA != blas.NoTrans, d, m, n, alpha, a, lda, b, ldb)
}
