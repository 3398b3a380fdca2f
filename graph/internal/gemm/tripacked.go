package gemm

import (
	"sync"

	"gonum.org/v1/gonum/blas"
)

// Left-side triangular solves and products with one packing of the
// right-hand side. The recursive halving of trsm and trmm packs B again
// at every level of the recursion (a 300-row triangle against a 1 024
// column B packed it about four times over) and leaves a sixth of the work
// to gonum's substitution loops; together they held those routines to
// 12–15 G multiply-adds/s where the micro-kernel reaches 23–26.
//
// Here B is packed once per strip of columns, in micro-kernel slivers of
// nr columns, and every block of mr rows is one micro-kernel call per
// sliver with k running over the triangle's reach:
//
//   - a product X_I = Σ_j op(T)_Ij B_j reads the packed B and writes B's
//     rows directly;
//   - a solve, taken in the order in which op(T) is lower triangular (rows
//     reversed when it is upper), computes
//     X_I = D_I⁻¹(alpha·B_I − L_I,<I X_<I) = [−D_I⁻¹L_I,<I | alpha·D_I⁻¹]·[X_<I; B_I],
//     the packed sliver holding the solved rows above B_I's, and the result
//     is stored over B_I in the sliver (the kernel reads all of its inputs
//     before it stores). The inverse of the mr×mr diagonal block D_I is
//     formed once per call, as blocked solvers on GPUs do; its rounding is
//     that of the substitution it replaces, to within a few ulp for the
//     well-conditioned blocks of Cholesky factors (TestDtrsmMatchesGonum's
//     tolerance is 1e-11).
//
// The coefficient panels of all blocks are built once per call and shared
// by the strips, which are independent and run on up to Procs goroutines.

// triStripBytes bounds a strip's packed B, so that it stays in the
// per-core cache while every block of rows sweeps it.
const triStripBytes = 256 << 10

// triPool holds the coefficient panels and packed strips.
var triPool = sync.Pool{New: func() any { return new([]float64) }}

func triBuf(n int) *[]float64 {
	p := triPool.Get().(*[]float64)
	if cap(*p) < n {
		*p = make([]float64, n)
	}
	*p = (*p)[:n]
	return p
}

// triPlan describes one call: op(T) in the order in which it is lower
// triangular (for a solve) and the coefficient panel of each block of mr
// rows.
type triPlan struct {
	solve   bool
	m, n    int
	mPad    int  // m rounded up to whole blocks: rows of a packed sliver
	rev     bool // rows are taken in reverse order (a solve with op(T) upper)
	lower   bool // op(T) is lower triangular (for a product)
	triRHS  bool // B and the result are lower triangular (a solve with lower T)
	blocks  int
	coef    []float64
	src     []float64 // B, read only when a strip is packed
	lds     int
	b       []float64 // the result, which may be src
	ldb     int
	nc      int // strip width
	nStrips int
	workers int
}

// block returns block bi's first row of the packed B, its depth and its
// panel's offset in coef: the reach of rows bi·mr… in op(T), which for a
// solve (taken in lower order) and a lower product starts at 0, and for an
// upper product at the block's own first row. Only the last block can be
// shorter than mr.
func (p *triPlan) block(bi int) (k0, kc, off int) {
	r0 := bi * mr
	if p.solve || p.lower {
		return 0, min(r0+mr, p.m), mr * mr * bi * (bi + 1) / 2
	}
	return r0, p.m - r0, mr * (bi*p.m - mr*bi*(bi-1)/2)
}

// row maps the i-th row in solve order to a row of B.
func (p *triPlan) row(i int) int {
	if p.rev {
		return p.m - 1 - i
	}
	return i
}

// packedTri computes B = alpha·op(T)⁻¹·B (solve) or B = alpha·op(T)·B
// for a left-side triangular T, in place. Arguments are valid
// (blockedLeft).
func packedTri(solve bool, ul blas.Uplo, trans bool, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	packedTriPlan(triPlan{solve: solve, m: m, n: n, src: b, lds: ldb, b: b, ldb: ldb}, ul, trans, d, alpha, a, lda)
}

