package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// naive is the definition, in the obvious loop order.
func naive(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float64
				if tA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}

func randSlice(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

// problem is a random product of the given size: random transposes, leading
// dimensions up to 2 wider than needed, random contents.
type problem struct {
	tA, tB        bool
	lda, ldb, ldc int
	a, b, c       []float64
}

func randProblem(r *rand.Rand, m, n, k int) problem {
	p := problem{tA: r.IntN(2) == 1, tB: r.IntN(2) == 1}
	ar, ac := m, k
	if p.tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if p.tB {
		br, bc = n, k
	}
	p.lda, p.ldb, p.ldc = ac+r.IntN(3), bc+r.IntN(3), n+r.IntN(3)
	p.a, p.b, p.c = randSlice(r, ar*p.lda), randSlice(r, br*p.ldb), randSlice(r, m*p.ldc)
	return p
}

// kernels runs f with each micro-kernel this machine can execute.
func kernels(t *testing.T, f func(t *testing.T)) {
	saved := microKernel
	defer func() { microKernel = saved }()
	t.Run("go", func(t *testing.T) { microKernel = goKernel; f(t) })
	if KernelName != "go" {
		t.Run(KernelName, func(t *testing.T) { microKernel = saved; f(t) })
	}
}

func TestDgemmMatchesDefinition(t *testing.T) {
	sizes := []int{1, 2, 5, 6, 7, 8, 9, 13, 17, 48, 97, 100, 255, 257, 300}
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for trial := 0; trial < 300; trial++ {
			m, n, k := sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))]
			if trial < 4 { // exercise the multi-block, multi-k, parallel paths
				m, n, k = 400, 1100, 600
				if trial%2 == 1 {
					m, n = 13, 2100
				}
			}
			p := randProblem(r, m, n, k)
			tA, tB, lda, ldb, ldc, a, b, c := p.tA, p.tB, p.lda, p.ldb, p.ldc, p.a, p.b, p.c
			alpha := []float64{1, -2, 0.5}[r.IntN(3)]
			beta := []float64{0, 1, -0.75}[r.IntN(3)]
			want := append([]float64(nil), c...)
			if beta == 0 {
				for i := range c {
					c[i] = math.NaN() // must not be read
				}
			}
			naive(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
			Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					got, w := c[i*ldc+j], want[i*ldc+j]
					if math.Abs(got-w) > 1e-12*float64(k)*(1+math.Abs(w)) || math.IsNaN(got) {
						t.Fatalf("trial %d (m,n,k)=(%d,%d,%d) tA=%v tB=%v α=%g β=%g: C[%d,%d]=%g, want %g",
							trial, m, n, k, tA, tB, alpha, beta, i, j, got, w)
					}
				}
				// Padding columns between n and ldc are untouched.
				for j := n; j < ldc; j++ {
					if c[i*ldc+j] != want[i*ldc+j] && !(beta == 0 && math.IsNaN(c[i*ldc+j])) {
						t.Fatalf("trial %d: padding C[%d,%d] written", trial, i, j)
					}
				}
			}
		}
	})
}

func TestImplementationPanicsLikeGonum(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("short C: want a panic")
		}
	}()
	Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, 100, 100, 100, 1,
		make([]float64, 100*100), 100, make([]float64, 100*100), 100, 0, make([]float64, 10), 100)
}

func TestImplementationThroughBlas64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m, n, k := 200, 100, 784
	a, b := randSlice(r, m*k), randSlice(r, n*k)
	got, want := make([]float64, m*n), make([]float64, m*n)
	gonum.Implementation{}.Dgemm(blas.NoTrans, blas.Trans, m, n, k, 1, a, k, b, k, 0, want, n)
	Implementation{}.Dgemm(blas.NoTrans, blas.Trans, m, n, k, 1, a, k, b, k, 0, got, n)
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-10 {
			t.Fatalf("C[%d] = %g, gonum %g", i, got[i], want[i])
		}
	}
	_ = blas64.Implementation // Implementation satisfies blas.Float64:
	var _ blas.Float64 = Implementation{}
}

