package gemm

import (
	"sync"
	"sync/atomic"
)

// Register tile (mr×nr), and the cache blocks: a packed kc×nr sliver of B
// stays in L1 while it sweeps an mc×kc block of A held in L2.
const (
	mr    = 6
	nr    = 8
	kcMax = 256
	mcMax = 120
	ncMax = 1024
)

// Below parallelMin multiply-adds one goroutine is faster than two: on
// the 2-vCPU machines this runs on, handing tasks to the other core costs
// tens of microseconds and gains only 15–30% (measured: 100×200×100, 2 M
// multiply-adds, 104 µs alone and 160 µs split; 100×200×784, 790 µs and
// 690 µs).
const parallelMin = 1 << 22

// KernelName names the micro-kernels chosen for this CPU: "avx512" (AVX2
// and FMA with the AVX-512 pair kernel), "avx2-fma" or "go".
var KernelName = "go"

// microKernel adds alpha·(packed A sliver)(packed B sliver) to the mr×nr
// tile of c that starts at c[0] with row stride ldc, or with set stores it
// there without reading the tile (the first k block of a beta = 0 product:
// no separate pass clears C, and C is not read before it is written).
var microKernel = goKernel

// pairKernel, where the CPU has wide enough registers, is microKernel for
// two horizontally adjacent tiles in one call: packed slivers b0 and b1
// into the mr×nr tiles at c0 and c1 (row stride ldc). With AVX-512 a 6×16
// tile keeps twelve 8-wide accumulators busy where the AVX2 kernel's 6×8
// keeps twelve 4-wide ones: about twice the multiply-adds per cycle. Nil
// without one; callers then make two microKernel calls.
var pairKernel func(kc int, a, b0, b1, c0, c1 []float64, ldc int, alpha float64, set bool)

func goKernel(kc int, a, b, c []float64, ldc int, alpha float64, set bool) {
	var acc [mr * nr]float64
	for p := 0; p < kc; p++ {
		ap := a[p*mr : p*mr+mr]
		bp := b[p*nr : p*nr+nr]
		for r, ar := range ap {
			row := acc[r*nr : r*nr+nr]
			for j, bv := range bp {
				row[j] += ar * bv
			}
		}
	}
	for r := 0; r < mr; r++ {
		cr := c[r*ldc : r*ldc+nr]
		for j := range cr {
			if set {
				cr[j] = alpha * acc[r*nr+j]
			} else {
				cr[j] += alpha * acc[r*nr+j]
			}
		}
	}
}

// Dgemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices,
// where op(A) is m×k, op(B) is k×n and op transposes when tA (tB) is set.
// As in BLAS, C is not read when beta is 0. Arguments are not checked:
// callers (Implementation.Dgemm) validate them.
func Dgemm(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	dgemm(Procs(), tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// dgemm is Dgemm on at most workers goroutines.
func dgemm(workers int, tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	t := [1]Term{{TA: tA, TB: tB, K: k, Alpha: alpha, A: a, LDA: lda, B: b, LDB: ldb}}
	dgemmSum(workers, m, n, t[:], beta, c, ldc)
}

// Term is one product Alpha·op(A)·op(B) of a DgemmSum, op(A) being m×K and
// op(B) K×n (transposed when TA, TB are set), row-major with leading
// dimensions LDA and LDB.
type Term struct {
	TA, TB   bool
	K        int
	Alpha    float64
	A, B     []float64
	LDA, LDB int
	// ScaleK, when not nil, scales the inner dimension: the term is
	// Alpha·op(A)·diag(ScaleK)·op(B), the K weights applied to op(B)'s rows
	// as they are packed (an ARD kernel's x·diag(1/ℓ)·zᵀ without a
	// weighted copy of z).
	ScaleK []float64
}

// DgemmSum computes C = Σ_t Alpha_t·op(A_t)·op(B_t) + beta·C. It does the
// work of one Dgemm per term, but each block of C stays in cache while
// every term is accumulated into it: ten products with k = 100 into a
// 200×784 C (the gradient of NIMGP's batch of inputs, one term per class)
// run at the speed of one product with k = 1000, a quarter faster than
// ten calls. Arguments are not checked.
func DgemmSum(m, n int, terms []Term, beta float64, c []float64, ldc int) {
	defer start().done()
	dgemmSum(Procs(), m, n, terms, beta, c, ldc)
}

func dgemmSum(workers, m, n int, terms []Term, beta float64, c []float64, ldc int) {
	products(workers, full, m, n, terms, beta, c, ldc)
}

// products is dgemmSum computing only the tiles of C that reach tri.
func products(workers int, tri triangle, m, n int, terms []Term, beta float64, c []float64, ldc int) {
	productsOf(workers, tri, false, m, n, terms, beta, c, ldc)
}

// productsOf is products, writing no element of C outside tri if exact.
func productsOf(workers int, tri triangle, exact bool, m, n int, terms []Term, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	k := 0
	for _, t := range terms {
		if t.live() {
			k += t.K
		}
	}
	// With beta = 0 the first k block of each task stores its tiles (set),
	// so C needs clearing only when there is no product to store.
	set := beta == 0 && k > 0
	if beta != 1 && !set {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if exact {
				lo, hi := tri.span(i, 0, n)
				row = row[lo:max(lo, hi)]
			}
			if beta == 0 {
				clear(row)
				continue
			}
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if k == 0 {
		return
	}
	if m*n*k < parallelMin {
		workers = 1
	}
	p := plan(m, n, k, workers)
	if workers = min(workers, p.mBlocks*p.nBlocks); workers <= 1 {
		// On the caller's stack: a small product allocates nothing.
		j := job{p: p, c: c, ldc: ldc, set: set, tri: tri, exact: exact}
		j.workSerial(terms)
		return
	}
	// The goroutines share the job, so it and its terms live on the heap;
	// the copy keeps the caller's terms (often a literal) off it.
	job := &job{p: p, c: c, ldc: ldc, set: set, tri: tri, exact: exact}
	shared := append([]Term(nil), terms...)
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			job.work(shared)
		}()
	}
	job.work(shared)
	wg.Wait()
}

// DgemmTri computes the lower (or upper) triangle, diagonal included, of
// the m×m product alpha·op(A)·op(B), op(A) being m×k and op(B) k×m, into C
// and sets the rest of C to zero. Only the register tiles that reach the
// triangle are computed, by the blocked product's loops (on one goroutine,
// each panel of B packed once): about half a product's multiply-adds, where
// a product per row panel repacked B for every panel (the panels of a
// 300×1024 factor's gradient packed 3.4 times its size). Arguments are not
// checked.
func DgemmTri(lower, tA, tB bool, m, k int, alpha float64, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	DgemmTriTerm(lower, m, Term{TA: tA, TB: tB, K: k, Alpha: alpha, A: a, LDA: lda, B: b, LDB: ldb}, c, ldc)
}

// DgemmTriTerm is DgemmTri of one Term (which may scale its inner
// dimension).
func DgemmTriTerm(lower bool, m int, t Term, c []float64, ldc int) {
	defer start().done()
	if t.K == 1 && t.Alpha != 0 {
		rank1Tri(lower, m, &t, c, ldc)
		return
	}
	ts := [1]Term{t}
	triSum(lower, m, ts[:], c, ldc)
}

// DgemmTriSum is DgemmTriTerm of a sum of terms, each block of C kept in
// cache while every term is accumulated into it (see DgemmSum).
func DgemmTriSum(lower bool, m int, terms []Term, c []float64, ldc int) {
	defer start().done()
	triSum(lower, m, terms, c, ldc)
}

// triSum is DgemmTriSum without the timing. With no live term products
// clears all of C; otherwise the tiles on the diagonal wrote a little of
// the other triangle, and the skipped ones nothing at all.
func triSum(lower bool, m int, terms []Term, c []float64, ldc int) {
	tri := upperTri
	if lower {
		tri = lowerTri
	}
	products(Procs(), tri, m, m, terms, 0, c, ldc)
	for i := 0; i < m; i++ {
		if lower {
			clear(c[i*ldc+i+1 : i*ldc+m])
		} else {
			clear(c[i*ldc : i*ldc+i])
		}
	}
}

// rank1Tri is DgemmTriTerm for K = 1, an outer product's triangle, written
// directly: through the blocked loops a 300×1 factor's triangle cost 145 µs
// a call, written directly about 100 (the 720 KB of stores). Each element is
// Alpha·(a_i·b_j), with b_j scaled first, as the kernel rounds it.
func rank1Tri(lower bool, m int, t *Term, c []float64, ldc int) {
	sa, sb := t.LDA, 1 // op(A) is m×1, op(B) 1×m
	if t.TA {
		sa = 1
	}
	if t.TB {
		sb = t.LDB
	}
	for i := range m {
		ai := t.A[i*sa]
		row := c[i*ldc : i*ldc+m]
		lo, hi := 0, i+1
		if !lower {
			lo, hi = i, m
		}
		clear(row[:lo])
		clear(row[hi:])
		switch {
		case t.ScaleK != nil:
			s := t.ScaleK[0]
			for j := lo; j < hi; j++ {
				row[j] = t.Alpha * (ai * (t.B[j*sb] * s))
			}
		case sb == 1:
			for j, bj := range t.B[lo:hi] {
				row[lo+j] = t.Alpha * (ai * bj)
			}
		default:
			for j := lo; j < hi; j++ {
				row[j] = t.Alpha * (ai * t.B[j*sb])
			}
		}
	}
}

// live reports whether the term contributes to the sum.
func (t *Term) live() bool { return t.K > 0 && t.Alpha != 0 }

// blocking is the task grid of one product: mBlocks×nBlocks tasks of
// mc rows and nc columns, each looping over k (every term's) in steps of
// at most kcMax.
type blocking struct {
	m, n, k          int
	mc, nc           int
	mBlocks, nBlocks int
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// plan chooses the task grid. Each task packs its own mc×kc block of A and
// kc×nc block of B, so a grid of nbM×nbN tasks packs A nbN times and B nbM
// times; plan minimises the modelled time (waves of tasks over the workers,
// each task's multiply-adds plus its packing) under the cache limits on mc
// and nc. Splitting the wrong dimension doubled the packing of the MNIST
// step's products.
func plan(m, n, k, workers int) blocking {
	const packCost = 8 // one packed element ≈ this many kernel multiply-adds
	loM, loN := ceilDiv(m, mcMax), ceilDiv(n, ncMax)
	best, bestM, bestN := -1.0, loM, loN
	for nbM := loM; nbM <= max(loM, ceilDiv(m, mr)) && nbM <= loM+2*workers; nbM++ {
		mc := roundUp(ceilDiv(m, nbM), mr)
		if ceilDiv(m, mc) != nbM {
			continue
		}
		for nbN := loN; nbN <= max(loN, ceilDiv(n, nr)) && nbN <= loN+2*workers; nbN++ {
			nc := roundUp(ceilDiv(n, nbN), nr)
			if ceilDiv(n, nc) != nbN {
				continue
			}
			waves := ceilDiv(nbM*nbN, workers)
			cost := float64(waves) * (float64(mc*nc) + packCost*float64(mc+nc))
			if best < 0 || cost < best {
				best, bestM, bestN = cost, nbM, nbN
			}
		}
	}
	p := blocking{m: m, n: n, k: k}
	p.mc = roundUp(ceilDiv(m, bestM), mr)
	p.nc = roundUp(ceilDiv(n, bestN), nr)
	p.mBlocks, p.nBlocks = ceilDiv(m, p.mc), ceilDiv(n, p.nc)
	return p
}

// job is one product's tasks; its terms are passed to work separately,
// because C reaches the micro-kernel (an indirect call, which the compiler
// assumes keeps what it is given) and a job's fields escape together.
type job struct {
	p   blocking
	c   []float64
	ldc int
	set bool // beta = 0: the first k block stores instead of adding
	tri triangle
	// exact: no element of C outside tri is written (Dsyrk), where a
	// tile across the diagonal otherwise writes all of itself.
	exact bool
	next  atomic.Int64
}

// triangle selects the part of C a product computes: all of it, or only
// the register tiles that reach its lower or upper triangle (DgemmTri).
type triangle uint8

const (
	full triangle = iota
	lowerTri
	upperTri
)

// needs reports whether the rows×cols block of C at (i, j) reaches the
// triangle.
func (t triangle) needs(i, rows, j, cols int) bool {
	switch t {
	case lowerTri:
		return j <= i+rows-1
	case upperTri:
		return j+cols-1 >= i
	}
	return true
}

// inside reports whether the whole rows×cols block at (i, j) lies in the
// triangle (diagonal included).
func (t triangle) inside(i, rows, j, cols int) bool {
	switch t {
	case lowerTri:
		return j+cols-1 <= i
	case upperTri:
		return j >= i+rows-1
	}
	return true
}

// span returns the columns [lo, hi), relative to c, of row i's part of a
// block of cols columns at c that lie in the triangle.
func (t triangle) span(i, c, cols int) (lo, hi int) {
	switch t {
	case lowerTri:
		return 0, max(0, min(cols, i-c+1))
	case upperTri:
		return min(cols, max(0, i-c)), cols
	}
	return 0, cols
}

// kBlock is the k step for a term of depth k: at most kcMax, evenly split.
func kBlock(k int) int { return ceilDiv(k, ceilDiv(k, kcMax)) }

type buffers struct {
	a, b []float64
	tile [mr * nr]float64
}

var bufPool = sync.Pool{New: func() any {
	return &buffers{a: make([]float64, mcMax*kcMax), b: make([]float64, ncMax*kcMax)}
}}

// work takes tasks until none are left.
func (j *job) work(terms []Term) {
	buf := bufPool.Get().(*buffers)
	defer bufPool.Put(buf)
	tasks := int64(j.p.mBlocks * j.p.nBlocks)
	for {
		t := j.next.Add(1) - 1
		if t >= tasks {
			return
		}
		bi, bj := int(t)/j.p.nBlocks, int(t)%j.p.nBlocks
		j.task(buf, terms, bi*j.p.mc, bj*j.p.nc)
	}
}

func (j *job) task(buf *buffers, terms []Term, i0, j0 int) {
	p := j.p
	mc, nc := min(p.mc, p.m-i0), min(p.nc, p.n-j0)
	if !j.tri.needs(i0, mc, j0, nc) {
		return
	}
	first := j.set
	for ti := range terms {
		t := &terms[ti]
		if !t.live() {
			continue
		}
		kcT := kBlock(t.K)
		buf.fit(roundUp(mc, mr)*kcT, roundUp(nc, nr)*kcT)
		for p0 := 0; p0 < t.K; p0 += kcT {
			kc := min(kcT, t.K-p0)
			set := first
			first = false
			packA(t, buf.a, i0, mc, p0, kc)
			packB(t, buf.b, j0, nc, p0, kc)
			j.block(buf, t.Alpha, i0, mc, j0, nc, kc, set)
		}
	}
}

// workSerial is work on one goroutine in the classic loop order: each
// kc×nc panel of B is packed once and swept by every mc-row block of A,
// where the task grid packs it once per row block (the tasks exist to be
// shared among goroutines). Under inter-op scheduling every product runs
// here, and the products of a 1 024-row batch packed B nine times: the
// packing was 15% of a ten-class UCI step against the kernel's 35%.
func (j *job) workSerial(terms []Term) {
	buf := bufPool.Get().(*buffers)
	defer bufPool.Put(buf)
	p := j.p
	for j0 := 0; j0 < p.n; j0 += p.nc {
		nc := min(p.nc, p.n-j0)
		first := j.set
		for ti := range terms {
			t := &terms[ti]
			if !t.live() {
				continue
			}
			kcT := kBlock(t.K)
			buf.fit(roundUp(p.mc, mr)*kcT, roundUp(nc, nr)*kcT)
			for p0 := 0; p0 < t.K; p0 += kcT {
				kc := min(kcT, t.K-p0)
				set := first
				first = false
				packB(t, buf.b, j0, nc, p0, kc)
				for i0 := 0; i0 < p.m; i0 += p.mc {
					mc := min(p.mc, p.m-i0)
					if !j.tri.needs(i0, mc, j0, nc) {
						continue
					}
					packA(t, buf.a, i0, mc, p0, kc)
					j.block(buf, t.Alpha, i0, mc, j0, nc, kc, set)
				}
			}
		}
	}
}

// fit grows the packing buffers to hold na and nb elements.
func (b *buffers) fit(na, nb int) {
	if len(b.a) < na {
		b.a = make([]float64, na)
	}
	if len(b.b) < nb {
		b.b = make([]float64, nb)
	}
}

// block adds (or with set stores) alpha times the packed mc×kc block of A
// and kc×nc panel of B into C at (i0, j0), one register tile at a time, or
// two side by side where the CPU has a pair kernel.
func (j *job) block(buf *buffers, alpha float64, i0, mc, j0, nc, kc int, set bool) {
	for jr := 0; jr < nc; {
		if pairKernel != nil && jr+2*nr <= nc {
			b0 := buf.b[jr*kc : (jr+nr)*kc]
			b1 := buf.b[(jr+nr)*kc : (jr+2*nr)*kc]
			for ir := 0; ir < mc; ir += mr {
				as := buf.a[ir*kc : (ir+mr)*kc]
				rows := min(mr, mc-ir)
				n0 := j.tri.needs(i0+ir, rows, j0+jr, nr)
				n1 := j.tri.needs(i0+ir, rows, j0+jr+nr, nr)
				if rows == mr && n0 && n1 && (!j.exact || j.tri.inside(i0+ir, rows, j0+jr, 2*nr)) {
					off := (i0+ir)*j.ldc + j0 + jr
					pairKernel(kc, as, b0, b1, j.c[off:], j.c[off+nr:], j.ldc, alpha, set)
					continue
				}
				if n0 {
					j.tile(buf, alpha, as, b0, i0+ir, rows, j0+jr, nr, kc, set)
				}
				if n1 {
					j.tile(buf, alpha, as, b1, i0+ir, rows, j0+jr+nr, nr, kc, set)
				}
			}
			jr += 2 * nr
			continue
		}
		bs := buf.b[jr*kc : (jr+nr)*kc]
		cols := min(nr, nc-jr)
		for ir := 0; ir < mc; ir += mr {
			rows := min(mr, mc-ir)
			if j.tri.needs(i0+ir, rows, j0+jr, cols) {
				j.tile(buf, alpha, buf.a[ir*kc:(ir+mr)*kc], bs, i0+ir, rows, j0+jr, cols, kc, set)
			}
		}
		jr += nr
	}
}

// tile adds (or stores) one register tile, rows×cols at (i, c) of C.
func (j *job) tile(buf *buffers, alpha float64, as, bs []float64, i, rows, c, cols, kc int, set bool) {
	off := i*j.ldc + c
	exact := j.exact && !j.tri.inside(i, rows, c, cols)
	if rows == mr && cols == nr && !exact {
		microKernel(kc, as, bs, j.c[off:], j.ldc, alpha, set)
		return
	}
	// Edge tile, or one across the diagonal of an exact triangle: compute
	// into a scratch tile, then store or add the valid part.
	microKernel(kc, as, bs, buf.tile[:], nr, alpha, true)
	for r := 0; r < rows; r++ {
		lo, hi := 0, cols
		if exact { // the triangle's part of the row
			lo, hi = j.tri.span(i+r, c, cols)
		}
		if lo >= hi {
			continue
		}
		cr := j.c[off+r*j.ldc+lo : off+r*j.ldc+hi]
		tl := buf.tile[r*nr+lo : r*nr+hi]
		if set {
			copy(cr, tl)
			continue
		}
		for c := range cr {
			cr[c] += tl[c]
		}
	}
}

// packA writes rows i0..i0+mc of op(A), columns p0..p0+kc, as slivers of
// mr rows stored column by column (zero rows pad the last sliver). Rows of
// the stored matrix are read in order: a strided walk down a column of a
// 784-wide matrix misses the cache on every element.
func packA(t *Term, dst []float64, i0, mc, p0, kc int) {
	if rem := mc % mr; rem != 0 {
		clear(dst[(mc-rem)*kc : (mc-rem+mr)*kc])
	}
	if t.TA { // op(A) row i is column i of A
		if avx512 {
			// A sliver at a time: its kc groups of six are consecutive in
			// dst, which the assembly writes in whole vectors.
			full := mc - mc%mr
			for s := 0; s < full; s += mr {
				base := p0*t.LDA + i0 + s
				_ = t.A[base+(kc-1)*t.LDA+mr-1] // the bounds the assembly does not check
				_ = dst[(s+mr)*kc-1]
				strided6Kernel512(&dst[s*kc], &t.A[base], t.LDA, kc)
			}
			for q := 0; q < kc && full < mc; q++ {
				src := t.A[(p0+q)*t.LDA+i0+full : (p0+q)*t.LDA+i0+mc]
				copy(dst[full*kc+q*mr:], src)
			}
			return
		}
		for q := 0; q < kc; q++ {
			src := t.A[(p0+q)*t.LDA+i0 : (p0+q)*t.LDA+i0+mc]
			for s := 0; s < mc; s += mr {
				end := min(s+mr, mc)
				d := dst[s*kc+q*mr : s*kc+q*mr+end-s]
				for r, v := range src[s:end] {
					d[r] = v
				}
			}
		}
		return
	}
	for s := 0; s < mc; s += mr {
		sl := dst[s*kc : (s+mr)*kc]
		if mc-s >= mr {
			row := func(r int) []float64 { i := i0 + s + r; return t.A[i*t.LDA+p0 : i*t.LDA+p0+kc] }
			gather6(sl, row(0), row(1), row(2), row(3), row(4), row(5))
			continue
		}
		for r := 0; r < mc-s; r++ {
			i := i0 + s + r
			for q, v := range t.A[i*t.LDA+p0 : i*t.LDA+p0+kc] {
				sl[q*mr+r] = v
			}
		}
	}
}

// gather6 interleaves six rows of equal length into dst, element q of row
// r at dst[q·6+r]: each step writes six neighbours, where a row at a time
// wrote one element per 48 bytes of dst (the packing of a MNIST product's
// operand took as long as a third of its multiply-adds).
//
// With AVX-512 eight columns at a time go through an 8×8 transpose in
// registers (gather6Kernel512), the same values moved: the Go loop, a load
// and a store per value, was 3–4% of the MNIST step.
func gather6(dst, r0, r1, r2, r3, r4, r5 []float64) {
	n := len(r0)
	r1, r2, r3, r4, r5 = r1[:n], r2[:n], r3[:n], r4[:n], r5[:n]
	dst = dst[:6*n]
	done := 0
	if avx512 && n >= 8 {
		rows := [6]*float64{&r0[0], &r1[0], &r2[0], &r3[0], &r4[0], &r5[0]}
		gather6Kernel512(&dst[0], &rows, n/8)
		done = n / 8 * 8
	}
	for q := done; q < n; q++ {
		d := dst[q*6 : q*6+6 : q*6+6]
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[q], r1[q], r2[q], r3[q], r4[q], r5[q]
	}
}

// gather8 is gather6 for eight rows, each element times w[q] when w is not
// nil (packBScaled's inner weights).
func gather8(dst []float64, rows *[8][]float64, w []float64) {
	n := len(rows[0])
	r0, r1, r2, r3 := rows[0], rows[1][:n], rows[2][:n], rows[3][:n]
	r4, r5, r6, r7 := rows[4][:n], rows[5][:n], rows[6][:n], rows[7][:n]
	dst = dst[:8*n]
	done := 0
	if avx512 && n >= 8 {
		ptrs := [8]*float64{&r0[0], &r1[0], &r2[0], &r3[0], &r4[0], &r5[0], &r6[0], &r7[0]}
		var wp *float64
		if w != nil {
			wp = &w[:n][0]
		}
		gather8Kernel512(&dst[0], &ptrs, wp, n/8) // each product rounded as below
		done = n / 8 * 8
	}
	if w == nil {
		for q := done; q < n; q++ {
			d := dst[q*8 : q*8+8 : q*8+8]
			d[0], d[1], d[2], d[3] = r0[q], r1[q], r2[q], r3[q]
			d[4], d[5], d[6], d[7] = r4[q], r5[q], r6[q], r7[q]
		}
		return
	}
	w = w[:n]
	for q := done; q < n; q++ {
		s := w[q]
		d := dst[q*8 : q*8+8 : q*8+8]
		d[0], d[1], d[2], d[3] = r0[q]*s, r1[q]*s, r2[q]*s, r3[q]*s
		d[4], d[5], d[6], d[7] = r4[q]*s, r5[q]*s, r6[q]*s, r7[q]*s
	}
}

// packBRows packs the transposed layout (op(B) column c is row c of B) a
// sliver of eight rows at a time, scaled by w when it is not nil.
func packBRows(t *Term, dst []float64, j0, nc, p0, kc int, w []float64) {
	var rows [8][]float64
	full := nc - nc%nr
	for s := 0; s < full; s += nr {
		for r := range rows {
			c := j0 + s + r
			rows[r] = t.B[c*t.LDB+p0 : c*t.LDB+p0+kc]
		}
		gather8(dst[s*kc:(s+nr)*kc], &rows, w)
	}
	for c := full; c < nc; c++ {
		sl := dst[full*kc : (full+nr)*kc]
		cc := c - full
		for q, v := range t.B[(j0+c)*t.LDB+p0 : (j0+c)*t.LDB+p0+kc] {
			if w != nil {
				v *= w[q]
			}
			sl[q*nr+cc] = v
		}
	}
}

// packB writes rows p0..p0+kc of op(B), columns j0..j0+nc, as slivers of
// nr columns stored row by row (zero columns pad the last sliver), reading
// the stored matrix row by row for the same reason as packA.
func packB(t *Term, dst []float64, j0, nc, p0, kc int) {
	if rem := nc % nr; rem != 0 {
		clear(dst[(nc-rem)*kc : (nc-rem+nr)*kc])
	}
	if t.ScaleK != nil {
		packBScaled(t, dst, j0, nc, p0, kc)
		return
	}
	if !t.TB {
		// A sliver at a time, its kc groups consecutive in dst: a row of B
		// at a time sent each group to another sliver, nr·kc values apart,
		// and at kc = 256 every such store fell in the same cache sets (5×
		// slower on a 256×1000 block, BenchmarkPackB).
		full := nc - nc%nr
		base := p0*t.LDB + j0
		for s := 0; s < full; s += nr {
			groups8(dst[s*kc:], nr, t.B[base+s:], t.LDB, kc)
		}
		for q := 0; q < kc && full < nc; q++ {
			src := t.B[(p0+q)*t.LDB+j0 : (p0+q)*t.LDB+j0+nc]
			copy8(dst[full*kc+q*nr:full*kc+q*nr+nc-full], src[full:])
		}
		return
	}
	packBRows(t, dst, j0, nc, p0, kc, nil)
}

// packBScaled is packB with op(B)'s row p0+q multiplied by ScaleK[p0+q].
func packBScaled(t *Term, dst []float64, j0, nc, p0, kc int) {
	s := t.ScaleK[p0 : p0+kc]
	if !t.TB {
		// A sliver at a time, as packB (the row-at-a-time stores fell in
		// the same cache sets).
		for c0 := 0; c0 < nc; c0 += nr {
			width := min(nr, nc-c0)
			sl := dst[c0*kc : c0*kc+kc*nr]
			for q, w := range s {
				src := t.B[(p0+q)*t.LDB+j0+c0 : (p0+q)*t.LDB+j0+c0+width]
				d := sl[q*nr : q*nr+width]
				for c, v := range src {
					d[c] = v * w
				}
			}
		}
		return
	}
	packBRows(t, dst, j0, nc, p0, kc, s)
}

// groups8 moves whole slivers: nr must be 8.
var _ = [1]int{}[nr-8]

// groups8 copies n groups of 8 doubles from src[g·srcStride:] to
// dst[g·dstStride:]; the assembly version where the kernel runs.
var groups8 = func(dst []float64, dstStride int, src []float64, srcStride int, n int) {
	for g := range n {
		copy8(dst[g*dstStride:g*dstStride+8], src[g*srcStride:g*srcStride+8])
	}
}

// copy8 copies up to 8 elements; the runtime's memmove costs more than the
// copy itself at this length.
func copy8(dst, src []float64) {
	if len(src) == 8 && len(dst) == 8 {
		dst[0], dst[1], dst[2], dst[3] = src[0], src[1], src[2], src[3]
		dst[4], dst[5], dst[6], dst[7] = src[4], src[5], src[6], src[7]
		return
	}
	for i, v := range src {
		dst[i] = v
	}
}
