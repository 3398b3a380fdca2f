package gemm

import (
	"gonum.org/v1/gonum/blas"
)

// Dtrmm computes B = alpha·op(T)·B (side Left) in place, by the same
// recursive blocking as Dtrsm: off-diagonal blocks are this package's
// Dgemm, diagonal blocks of at most 16 rows gonum's loops. A triangular
// factor times a wide matrix (the variational marginals' Lᵀ·A) then costs
// half a general product at the general product's rate. Right-side
// products are left to gonum.
func (impl Implementation) Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	defer start().done()
	if !blockedLeft(s, ul, tA, d, m, n, lda, ldb, len(a), len(b)) {
		impl.Implementation.Dtrmm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	trans := tA != blas.NoTrans
	if n1, ok := columnSplit(m, n); ok {
		done := make(chan struct{})
		go func() {
			defer close(done)
			impl.trmm(1, ul, trans, d, m, n-n1, a, lda, b[n1:], ldb)
		}()
		impl.trmm(1, ul, trans, d, m, n1, a, lda, b, ldb)
		<-done
	} else {
		impl.trmm(Procs(), ul, trans, d, m, n, a, lda, b, ldb)
	}
	if alpha != 1 {
		for i := 0; i < m; i++ {
			row := b[i*ldb : i*ldb+n]
			for j := range row {
				row[j] *= alpha
			}
		}
	}
}

// trmm overwrites B with op(T)·B by recursive halving. With op(T) lower,
// [X1; X2] = [A11 B1; A21 B1 + A22 B2]: the second half is finished first,
// while B1 is still the input; with op(T) upper the order is reversed.
func (impl Implementation) trmm(workers int, ul blas.Uplo, trans bool, d blas.Diag, m, n int, a []float64, lda int, b []float64, ldb int) {
	if m <= trsmBlock {
		tA := blas.NoTrans
		if trans {
			tA = blas.Trans
		}
		impl.Implementation.Dtrmm(blas.Left, ul, tA, d, m, n, 1, a, lda, b, ldb)
		return
	}
	h := roundUp(m/2, mr)
	if h >= m {
		h = m / 2
	}
	r := m - h
	b1, b2 := b, b[h*ldb:]
	t11, t22 := a, a[h*lda+h:]
	if lower := (ul == blas.Lower) != trans; lower {
		impl.trmm(workers, ul, trans, d, r, n, t22, lda, b2, ldb)
		if !trans { // A21 = T[h:m, 0:h]
			dgemm(workers, false, false, r, n, h, 1, a[h*lda:], lda, b1, ldb, 1, b2, ldb)
		} else { // A21 = T[0:h, h:m]ᵀ
			dgemm(workers, true, false, r, n, h, 1, a[h:], lda, b1, ldb, 1, b2, ldb)
		}
		impl.trmm(workers, ul, trans, d, h, n, t11, lda, b1, ldb)
		return
	}
	impl.trmm(workers, ul, trans, d, h, n, t11, lda, b1, ldb)
	if !trans { // A12 = T[0:h, h:m]
		dgemm(workers, false, false, h, n, r, 1, a[h:], lda, b2, ldb, 1, b1, ldb)
	} else { // A12 = T[h:m, 0:h]ᵀ
		dgemm(workers, true, false, h, n, r, 1, a[h*lda:], lda, b2, ldb, 1, b1, ldb)
	}
	impl.trmm(workers, ul, trans, d, r, n, t22, lda, b2, ldb)
}