// The MNIST step's products: K(Z,X) (M×d by d×B), its gradient with
// respect to Z (M×B by B×d) and with respect to X (B×M by M×d), and the
// encoder's products.
var benchShapes = []struct {
	name    string
	tA, tB  bool
	m, n, k int
}{
	{"ZXt_100x200x784", false, true, 100, 200, 784},
	{"GX_100x784x200", false, false, 100, 784, 200},
	{"GtZ_200x784x100", true, false, 200, 784, 100},
	{"stacked_1000x200x784", false, true, 1000, 200, 784},
	// NIMGP_NN's encoder layers (794→50→784, batch 200) and their gradients.
	{"mlpIn_200x50x784", false, false, 200, 50, 784},
	{"mlpOut_200x784x50", false, false, 200, 784, 50},
	{"mlpdW_784x50x200", true, false, 784, 50, 200},
	{"mlpdH_200x50x784", false, true, 200, 50, 784},
}

func benchGemm(bm *testing.B, impl blas.Float64) {
	for _, s := range benchShapes {
		bm.Run(s.name, func(bm *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			a, b, c := randSlice(r, s.m*s.k), randSlice(r, s.k*s.n), make([]float64, s.m*s.n)
			lda, ldb := s.k, s.n
			ta, tb := blas.NoTrans, blas.NoTrans
			if s.tA {
				ta, lda = blas.Trans, s.m
			}
			if s.tB {
				tb, ldb = blas.Trans, s.k
			}
			bm.ResetTimer()
			for range bm.N {
				impl.Dgemm(ta, tb, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, c, s.n)
			}
			bm.ReportMetric(float64(s.m*s.n*s.k)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

func BenchmarkDgemm(b *testing.B)      { benchGemm(b, Implementation{}) }
func BenchmarkGonumDgemm(b *testing.B) { benchGemm(b, gonum.Implementation{}) }

// checkLeftTriangular compares a left-side triangular routine of this
// package with gonum's on 80 random problems: both triangles, both
// transposes, unit and non-unit diagonals, two alphas, padded strides, and
// right-hand sides wide enough to be split across cores. A solve gets a
// well-conditioned triangle; a product gets random values in the other
// triangle and the padding, which must be ignored.
func checkLeftTriangular(t *testing.T, seed uint64, ms []int, solve bool,
	ours, ref func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int)) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+1))
	for trial := 0; trial < 80; trial++ {
		m := ms[r.IntN(len(ms))]
		n := []int{1, 7, 100, 200, 450}[r.IntN(5)] // 150²·450: columns split across cores
		ul := []blas.Uplo{blas.Lower, blas.Upper}[r.IntN(2)]
		tA := []blas.Transpose{blas.NoTrans, blas.Trans}[r.IntN(2)]
		d := []blas.Diag{blas.NonUnit, blas.Unit}[r.IntN(2)]
		alpha := []float64{1, -0.5, 0}[r.IntN(3)]
		lda, ldb := m+r.IntN(3), n+r.IntN(3)
		a := randSlice(r, m*lda)
		if solve {
			for i := 0; i < m; i++ { // a well-conditioned triangle
				a[i*lda+i] = 2 + r.Float64()
				for j := 0; j < m; j++ {
					if j != i {
						a[i*lda+j] *= 0.3 / math.Sqrt(float64(m))
					}
				}
			}
		}
		b := randSlice(r, m*ldb)
		want := append([]float64(nil), b...)
		ref(blas.Left, ul, tA, d, m, n, alpha, a, lda, want, ldb)
		ours(blas.Left, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		for i := range b {
			if math.Abs(b[i]-want[i]) > 1e-11*(1+math.Abs(want[i])) {
				t.Fatalf("trial %d m=%d n=%d %v %v %v: X[%d]=%g, gonum %g", trial, m, n, ul, tA, d, i, b[i], want[i])
			}
		}
	}
}

func TestDtrsmMatchesGonum(t *testing.T) {
	checkLeftTriangular(t, 7, []int{33, 64, 65, 100, 150}, true, Implementation{}.Dtrsm, gonum.Implementation{}.Dtrsm)
}

func TestDtrmmMatchesGonum(t *testing.T) {
	checkLeftTriangular(t, 17, []int{17, 33, 64, 65, 100, 150}, false, Implementation{}.Dtrmm, gonum.Implementation{}.Dtrmm)
}

func BenchmarkDtrmm(bm *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	m, n := 300, 1024
	a := randSlice(r, m*m)
	b := randSlice(r, m*n)
	for _, impl := range []struct {
		name string
		f    blas.Float64
	}{{"gpc", Implementation{}}, {"gonum", gonum.Implementation{}}} {
		bm.Run(impl.name, func(bm *testing.B) {
			for range bm.N {
				impl.f.Dtrmm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, m, n, 1, a, m, b, n)
			}
		})
	}
}

func BenchmarkDtrsm(bm *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	m, n := 100, 200
	a := randSlice(r, m*m)
	for i := 0; i < m; i++ {
		a[i*m+i] = 3
	}
	b := randSlice(r, m*n)
	for _, impl := range []struct {
		name string
		f    blas.Float64
	}{{"gpc", Implementation{}}, {"gonum", gonum.Implementation{}}} {
		bm.Run(impl.name, func(bm *testing.B) {
			for range bm.N {
				impl.f.Dtrsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, m, n, 1, a, m, b, n)
			}
		})
	}
}

