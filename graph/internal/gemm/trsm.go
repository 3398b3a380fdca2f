package gemm

import (
	"gonum.org/v1/gonum/blas"
)

// trsmBlock is the largest diagonal block solved by substitution;
// everything off the diagonal becomes a Dgemm update.
const trsmBlock = 16

// Dtrsm solves op(T)·X = alpha·B (side Left) for X, overwriting B, by
// recursive blocking: the off-diagonal work is done by this package's
// Dgemm, diagonal blocks of at most 16 rows by gonum's substitution.
// gonum's own Dtrsm runs at its axpy speed, 1–2 G multiply-adds/s, and was
// a fifth of the MNIST step. Right-side solves are left to gonum.
func (impl Implementation) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	defer start().done()
	if !blockedLeft(s, ul, tA, d, m, n, lda, ldb, len(a), len(b)) {
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
	if n1, ok := columnSplit(m, n); ok {
		done := make(chan struct{})
		go func() {
			defer close(done)
			impl.trsm(1, ul, trans, d, m, n-n1, a, lda, b[n1:], ldb)
		}()
		impl.trsm(1, ul, trans, d, m, n1, a, lda, b, ldb)
		<-done
		return
	}
	impl.trsm(Procs(), ul, trans, d, m, n, a, lda, b, ldb)
}

// blockedLeft reports whether a left-side triangular routine of these
// arguments goes to this package's blocked code: the assembly kernel runs,
// the triangle is larger than a leaf and the work worth packing, and the
// arguments are valid (invalid ones go to gonum for its standard panics).
func blockedLeft(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n, lda, ldb, la, lb int) bool {
	return KernelName != "go" && s == blas.Left && m > trsmBlock && m*m*n >= 2*smallMin &&
		(ul == blas.Upper || ul == blas.Lower) && (tA == blas.NoTrans || tA == blas.Trans || tA == blas.ConjTrans) &&
		(d == blas.Unit || d == blas.NonUnit) && n >= 0 && lda >= max(1, m) && ldb >= max(1, n) &&
		la >= lda*(m-1)+m && lb >= ldb*(m-1)+n
}

// columnSplit says whether a left-side triangular routine on an m×n
// right-hand side splits its columns, independent problems, in two halves
// across cores (each half's updates are products too small to split again),
// and where: the first n1 columns, a whole number of micro-kernel columns.
// The callers start the goroutine themselves: a closure handed to a shared
// helper would escape and cost an allocation on the serial path too.
func columnSplit(m, n int) (n1 int, ok bool) {
	if Procs() > 1 && n >= 2*nr && m*m*n >= 2*parallelMin {
		return roundUp(n/2, nr), true
	}
	return 0, false
}

// trsm solves op(T)·X = B in place by recursive halving: solve the first
// half, subtract its contribution from the second with one Dgemm, solve the
// second (the order reversed when op(T) is upper triangular). Only the
// leaves' substitution, about trsmBlock/m of the work, runs at gonum's
// speed.
func (impl Implementation) trsm(workers int, ul blas.Uplo, trans bool, d blas.Diag, m, n int, a []float64, lda int, b []float64, ldb int) {
	if m <= trsmBlock {
		tA := blas.NoTrans
		if trans {
			tA = blas.Trans
		}
		impl.Implementation.Dtrsm(blas.Left, ul, tA, d, m, n, 1, a, lda, b, ldb)
		return
	}
	h := roundUp(m/2, mr) // a whole number of micro-kernel rows
	if h >= m {
		h = m / 2
	}
	r := m - h
	b1, b2 := b, b[h*ldb:]
	t11, t22 := a, a[h*lda+h:]
	// op(T) = [A11 0; A21 A22] (forward) or [A11 A12; 0 A22] (backward).
	forward := (ul == blas.Lower) != trans
	if forward {
		impl.trsm(workers, ul, trans, d, h, n, t11, lda, b1, ldb)
		if !trans { // A21 = T[h:m, 0:h]
			dgemm(workers, false, false, r, n, h, -1, a[h*lda:], lda, b1, ldb, 1, b2, ldb)
		} else { // A21 = T[0:h, h:m]ᵀ
			dgemm(workers, true, false, r, n, h, -1, a[h:], lda, b1, ldb, 1, b2, ldb)
		}
		impl.trsm(workers, ul, trans, d, r, n, t22, lda, b2, ldb)
		return
	}
	impl.trsm(workers, ul, trans, d, r, n, t22, lda, b2, ldb)
	if !trans { // A12 = T[0:h, h:m]
		dgemm(workers, false, false, h, n, r, -1, a[h:], lda, b2, ldb, 1, b1, ldb)
	} else { // A12 = T[h:m, 0:h]ᵀ
		dgemm(workers, true, false, h, n, r, -1, a[h*lda:], lda, b2, ldb, 1, b1, ldb)
	}
	impl.trsm(workers, ul, trans, d, h, n, t11, lda, b1, ldb)
}
