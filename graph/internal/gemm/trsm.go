package gemm

import "gonum.org/v1/gonum/blas"

// trsmBlock is the diagonal block solved by substitution; everything off
// the diagonal becomes a Dgemm update, which is where the time goes.
const trsmBlock = 32

// Dtrsm solves op(T)·X = alpha·B (side Left) for X, overwriting B, by
// blocked substitution: the off-diagonal work is done by this package's
// Dgemm, the 32×32 diagonal blocks by gonum. gonum's own Dtrsm runs at
// its axpy speed, ~1 G multiply-adds/s, and was 20% of the MNIST step.
// Right-side solves are left to gonum.
func (impl Implementation) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	if KernelName == "go" || s != blas.Left || m <= trsmBlock || m*m*n < 2*smallMin ||
		(ul != blas.Upper && ul != blas.Lower) || (tA != blas.NoTrans && tA != blas.Trans && tA != blas.ConjTrans) ||
		(d != blas.Unit && d != blas.NonUnit) || n < 0 || lda < max(1, m) || ldb < max(1, n) ||
		len(a) < lda*(m-1)+m || len(b) < ldb*(m-1)+n {
		impl.Implementation.Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	if alpha != 1 {
		for i := 0; i < m; i++ {
			row := b[i*ldb : i*ldb+n]
			for j := range row {
				row[j] *= alpha
			}
		}
	}
	trans := tA != blas.NoTrans
	// op(T) lower: forward substitution; op(T) upper: backward.
	forward := (ul == blas.Lower) != trans
	nb := ceilDiv(m, trsmBlock)
	for step := 0; step < nb; step++ {
		blk := step
		if !forward {
			blk = nb - 1 - step
		}
		i0 := blk * trsmBlock
		ib := min(trsmBlock, m-i0)
		bi := b[i0*ldb:]
		// B_i −= op(T)[i, solved] · X[solved]
		if forward && i0 > 0 {
			if !trans { // T lower: the block row T[i0:i0+ib, 0:i0]
				Dgemm(false, false, ib, n, i0, -1, a[i0*lda:], lda, b, ldb, 1, bi, ldb)
			} else { // T upper, op(T) = Tᵀ: the block column T[0:i0, i0:i0+ib]
				Dgemm(true, false, ib, n, i0, -1, a[i0:], lda, b, ldb, 1, bi, ldb)
			}
		}
		if !forward && i0+ib < m {
			rest := m - i0 - ib
			xs := b[(i0+ib)*ldb:]
			if !trans { // T upper: the block row T[i0:i0+ib, i0+ib:m]
				Dgemm(false, false, ib, n, rest, -1, a[i0*lda+i0+ib:], lda, xs, ldb, 1, bi, ldb)
			} else { // T lower, op(T) = Tᵀ: the block column T[i0+ib:m, i0:i0+ib]
				Dgemm(true, false, ib, n, rest, -1, a[(i0+ib)*lda+i0:], lda, xs, ldb, 1, bi, ldb)
			}
		}
		impl.Implementation.Dtrsm(blas.Left, ul, tA, d, ib, n, 1, a[i0*lda+i0:], lda, bi, ldb)
	}
}