// The n=1, m=1 and k=1 products go to level-2 routines; every stride and
// transpose combination must still be the definition.
func TestImplementationDegenerateShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 200; trial++ {
		m, n, k := 1+r.IntN(300), 1+r.IntN(300), 1+r.IntN(300)
		switch trial % 3 {
		case 0:
			n = 1
		case 1:
			m = 1
		default:
			k = 1
		}
		m, n, k = max(m, 1), max(n, 1), max(k, 1)
		p := randProblem(r, m, n, k)
		tA, tB, lda, ldb, ldc, a, b, c := p.tA, p.tB, p.lda, p.ldb, p.ldc, p.a, p.b, p.c
		alpha, beta := []float64{1, -1.5}[r.IntN(2)], []float64{0, 1, 0.5}[r.IntN(3)]
		want := append([]float64(nil), c...)
		naive(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
		ta, tb := blas.NoTrans, blas.NoTrans
		if tA {
			ta = blas.Trans
		}
		if tB {
			tb = blas.Trans
		}
		Implementation{}.Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		for i := range c {
			if math.Abs(c[i]-want[i]) > 1e-11*(1+math.Abs(want[i])) {
				t.Fatalf("trial %d (m,n,k)=(%d,%d,%d) tA=%v tB=%v: C[%d]=%g, want %g", trial, m, n, k, tA, tB, i, c[i], want[i])
			}
		}
	}
}

// A sum of products, with every transpose, depths that span several k
// blocks or none, zero alphas and each beta, is the sum of the definitions.
func TestDgemmSumMatchesDefinition(t *testing.T) {
	sizes := []int{1, 5, 6, 9, 17, 100, 257}
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for trial := 0; trial < 120; trial++ {
			m, n := sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))]
			if trial < 3 { // the parallel paths
				m, n = 200, 784
			}
			ldc := n + r.IntN(3)
			c := randSlice(r, m*ldc)
			beta := []float64{0, 1, -0.75}[r.IntN(3)]
			want := append([]float64(nil), c...)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					if beta == 0 {
						want[i*ldc+j] = 0
					} else {
						want[i*ldc+j] *= beta
					}
				}
			}
			if beta == 0 {
				for i := range c {
					c[i] = math.NaN() // must not be read
				}
			}
			var terms []Term
			for range 1 + r.IntN(4) {
				k := []int{0, 1, 7, 100, 300}[r.IntN(5)]
				pr := randProblem(r, m, n, k)
				alpha := []float64{1, -2, 0}[r.IntN(3)]
				terms = append(terms, Term{TA: pr.tA, TB: pr.tB, K: k, Alpha: alpha, A: pr.a, LDA: pr.lda, B: pr.b, LDB: pr.ldb})
				naive(pr.tA, pr.tB, m, n, k, alpha, pr.a, pr.lda, pr.b, pr.ldb, 1, want, ldc)
			}
			DgemmSum(m, n, terms, beta, c, ldc)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					got, w := c[i*ldc+j], want[i*ldc+j]
					if math.Abs(got-w) > 1e-12*1000*(1+math.Abs(w)) || math.IsNaN(got) {
						t.Fatalf("trial %d (m,n)=(%d,%d) %d terms β=%g: C[%d,%d]=%g, want %g", trial, m, n, len(terms), beta, i, j, got, w)
					}
				}
			}
		}
	})
}