// packedTriPlan runs the call p describes (its solve, shape, operands and
// triRHS set).
func packedTriPlan(p triPlan, ul blas.Uplo, trans bool, d blas.Diag, alpha float64, a []float64, lda int) {
	m, n := p.m, p.n
	opLower := (ul == blas.Lower) != trans
	p.mPad, p.lower = roundUp(m, mr), opLower
	p.rev = p.solve && !opLower
	unit := d == blas.Unit
	p.blocks = p.mPad / mr
	_, _, size := p.block(p.blocks)
	coefBuf := triBuf(size)
	defer triPool.Put(coefBuf)
	p.coef = *coefBuf
	clear(p.coef)
	if p.solve {
		p.solveCoef(a, lda, trans, unit, alpha)
	} else {
		p.productCoef(a, lda, trans, unit, alpha)
	}
	// Whole sliver pairs: an odd sliver per strip runs the single
	// kernel, at two thirds of the pair's rate.
	p.nc = max(2*nr, triStripBytes/8/p.mPad/(2*nr)*(2*nr))
	p.nc = min(p.nc, roundUp(n, nr))
	p.nStrips = ceilDiv(n, p.nc)
	p.workers = 1
	if Procs() > 1 && p.nStrips > 1 && m*m*n >= 2*parallelMin {
		p.workers = min(Procs(), p.nStrips)
	}
	if p.workers == 1 {
		p.strips(0, 1)
		return
	}
	shared := new(triPlan) // the goroutines' copy: p itself stays on the stack
	*shared = p
	var wg sync.WaitGroup
	wg.Add(p.workers - 1)
	for w := 1; w < p.workers; w++ {
		go func() {
			defer wg.Done()
			shared.strips(w, shared.workers)
		}()
	}
	shared.strips(0, shared.workers)
	wg.Wait()
}

// productCoef builds each block's panel of alpha·op(T)'s rows over their
// reach, zero outside the triangle (T's other triangle is not read).
func (p *triPlan) productCoef(a []float64, lda int, trans, unit bool, alpha float64) {
	si, sj := lda, 1 // op(T)[i, c] = a[i·si + c·sj]
	if trans {
		si, sj = 1, lda
	}
	for bi := range p.blocks {
		k0, kc, off := p.block(bi)
		w := p.coef[off : off+mr*kc]
		for r := 0; r < min(mr, p.m-bi*mr); r++ {
			i := bi*mr + r
			lo, hi := 0, i+1 // the row's reach in op(T)
			if !p.lower {
				lo, hi = i, p.m
			}
			for c := lo; c < hi; c++ {
				w[(c-k0)*mr+r] = alpha * a[i*si+c*sj]
			}
			if unit {
				w[(i-k0)*mr+r] = alpha
			}
		}
	}
}

// solveCoef builds each block's panel [−D⁻¹L_I,<I | alpha·D⁻¹], where
// L(i, j) = op(T)[row(i), row(j)] is lower triangular: L(i, j) is
// a[base + i·si + j·sj].
func (p *triPlan) solveCoef(a []float64, lda int, trans, unit bool, alpha float64) {
	base, si, sj := 0, lda, 1
	if trans {
		si, sj = 1, lda
	}
	if p.rev {
		base, si, sj = (p.m-1)*lda+p.m-1, -si, -sj
	}
	var dinv [mr][mr]float64
	var g [mr]float64
	for bi := range p.blocks {
		r0 := bi * mr
		h := min(mr, p.m-r0)
		_, kc, off := p.block(bi)
		// D⁻¹ by forward substitution on the identity.
		for r := range h {
			ri := base + (r0+r)*si
			drr := 1.0
			if !unit {
				drr = a[ri+(r0+r)*sj]
			}
			dinv[r] = [mr]float64{}
			dinv[r][r] = 1 / drr
			for s := 0; s < r; s++ {
				acc := 0.0
				for t := s; t < r; t++ {
					acc += a[ri+(r0+t)*sj] * dinv[t][s]
				}
				dinv[r][s] = -acc / drr
			}
		}
		for r := h; r < mr; r++ {
			dinv[r] = [mr]float64{}
		}
		w := p.coef[off : off+mr*kc]
		if h == mr {
			fullBlockCoef(&dinv, a, base+r0*si, si, sj, w[:r0*mr])
		}
		for k := 0; k < r0 && h < mr; k++ {
			col := base + k*sj + r0*si
			for s := range h {
				g[s] = a[col+s*si]
			}
			wk := w[k*mr : k*mr+mr]
			for r := range h {
				acc := 0.0
				for s := 0; s <= r; s++ {
					acc += dinv[r][s] * g[s]
				}
				wk[r] = -acc
			}
		}
		for r := range h {
			for s := 0; s <= r; s++ {
				w[(r0+s)*mr+r] = alpha * dinv[r][s]
			}
		}
	}
}

