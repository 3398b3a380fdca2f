package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// smallMin is the size (multiply-adds) below which packing costs more
// than it saves and gonum's direct loops are used.
const smallMin = 4096

// Implementation is gonum's pure-Go BLAS with Dgemm and left-side Dtrsm
// replaced by this package's when the assembly micro-kernel can run
// (KernelName "avx2-fma"); otherwise it is gonum's, whose dot/axpy loops
// beat the portable Go micro-kernel by 2×. Install it with
// blas64.Use(gemm.Implementation{}).
type Implementation struct{ gonum.Implementation }

// Dgemm computes C = alpha·op(A)·op(B) + beta·C (row-major), with the same
// argument checks and panics as gonum.
func (impl Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	defer start().done()
	if KernelName == "go" || m*n*k == 0 || !valid(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc) {
		// gonum raises the standard panics for invalid arguments.
		impl.Implementation.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	// Matrix-vector and outer products are memory-bound: packing them into
	// 6×8 tiles made them 5–10× slower than gonum's Dgemv and Dger.
	if n == 1 || m == 1 || k == 1 {
		impl.degenerate(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if m*n*k < smallMin {
		// gonum's Dgemm splits any C of four or more 64×64 blocks across
		// goroutines, whatever k is: a 256×2 C with k = 2 (1 000
		// multiply-adds) then waits on four goroutines, tens of microseconds
		// each when a virtual CPU has to be woken. Such thin products are
		// done in one loop here; the rest of the small ones are gonum's
		// serial loops.
		if blocks(m)*blocks(n) >= gonumParBlocks {
			smallSerial(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		impl.Implementation.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	Dgemm(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dsyrk computes the ul triangle of C = alpha·op(A)·op(A)ᵀ + beta·C
// (op(A) = A, n×k, for NoTrans; Aᵀ for Trans), leaving the other triangle
// untouched, with the same argument checks and panics as gonum. gonum's
// runs at its axpy speed, 4 G multiply-adds/s, and was half of gonum's
// blocked Cholesky (Dpotrf) at n = 300; here only the register tiles that
// reach the triangle are computed, those across its diagonal through a
// scratch tile.
func (impl Implementation) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	defer start().done()
	tr := t == blas.Trans || t == blas.ConjTrans
	rowsA, colsA := n, k // A's stored shape
	if tr {
		rowsA, colsA = k, n
	}
	if KernelName == "go" || n*n*k < 2*smallMin || (ul != blas.Upper && ul != blas.Lower) ||
		(t != blas.NoTrans && !tr) || n < 0 || k < 0 || lda < max(1, colsA) || ldc < max(1, n) ||
		len(a) < lda*(rowsA-1)+colsA || len(c) < ldc*(n-1)+n {
		impl.Implementation.Dsyrk(ul, t, n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	tri := lowerTri
	if ul == blas.Upper {
		tri = upperTri
	}
	term := Term{TA: tr, TB: !tr, K: k, Alpha: alpha, A: a, LDA: lda, B: a, LDB: lda}
	productsOf(Procs(), tri, true, n, n, []Term{term}, beta, c, ldc)
}

func valid(tA, tB blas.Transpose, m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
	okT := func(t blas.Transpose) bool { return t == blas.NoTrans || t == blas.Trans || t == blas.ConjTrans }
	if !okT(tA) || !okT(tB) || m < 0 || n < 0 || k < 0 {
		return false
	}
	ar, ac := m, k
	if tA != blas.NoTrans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB != blas.NoTrans {
		br, bc = n, k
	}
	return lda >= max(1, ac) && ldb >= max(1, bc) && ldc >= max(1, n) &&
		la >= lda*(ar-1)+ac && lb >= ldb*(br-1)+bc && lc >= ldc*(m-1)+n
}

// degenerate computes the product when one dimension is 1 with a level-2
// routine. A row or column of a row-major matrix is a vector with
// increment 1 or its leading dimension.
func (impl Implementation) degenerate(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	g := impl.Implementation
	// op(X)[i,j] is x[i*ld+j], or x[j*ld+i] when transposed: the element
	// strides along op(X)'s rows and columns.
	strides := func(t bool, ld int) (row, col int) {
		if t {
			return 1, ld
		}
		return ld, 1
	}
	aRow, aCol := strides(tA, lda)
	bRow, bCol := strides(tB, ldb)
	switch {
	case k == 1: // C = alpha·a bᵀ + beta·C, a an m-vector, b an n-vector
		if beta != 1 {
			// beta tested once, not at every element (the test was most of
			// this path's time in a Tables 2/3 fit).
			for i := 0; i < m; i++ {
				row := c[i*ldc : i*ldc+n]
				if beta == 0 {
					clear(row)
					continue
				}
				for j := range row {
					row[j] *= beta
				}
			}
		}
		g.Dger(m, n, alpha, a, aRow, b, bCol, c, ldc)
	case n == 1: // c = alpha·op(A)·b + beta·c, c a column (stride ldc)
		tr, rows, cols := blas.NoTrans, m, k
		if tA {
			tr, rows, cols = blas.Trans, k, m
		}
		g.Dgemv(tr, rows, cols, alpha, a, lda, b, bRow, beta, c, ldc)
	default: // m == 1: cᵀ = alpha·aᵀ·op(B) + beta·cᵀ, i.e. c = alpha·op(B)ᵀ a + beta·c
		tr, rows, cols := blas.Trans, k, n
		if tB {
			tr, rows, cols = blas.NoTrans, n, k
		}
		g.Dgemv(tr, rows, cols, alpha, b, ldb, a, aCol, beta, c, 1)
	}
}

// gonum's Dgemm runs in parallel when C has at least gonumParBlocks blocks
// of gonumBlock×gonumBlock (gonum/blas/gonum: blockSize, minParBlock).
const (
	gonumBlock     = 64
	gonumParBlocks = 4
)

func blocks(n int) int { return (n + gonumBlock - 1) / gonumBlock }

// smallSerial computes C = alpha·op(A)·op(B) + beta·C for a product of
// fewer than smallMin multiply-adds, on the calling goroutine: an axpy of
// each row of op(B) into C's row, k of them per row.
func smallSerial(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
		for l := 0; l < k; l++ {
			var ail float64
			if tA {
				ail = a[l*lda+i]
			} else {
				ail = a[i*lda+l]
			}
			ail *= alpha
			if ail == 0 {
				continue
			}
			if tB {
				for j := range row {
					row[j] += ail * b[j*ldb+l]
				}
			} else {
				bl := b[l*ldb : l*ldb+n]
				for j, v := range bl {
					row[j] += ail * v
				}
			}
		}
	}
}