// A product too small to split, alone, summed with others or inside a
// triangular solve, allocates nothing once the packing buffers exist.
func TestSerialProductsDoNotAllocate(t *testing.T) {
	skipUnderRace(t)
	r := rand.New(rand.NewPCG(31, 32))
	const m, n, k = 50, 40, 30
	a, b, c := randSlice(r, m*k), randSlice(r, k*n), randSlice(r, m*n)
	terms := []Term{
		{K: k, Alpha: 1, A: a, LDA: k, B: b, LDB: n},
		{K: 0, Alpha: 1},
		{TB: true, K: n, Alpha: -0.5, A: randSlice(r, m*n), LDA: n, B: randSlice(r, n*n), LDB: n},
	}
	tri := make([]float64, m*m)
	for i := 0; i < m; i++ {
		for j := 0; j <= i; j++ {
			tri[i*m+j] = r.NormFloat64()
		}
		tri[i*m+i] = 3 + math.Abs(tri[i*m+i])
	}
	var impl Implementation
	run := func() {
		Dgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		DgemmSum(m, n, terms, 1, c, n)
		impl.Dtrsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, m, n, 1, tri, m, c, n)
	}
	run()
	if allocs := testing.AllocsPerRun(50, run); allocs != 0 {
		t.Errorf("%v allocations per call, want 0", allocs)
	}
}

// Thin products of fewer than smallMin multiply-adds whose C spans four or
// more of gonum's 64×64 blocks (gonum would split them across goroutines),
// with every transpose, alpha and beta, equal the definition, and run on
// the calling goroutine without allocating: gonum's parallel path
// allocates its channel and goroutines on every call.
func TestThinSmallProductsAreSerial(t *testing.T) {
	skipUnderRace(t)
	if KernelName == "go" {
		t.Skip("no assembly kernel: every product is gonum's (purego or an old CPU)")
	}
	r := rand.New(rand.NewPCG(41, 42))
	shapes := [][3]int{{200, 1, 1}, {256, 2, 2}, {1000, 3, 1}, {2, 300, 3}, {129, 129, 0}, {300, 5, 2}, {64, 256, 1}, {193, 7, 3}}
	for trial := 0; trial < 120; trial++ {
		s := shapes[trial%len(shapes)]
		m, n, k := s[0], s[1], s[2]
		if k == 0 {
			k = 1 + r.IntN(2)
			m, n = 64+r.IntN(40), 3+r.IntN(5)
			if trial%2 == 0 {
				m, n = n, m
			}
		}
		p := randProblem(r, m, n, k)
		alpha, beta := []float64{1, -1.5, 0}[r.IntN(3)], []float64{0, 1, 0.5}[r.IntN(3)]
		want := append([]float64(nil), p.c...)
		naive(p.tA, p.tB, m, n, k, alpha, p.a, p.lda, p.b, p.ldb, beta, want, p.ldc)
		ta, tb := blas.NoTrans, blas.NoTrans
		if p.tA {
			ta = blas.Trans
		}
		if p.tB {
			tb = blas.Trans
		}
		if beta == 0 {
			for i := range p.c {
				p.c[i] = math.NaN() // must not be read
			}
		}
		c := make([]float64, len(p.c))
		run := func() {
			copy(c, p.c)
			Implementation{}.Dgemm(ta, tb, m, n, k, alpha, p.a, p.lda, p.b, p.ldb, beta, c, p.ldc)
		}
		run()
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				got, w := c[i*p.ldc+j], want[i*p.ldc+j]
				if math.Abs(got-w) > 1e-12*(1+math.Abs(w)) || math.IsNaN(got) {
					t.Fatalf("trial %d (m,n,k)=(%d,%d,%d) tA=%v tB=%v α=%g β=%g: C[%d,%d]=%g, want %g", trial, m, n, k, p.tA, p.tB, alpha, beta, i, j, got, w)
				}
			}
		}
		if allocs := testing.AllocsPerRun(5, run); allocs != 0 {
			t.Fatalf("(m,n,k)=(%d,%d,%d): %v allocations per call, want 0 (a goroutine was started)", m, n, k, allocs)
		}
	}
}

// The serial loop order (each B panel packed once) accumulates every C
// element's terms and k blocks in the task grid's order, so the two give
// the same bits, for sums of products, transposes, beta = 0 and not, and
// shapes with edge tiles and several blocks in every dimension.
func TestSerialOrderMatchesTasks(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 40 {
		m, n := 1+r.IntN(300), 1+r.IntN(1300)
		terms := randTerms(r, m, n, 1+r.IntN(3), 1, 600)
		set := trial%2 == 0
		c0 := randSlice(r, m*n)
		p := plan(m, n, 1, 1)
		want := append([]float64(nil), c0...)
		a := job{p: p, c: want, ldc: n, set: set}
		a.p.k = 1
		a.work(terms)
		got := append([]float64(nil), c0...)
		b := job{p: p, c: got, ldc: n, set: set}
		b.workSerial(terms)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("trial %d (%d×%d, %d terms): C[%d] = %v in loop order, %v by tasks", trial, m, n, len(terms), i, got[i], want[i])
			}
		}
	}
}