// fullBlockCoef writes −D⁻¹L_I,<I for a whole block of mr rows into w
// (column k at w[k·mr:]), L(r0+s, k) being a[at + s·si + k·sj]: the loop
// of solveCoef with D⁻¹ held in registers, a third of a solve's time
// otherwise at the m = 300 shape.
func fullBlockCoef(dinv *[mr][mr]float64, a []float64, at, si, sj int, w []float64) {
	d00 := dinv[0][0]
	d10, d11 := dinv[1][0], dinv[1][1]
	d20, d21, d22 := dinv[2][0], dinv[2][1], dinv[2][2]
	d30, d31, d32, d33 := dinv[3][0], dinv[3][1], dinv[3][2], dinv[3][3]
	d40, d41, d42, d43, d44 := dinv[4][0], dinv[4][1], dinv[4][2], dinv[4][3], dinv[4][4]
	d50, d51, d52, d53, d54, d55 := dinv[5][0], dinv[5][1], dinv[5][2], dinv[5][3], dinv[5][4], dinv[5][5]
	for k := 0; k+mr <= len(w); k += mr {
		col := at + (k/mr)*sj
		g0, g1, g2 := a[col], a[col+si], a[col+2*si]
		g3, g4, g5 := a[col+3*si], a[col+4*si], a[col+5*si]
		wk := w[k : k+mr : k+mr]
		wk[0] = -(d00 * g0)
		wk[1] = -(d10*g0 + d11*g1)
		wk[2] = -(d20*g0 + d21*g1 + d22*g2)
		wk[3] = -(d30*g0 + d31*g1 + d32*g2 + d33*g3)
		wk[4] = -(d40*g0 + d41*g1 + d42*g2 + d43*g3 + d44*g4)
		wk[5] = -(d50*g0 + d51*g1 + d52*g2 + d53*g3 + d54*g4 + d55*g5)
	}
}

// strips processes strips w, w+workers, … of B's columns.
func (p *triPlan) strips(w, workers int) {
	slivers := p.nc / nr
	packBuf := triBuf(slivers*p.mPad*nr + mr*nr)
	defer triPool.Put(packBuf)
	packed, tile := (*packBuf)[:slivers*p.mPad*nr], (*packBuf)[slivers*p.mPad*nr:]
	for s := w; s < p.nStrips; s += workers {
		j0 := s * p.nc
		nc := min(p.nc, p.n-j0)
		// Pack the strip: sliver q holds columns j0+q·nr… as mPad rows of
		// nr, rows in solve order, zero columns past n.
		full := nc / nr // whole slivers
		if p.triRHS {
			p.packLower(packed, j0, nc)
		} else {
			for i := range p.m {
				src := p.src[p.row(i)*p.lds+j0 : p.row(i)*p.lds+j0+nc]
				groups8(packed[i*nr:], p.mPad*nr, src, nr, full) // the partial sliver below
				if full*nr < nc {
					dst := packed[(full*p.mPad+i)*nr : (full*p.mPad+i)*nr+nr]
					clear(dst)
					copy(dst, src[full*nr:])
				}
			}
		}
		// Slivers outside, blocks of rows inside (the blocked product's
		// order: a sliver pair stays in L1 while the coefficient panels
		// stream; at these sizes no faster than the other nesting), so
		// that a lower-triangular B's zero rows are skipped per sliver.
		for q := 0; q*nr < nc; {
			pair := pairKernel != nil && (q+2)*nr <= nc
			sl := packed[q*p.mPad*nr : (q+1)*p.mPad*nr]
			var sl1 []float64
			if pair {
				sl1 = packed[(q+1)*p.mPad*nr : (q+2)*p.mPad*nr]
			}
			bi0, bi1, ks := p.reach(j0 + q*nr)
			for bi := bi0; bi < bi1; bi++ {
				r0 := bi * mr
				k0, kc, off := p.block(bi)
				rows := min(mr, p.m-r0)
				w := p.coef[off : off+mr*kc]
				if ks > 0 { // rows of X above ks are zero in these columns
					k0, kc, w = k0+ks, kc-ks, w[ks*mr:]
				}
				switch {
				case pair && p.solve:
					pairKernel(kc, w, sl[k0*nr:], sl1[k0*nr:], sl[r0*nr:], sl1[r0*nr:], nr, 1, true)
				case pair && rows == mr:
					o := r0*p.ldb + j0 + q*nr
					pairKernel(kc, w, sl[k0*nr:], sl1[k0*nr:], p.b[o:], p.b[o+nr:], p.ldb, 1, true)
				case pair:
					p.single(q, r0, k0, kc, rows, nc, j0, w, sl, tile)
					p.single(q+1, r0, k0, kc, rows, nc, j0, w, sl1, tile)
				default:
					p.single(q, r0, k0, kc, rows, nc, j0, w, sl, tile)
				}
			}
			if pair {
				q += 2
			} else {
				q++
			}
		}
		if !p.solve {
			continue
		}
		if p.triRHS {
			p.unpackLower(packed, j0, nc)
			continue
		}
		for i := range p.m {
			dst := p.b[p.row(i)*p.ldb+j0 : p.row(i)*p.ldb+j0+nc]
			groups8(dst, nr, packed[i*nr:], p.mPad*nr, full)
			if full*nr < nc {
				copy(dst[full*nr:], packed[(full*p.mPad+i)*nr:(full*p.mPad+i)*nr+nc-full*nr])
			}
		}
	}
}

