package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

func packedSolve(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	packedTri(true, ul, tA != blas.NoTrans, d, m, n, alpha, a, lda, b, ldb)
}

func packedProduct(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	packedTri(false, ul, tA != blas.NoTrans, d, m, n, alpha, a, lda, b, ldb)
}

func TestPackedTriMatchesGonum(t *testing.T) {
	kernels(t, func(t *testing.T) {
		checkLeftTriangular(t, 27, []int{1, 5, 6, 7, 17, 33, 64, 100, 150, 301}, true, packedSolve, gonum.Implementation{}.Dtrsm)
		checkLeftTriangular(t, 37, []int{1, 5, 6, 7, 17, 33, 64, 100, 150, 301}, false, packedProduct, gonum.Implementation{}.Dtrmm)
	})
}

func BenchmarkTriPacked(bm *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, sh := range [][2]int{{100, 200}, {100, 100}, {300, 1024}, {300, 300}} {
		if sh[0] == sh[1] {
			bm.Run(fmt.Sprintf("trsmLower/%dx%d", sh[0], sh[1]), func(bm *testing.B) {
				benchTrsmLower(bm, sh[0])
			})
		}
		m, n := sh[0], sh[1]
		a := randSlice(r, m*m)
		for i := 0; i < m; i++ {
			a[i*m+i] = 3
			for j := 0; j < m; j++ {
				if j != i {
					a[i*m+j] *= 0.1
				}
			}
		}
		b0 := randSlice(r, m*n)
		b := make([]float64, m*n)
		for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, v := range []struct {
				name string
				f    func(blas.Side, blas.Uplo, blas.Transpose, blas.Diag, int, int, float64, []float64, int, []float64, int)
			}{{"trsm", Implementation{}.Dtrsm}, {"packedSolve", packedSolve}, {"trmm", Implementation{}.Dtrmm}, {"packedProduct", packedProduct}} {
				bm.Run(fmt.Sprintf("%s/%dx%d/%c", v.name, m, n, tr), func(bm *testing.B) {
					for range bm.N {
						copy(b, b0)
						v.f(blas.Left, blas.Lower, tr, blas.NonUnit, m, n, 1, a, m, b, n)
					}
					bm.ReportMetric(float64(m*m/2*n)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// With alpha = 0 the blocked routines set B to zero without reading it, as
// BLAS does: a NaN in B does not survive.
func TestTriangularAlphaZero(t *testing.T) {
	if KernelName == "go" {
		t.Skip("no assembly kernel: gonum's routines run")
	}
	const m, n = 40, 30
	r := rand.New(rand.NewPCG(43, 44))
	a := randSlice(r, m*m)
	for i := 0; i < m; i++ {
		a[i*m+i] = 3
	}
	for _, f := range []func(blas.Side, blas.Uplo, blas.Transpose, blas.Diag, int, int, float64, []float64, int, []float64, int){
		Implementation{}.Dtrsm, Implementation{}.Dtrmm} {
		b := randSlice(r, m*n)
		b[7] = math.NaN()
		f(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, m, n, 0, a, m, b, n)
		for i, v := range b {
			if v != 0 {
				t.Fatalf("B[%d] = %v after alpha = 0", i, v)
			}
		}
	}
}

// TrsmTo and TrmmTo give, bit for bit, what copying B into dst and calling
// Dtrsm or Dtrmm there gives, with their own strides, and leave src alone;
// they decline what the blocked code does not take.
func TestTriangularToMatchesInPlace(t *testing.T) {
	if KernelName == "go" {
		t.Skip("no assembly kernel: the callers copy and call gonum")
	}
	r := rand.New(rand.NewPCG(45, 46))
	for trial := range 40 {
		m, n := []int{7, 40, 131, 300}[r.IntN(4)], []int{2, 17, 200, 1024}[r.IntN(4)]
		ul := []blas.Uplo{blas.Lower, blas.Upper}[r.IntN(2)]
		tA := []blas.Transpose{blas.NoTrans, blas.Trans}[r.IntN(2)]
		alpha := []float64{1, -0.5}[r.IntN(2)]
		a := randSlice(r, m*m)
		for i := range m {
			a[i*m+i] = 3
		}
		lds, ldd := n+r.IntN(3), n+r.IntN(3)
		src := randSlice(r, m*lds)
		orig := slices.Clone(src)
		for _, solve := range []bool{true, false} {
			want := make([]float64, m*ldd)
			for i := range m {
				copy(want[i*ldd:i*ldd+n], src[i*lds:i*lds+n])
			}
			got := slices.Clone(want)
			to, inPlace := TrmmTo, Implementation{}.Dtrmm
			if solve {
				to, inPlace = TrsmTo, Implementation{}.Dtrsm
			}
			inPlace(blas.Left, ul, tA, blas.NonUnit, m, n, alpha, a, m, want, ldd)
			if !to(ul, tA, blas.NonUnit, m, n, alpha, a, m, src, lds, got, ldd) {
				if blockedLeft(blas.Left, ul, tA, blas.NonUnit, m, n, m, lds, len(a), len(src)) {
					t.Fatalf("trial %d m=%d n=%d: declined arguments the blocked code takes", trial, m, n)
				}
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d m=%d n=%d %v %v solve=%v: differs from the in-place routine", trial, m, n, ul, tA, solve)
			}
			if !slices.Equal(src, orig) {
				t.Fatalf("trial %d: src was written", trial)
			}
		}
	}
	if TrsmTo(blas.Lower, blas.NoTrans, blas.NonUnit, 100, 1, 1, make([]float64, 100*100), 100, make([]float64, 100), 1, make([]float64, 100), 1) {
		t.Error("a single column was taken (the level-2 routine is faster)")
	}
}

// TrsmLowerTo is tril(op(L)⁻¹·alpha·tril(B)): against gonum's full solve of
// the masked B, masked, at shapes with and without partial blocks and
// strips, with B's upper triangle filled with values it must not read.
func TestTrsmLowerMatchesMaskedSolve(t *testing.T) {
	if KernelName == "go" {
		t.Skip("no assembly kernel: the callers mask and call gonum")
	}
	r := rand.New(rand.NewPCG(47, 48))
	for _, m := range []int{7, 13, 40, 97, 131, 300} {
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, alpha := range []float64{1, -0.5} {
				lda, lds, ldd := m+r.IntN(3), m+r.IntN(3), m+r.IntN(3)
				a := randSlice(r, m*lda)
				for i := range m {
					a[i*lda+i] = 2 + r.Float64()
					for j := range i {
						a[i*lda+j] *= 0.3 / math.Sqrt(float64(m))
					}
				}
				src := randSlice(r, m*lds)
				want := make([]float64, m*m)
				for i := range m {
					copy(want[i*m:i*m+i+1], src[i*lds:i*lds+i+1])
				}
				gonum.Implementation{}.Dtrsm(blas.Left, blas.Lower, tA, blas.NonUnit, m, m, alpha, a, lda, want, m)
				dst := randSlice(r, m*ldd)
				pad := slices.Clone(dst)
				if !TrsmLowerTo(tA, blas.NonUnit, m, alpha, a, lda, src, lds, dst, ldd) {
					if m > 40 {
						t.Fatalf("m=%d: declined", m)
					}
					continue
				}
				for i := range m {
					for j := range ldd {
						g := dst[i*ldd+j]
						var w float64
						switch {
						case j >= m:
							w = pad[i*ldd+j]
						case j <= i:
							w = want[i*m+j]
						}
						if math.Abs(g-w) > 1e-11*(1+math.Abs(w)) || (j > i && j < m && g != 0) {
							t.Fatalf("m=%d %v alpha=%v: X[%d,%d] = %g, want %g", m, tA, alpha, i, j, g, w)
						}
					}
				}
			}
		}
	}
}

func benchTrsmLower(bm *testing.B, m int) {
	r := rand.New(rand.NewPCG(9, 12))
	a := randSlice(r, m*m)
	for i := range m {
		a[i*m+i] = 3
	}
	src, dst := randSlice(r, m*m), make([]float64, m*m)
	for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		bm.Run(fmt.Sprintf("%c", tr), func(bm *testing.B) {
			for range bm.N {
				TrsmLowerTo(tr, blas.NonUnit, m, 1, a, m, src, m, dst, m)
			}
		})
	}
}