// A product's bits do not depend on how many goroutines run it: the
// inter-op scheduler's results do not depend on whether it holds Serial.
func TestProductBitsIndependentOfWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for trial := range 12 {
		m, n := 60+r.IntN(300), 60+r.IntN(1300)
		terms := randTerms(r, m, n, 1+r.IntN(2), 100, 500)
		beta := []float64{0, 1, 0.5}[trial%3]
		c0 := randSlice(r, m*n)
		one := append([]float64(nil), c0...)
		dgemmSum(1, m, n, terms, beta, one, n)
		for _, w := range []int{2, 3} {
			many := append([]float64(nil), c0...)
			dgemmSum(w, m, n, terms, beta, many, n)
			for i := range one {
				if math.Float64bits(one[i]) != math.Float64bits(many[i]) {
					t.Fatalf("trial %d (%d×%d): C[%d] = %v on one goroutine, %v on %d", trial, m, n, i, one[i], many[i], w)
				}
			}
		}
	}
}

// randTerms is count random terms of an m×n product, each with k in
// [kLo, kHi), random transposes and alpha.
func randTerms(r *rand.Rand, m, n, count, kLo, kHi int) []Term {
	terms := make([]Term, count)
	for i := range terms {
		k := kLo + r.IntN(kHi-kLo)
		tm := Term{TA: r.IntN(2) == 0, TB: r.IntN(2) == 0, K: k, Alpha: r.NormFloat64(), LDA: k, LDB: n}
		if tm.TA {
			tm.LDA = m
		}
		if tm.TB {
			tm.LDB = k
		}
		tm.A, tm.B = randSlice(r, m*k), randSlice(r, k*n)
		terms[i] = tm
	}
	return terms
}

// DgemmTri gives the definition's triangle, zeros in the other triangle,
// and leaves C's padding alone, for both triangles and transposes, k
// across several k blocks, one goroutine and several.
func TestDgemmTriMatchesDefinition(t *testing.T) {
	sizes := []int{1, 5, 6, 7, 13, 48, 100, 131, 300}
	kernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for trial := 0; trial < 120; trial++ {
			m, k := sizes[r.IntN(len(sizes))], []int{0, 1, 7, 200, 300, 600}[r.IntN(6)]
			p := randProblem(r, m, m, k)
			lower, alpha := r.IntN(2) == 0, []float64{1, -0.5, 0}[r.IntN(3)]
			want := make([]float64, m*m)
			naive(p.tA, p.tB, m, m, k, alpha, p.a, p.lda, p.b, p.ldb, 0, want, m)
			got := append([]float64(nil), p.c...)
			release := func() {}
			if trial%2 == 0 {
				release = Serial()
			}
			DgemmTri(lower, p.tA, p.tB, m, k, alpha, p.a, p.lda, p.b, p.ldb, got, p.ldc)
			release()
			for i := 0; i < m; i++ {
				for j := 0; j < p.ldc; j++ {
					g := got[i*p.ldc+j]
					var w float64
					switch {
					case j >= m:
						w = p.c[i*p.ldc+j] // padding: untouched
					case (lower && j <= i) || (!lower && j >= i):
						w = want[i*m+j]
					}
					if math.Abs(g-w) > 1e-12*(1+math.Abs(w)) {
						t.Fatalf("trial %d m=%d k=%d lower=%v tA=%v tB=%v: C[%d,%d] = %g, want %g", trial, m, k, lower, p.tA, p.tB, i, j, g, w)
					}
				}
			}
		}
	})
}