// single is one micro-kernel call for sliver q (packed at sl) and the
// block of rows at r0: a solve stores over B_I in the sliver (the kernel
// reads before it writes), a product into B's rows, through tile when the
// block or the sliver is partial.
func (p *triPlan) single(q, r0, k0, kc, rows, nc, j0 int, w, sl, tile []float64) {
	if p.solve {
		microKernel(kc, w, sl[k0*nr:], sl[r0*nr:], nr, 1, true)
		return
	}
	cols := min(nr, nc-q*nr)
	off := r0*p.ldb + j0 + q*nr
	if rows == mr && cols == nr {
		microKernel(kc, w, sl[k0*nr:], p.b[off:], p.ldb, 1, true)
		return
	}
	microKernel(kc, w, sl[k0*nr:], tile, nr, 1, true)
	for r := range rows {
		copy(p.b[off+r*p.ldb:off+r*p.ldb+cols], tile[r*nr:r*nr+cols])
	}
}

// reach returns the blocks [bi0, bi1) a sliver (pair) whose first column is
// j must go through, and how many leading rows of the coefficient panels
// (in solve order) it may skip. With a lower-triangular B and result, X's
// rows above j are zero in columns j…: a solve with op(T) lower starts at
// j's block and skips the zero rows' columns of the panels, one with
// op(T) = Lᵀ (rows reversed) stops after row j's block. Otherwise all.
func (p *triPlan) reach(j int) (bi0, bi1, ks int) {
	if !p.triRHS {
		return 0, p.blocks, 0
	}
	if !p.rev {
		bi0 = min(j, p.m) / mr
		return bi0, p.blocks, bi0 * mr
	}
	if j >= p.m {
		return 0, 0, 0
	}
	return 0, (p.m-1-j)/mr + 1, 0
}

// liveRows returns the rows [lo, hi), in solve order, that the blocks of a
// sliver (pair) whose first column is j read or compute (see reach); with
// a triangular B the others are zeros, neither packed nor copied back.
func (p *triPlan) liveRows(j int) (lo, hi int) {
	bi0, bi1, ks := p.reach(j)
	return max(ks, bi0*mr), min(bi1*mr, p.m)
}

// packLower packs a strip of a lower-triangular B sliver by sliver: row r
// is read up to column r, and only a sliver's live rows are written.
func (p *triPlan) packLower(packed []float64, j0, nc int) {
	for q := 0; q*nr < nc; q++ {
		lo, hi := p.liveRows(j0 + (q&^1)*nr)
		for i := lo; i < hi; i++ {
			r := p.row(i)
			cols := max(0, min(nr, nc-q*nr, r+1-j0-q*nr))
			dst := packed[(q*p.mPad+i)*nr : (q*p.mPad+i)*nr+nr]
			at := r*p.lds + j0 + q*nr
			if cols == nr {
				copy8(dst, p.src[at:at+nr])
				continue
			}
			clear(dst)
			copy(dst, p.src[at:at+cols])
		}
	}
}

// unpackLower copies a solved strip back, zeros where the blocks computed
// nothing and above the diagonal (not what the blocks left there).
func (p *triPlan) unpackLower(packed []float64, j0, nc int) {
	for q := 0; q*nr < nc; q++ {
		lo, hi := p.liveRows(j0 + (q&^1)*nr)
		cols := min(nr, nc-q*nr)
		for i := range p.m {
			dst := p.b[p.row(i)*p.ldb+j0+q*nr : p.row(i)*p.ldb+j0+q*nr+cols]
			if i < lo || i >= hi {
				clear(dst)
				continue
			}
			copy8(dst, packed[(q*p.mPad+i)*nr:(q*p.mPad+i)*nr+cols])
		}
	}
	for i := range p.m {
		r := p.row(i)
		clear(p.b[r*p.ldb+j0+max(0, min(nc, r+1-j0)) : r*p.ldb+j0+nc])
	}
}