// The gradient of a 300×300 triangular factor from a 1 024-column batch
// (Tables III-V of the additive-noise paper), and of the 100×100 factor of
// a 200-point batch (the synthetic tables): the triangle alone, against the
// full product.
func BenchmarkDgemmTri(bm *testing.B) {
	for _, s := range [][2]int{{300, 1024}, {100, 200}, {100, 784}} {
		m, k := s[0], s[1]
		r := rand.New(rand.NewPCG(3, 4))
		u, v, c := randSlice(r, m*k), randSlice(r, m*k), make([]float64, m*m)
		bm.Run(fmt.Sprintf("tri_%dx%d", m, k), func(bm *testing.B) {
			for range bm.N {
				DgemmTri(true, false, true, m, k, 1, u, k, v, k, c, m)
			}
			bm.ReportMetric(float64(m*(m+1)/2*k)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GMAC/s")
		})
		bm.Run(fmt.Sprintf("full_%dx%d", m, k), func(bm *testing.B) {
			for range bm.N {
				Dgemm(false, true, m, m, k, 1, u, k, v, k, 0, c, m)
			}
			bm.ReportMetric(float64(m*m*k)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// The single-tile kernels stay correct where the pair kernel exists (the
// AVX2 path of CPUs without AVX-512, GPC_GEMM=avx2).
func TestWithoutPairKernel(t *testing.T) {
	if pairKernel == nil {
		t.Skip("no pair kernel on this CPU: the other tests cover the single-tile path")
	}
	defer func(k func(int, []float64, []float64, []float64, []float64, []float64, int, float64, bool)) {
		pairKernel = k
	}(pairKernel)
	pairKernel = nil
	t.Run("Dgemm", TestDgemmMatchesDefinition)
	t.Run("DgemmTri", TestDgemmTriMatchesDefinition)
	t.Run("packedTri", TestPackedTriMatchesGonum)
}

// BenchmarkMicroKernel times the register-tile kernels alone, operands in
// L1, at the packing's deepest k block: the ceiling the products approach.
func BenchmarkMicroKernel(b *testing.B) {
	kc := kcMax
	a, b0, b1 := make([]float64, kc*mr), make([]float64, kc*nr), make([]float64, kc*nr)
	c := make([]float64, mr*2*nr)
	for i := range a {
		a[i] = 1e-3
	}
	for i := range b0 {
		b0[i], b1[i] = 1e-3, 2e-3
	}
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			microKernel(kc, a, b0, c, 2*nr, 1, true)
		}
		b.ReportMetric(float64(b.N)*float64(kc*mr*nr)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
	if pairKernel == nil {
		return
	}
	b.Run("pair", func(b *testing.B) {
		for b.Loop() {
			pairKernel(kc, a, b0, b1, c, c[nr:], 2*nr, 1, true)
		}
		b.ReportMetric(float64(b.N)*float64(kc*mr*2*nr)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
}

// The pair kernel does each element's arithmetic in the single kernel's
// order (one fused multiply-add per k step, then alpha), so a product is
// the same to the last bit with and without it.
func TestPairKernelBitsMatchSingle(t *testing.T) {
	if pairKernel == nil {
		t.Skip("no pair kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, s := range [][3]int{{100, 200, 784}, {37, 61, 300}, {6, 16, 5}, {300, 1024, 20}} {
		m, n, k := s[0], s[1], s[2]
		a, b := randSlice(rng, m*k), randSlice(rng, k*n)
		for _, beta := range []float64{0, 0.5} {
			c0 := randSlice(rand.New(rand.NewPCG(1, 1)), m*n)
			c1 := slices.Clone(c0)
			Dgemm(false, false, m, n, k, 1.5, a, k, b, n, beta, c0, n)
			func() {
				defer func(p func(int, []float64, []float64, []float64, []float64, []float64, int, float64, bool)) {
					pairKernel = p
				}(pairKernel)
				pairKernel = nil
				Dgemm(false, false, m, n, k, 1.5, a, k, b, n, beta, c1, n)
			}()
			if !slices.Equal(c0, c1) {
				t.Errorf("%d×%d×%d beta %v: pair and single kernels differ", m, n, k, beta)
			}
		}
	}
}

// A term that scales its inner dimension is, to the last bit, the product
// with op(B)'s rows scaled beforehand (the packing does that multiplication
// instead), for both layouts of B, with and without the triangle.
func TestScaleKMatchesScaledCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 8))
	for _, s := range [][3]int{{100, 200, 784}, {7, 13, 5}, {31, 17, 300}, {64, 64, 600}} {
		m, n, k := s[0], s[1], s[2]
		w := randSlice(rng, k)
		a := randSlice(rng, m*k)
		for _, tb := range []bool{false, true} {
			b := randSlice(rng, k*n)
			scaled := slices.Clone(b)
			for p := 0; p < k; p++ {
				for c := 0; c < n; c++ {
					if tb { // B is n×k
						scaled[c*k+p] *= w[p]
					} else { // B is k×n
						scaled[p*n+c] *= w[p]
					}
				}
			}
			ldb := n
			if tb {
				ldb = k
			}
			want, got := make([]float64, m*n), make([]float64, m*n)
			Dgemm(false, tb, m, n, k, 1.25, a, k, scaled, ldb, 0, want, n)
			DgemmSum(m, n, []Term{{TB: tb, K: k, Alpha: 1.25, A: a, LDA: k, B: b, LDB: ldb, ScaleK: w}}, 0, got, n)
			if !slices.Equal(want, got) {
				t.Errorf("%d×%d×%d tB %v: scaled term differs from the product with a scaled copy", m, n, k, tb)
			}
			if m != n {
				continue
			}
			DgemmTri(true, false, tb, m, k, 1, a, k, scaled, ldb, want, n)
			DgemmTriTerm(true, m, Term{TB: tb, K: k, Alpha: 1, A: a, LDA: k, B: b, LDB: ldb, ScaleK: w}, got, n)
			if !slices.Equal(want, got) {
				t.Errorf("%d×%d triangle tB %v: scaled term differs", m, k, tb)
			}
		}
	}
}

// BenchmarkTriVector times a triangular solve and product with a single
// right-hand column (the variational mean's L⁻¹m) at m = 300.
func BenchmarkTriVector(bm *testing.B) {
	r := rand.New(rand.NewPCG(9, 11))
	m := 300
	a := randSlice(r, m*m)
	for i := 0; i < m; i++ {
		a[i*m+i] = 3
	}
	b := randSlice(r, m)
	for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, impl := range []struct {
			name string
			f    blas.Float64
		}{{"gpc", Implementation{}}, {"gonum", gonum.Implementation{}}} {
			bm.Run(fmt.Sprintf("trsm/%c/%s", tr, impl.name), func(bm *testing.B) {
				for range bm.N {
					impl.f.Dtrsm(blas.Left, blas.Lower, tr, blas.NonUnit, m, 1, 1, a, m, b, 1)
				}
			})
			bm.Run(fmt.Sprintf("trmm/%c/%s", tr, impl.name), func(bm *testing.B) {
				for range bm.N {
					impl.f.Dtrmm(blas.Left, blas.Lower, tr, blas.NonUnit, m, 1, 1, a, m, b, 1)
				}
			})
		}
		bm.Run(fmt.Sprintf("trsv/%c", tr), func(bm *testing.B) {
			for range bm.N {
				gonum.Implementation{}.Dtrsv(blas.Lower, tr, blas.NonUnit, m, a, m, b, 1)
			}
		})
		bm.Run(fmt.Sprintf("trmv/%c", tr), func(bm *testing.B) {
			for range bm.N {
				gonum.Implementation{}.Dtrmv(blas.Lower, tr, blas.NonUnit, m, a, m, b, 1)
			}
		})
	}
}

// The outer product's direct path rounds each element as the blocked path
// does: against the same product with a second, zero column (which the
// kernel adds exactly), bit for bit, for both layouts, a scaled inner
// dimension and both triangles.
func TestRank1TriBitsMatchBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{1, 7, 300} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, scaled := range []bool{false, true} {
					u, v := randSlice(r, m), randSlice(r, m)
					u2, v2 := make([]float64, 2*m), make([]float64, 2*m)
					for i := range m { // op(A) m×2 and op(B) 2×m with a zero second column/row
						if tA {
							u2[i] = u[i]
						} else {
							u2[2*i] = u[i]
						}
						if tB {
							v2[2*i] = v[i]
						} else {
							v2[i] = v[i]
						}
					}
					lda, ldb, lda2, ldb2 := 1, m, 2, m
					if tA {
						lda, lda2 = m, m
					}
					if tB {
						ldb, ldb2 = 1, 2
					}
					one := Term{TA: tA, TB: tB, K: 1, Alpha: -1.5, A: u, LDA: lda, B: v, LDB: ldb}
					two := Term{TA: tA, TB: tB, K: 2, Alpha: -1.5, A: u2, LDA: lda2, B: v2, LDB: ldb2}
					if scaled {
						one.ScaleK, two.ScaleK = []float64{0.7}, []float64{0.7, 0.3}
					}
					for _, lower := range []bool{true, false} {
						got, want := randSlice(r, m*m), randSlice(r, m*m)
						DgemmTriTerm(lower, m, one, got, m)
						DgemmTriTerm(lower, m, two, want, m)
						if !slices.Equal(got, want) {
							t.Fatalf("m=%d tA=%v tB=%v scaled=%v lower=%v: direct and blocked rank-1 triangles differ", m, tA, tB, scaled, lower)
						}
					}
				}
			}
		}
	}
}

// Dsyrk writes the chosen triangle as gonum's does, within rounding, and
// not one element outside it (nor the padding), for both triangles and
// transposes, beta 0, 1 and another, alpha 0 and not, under and over the packing threshold.
func TestDsyrkMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	for trial := range 200 {
		n, k := []int{1, 5, 7, 13, 64, 100, 131}[r.IntN(7)], []int{0, 1, 7, 64, 300}[r.IntN(5)]
		ul := []blas.Uplo{blas.Lower, blas.Upper}[r.IntN(2)]
		tr := []blas.Transpose{blas.NoTrans, blas.Trans}[r.IntN(2)]
		alpha, beta := []float64{1, -1, 0.5, 0}[r.IntN(4)], []float64{0, 1, 0.3}[r.IntN(3)]
		rowsA, colsA := n, k
		if tr == blas.Trans {
			rowsA, colsA = k, n
		}
		lda, ldc := max(1, colsA)+r.IntN(3), n+r.IntN(3)
		a := randSlice(r, max(0, lda*(rowsA-1)+colsA))
		c := randSlice(r, ldc*(n-1)+n)
		want, got := slices.Clone(c), slices.Clone(c)
		gonum.Implementation{}.Dsyrk(ul, tr, n, k, alpha, a, lda, beta, want, ldc)
		Implementation{}.Dsyrk(ul, tr, n, k, alpha, a, lda, beta, got, ldc)
		for i := range n {
			for j := range ldc {
				if i == n-1 && j >= n {
					break
				}
				in := j < n && ((ul == blas.Lower && j <= i) || (ul == blas.Upper && j >= i))
				g, w := got[i*ldc+j], want[i*ldc+j]
				if !in && math.Float64bits(g) != math.Float64bits(c[i*ldc+j]) {
					t.Fatalf("trial %d n=%d k=%d %v %v: C[%d,%d] outside the triangle changed", trial, n, k, ul, tr, i, j)
				}
				if in && !(math.Abs(g-w) <= 1e-12*(1+math.Abs(w))) {
					t.Fatalf("trial %d n=%d k=%d %v %v alpha=%v beta=%v: C[%d,%d] = %v, gonum %v", trial, n, k, ul, tr, alpha, beta, i, j, g, w)
				}
			}
		}
	}
}

// Products with a dimension of one (an outer product, a matrix times a
// vector, a vector times a matrix) go through Dger and Dgemv: they match
// gonum's Dgemm for every transposition and beta, and beta = 0 overwrites
// C even where it held NaN.
func TestDegenerateShapesMatchGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	for _, s := range [][3]int{{7, 5, 1}, {1, 9, 4}, {6, 1, 3}, {1, 1, 5}, {9, 12, 1}} {
		m, n, k := s[0], s[1], s[2]
		for _, ta := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tb := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, beta := range []float64{0, 1, -0.75} {
					lda, ldb := k, n
					if ta == blas.Trans {
						lda = m
					}
					if tb == blas.Trans {
						ldb = k
					}
					a, b := make([]float64, m*k), make([]float64, k*n)
					for i := range a {
						a[i] = r.NormFloat64()
					}
					for i := range b {
						b[i] = r.NormFloat64()
					}
					want, got := make([]float64, m*n), make([]float64, m*n)
					for i := range want {
						want[i] = r.NormFloat64()
						if beta == 0 && i%3 == 0 {
							want[i] = math.NaN()
						}
						got[i] = want[i]
					}
					gonum.Implementation{}.Dgemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, beta, want, n)
					Implementation{}.Dgemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, beta, got, n)
					for i := range want {
						if math.Abs(got[i]-want[i]) > 1e-14*(1+math.Abs(want[i])) || math.IsNaN(got[i]) {
							t.Fatalf("(m,n,k) = (%d,%d,%d) tA=%v tB=%v beta=%v: C[%d] = %v, gonum %v", m, n, k, ta, tb, beta, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
