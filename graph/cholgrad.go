package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// cholGradOp is the Cholesky factorisation's reverse pass as one op: from
// L and L̄ it returns the symmetric Ā = sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹) (Murray 2016,
// Φ keeping the lower triangle with half the diagonal). Built from graph
// ops that formula is a triangular product and two triangular solves with
// n right-hand sides, about 1.5 n³ multiply-adds, plus a transpose and
// three passes; here it is Murray's blocked algorithm, which runs the
// factorisation backwards in n³/3, most of it in products: one core,
// 2.60 → 0.69 ms at n = 300 (the additive-noise UCI step's factor, where
// the composed form was a tenth of the step), 142 → 62 µs at n = 100
// (BenchmarkCholGrad).
type cholGradOp struct {
	pureOp
	n int
}

// cholRevBlock is the blocked algorithm's panel width (16–32 were within
// 10% of each other at n = 100 and 300; 64 and wider lose the products'
// share to the unblocked panels). Tests lower it to cross several blocks
// on matrices small enough for finite differences.
var cholRevBlock = 24

// cholGrad returns Ā for the factor l = Cholesky(A) and l's adjoint gl.
func cholGrad(l, gl *G.Node) (*G.Node, error) {
	n, err := squareOf(l, "cholGrad")
	if err != nil {
		return nil, err
	}
	if s := gl.Shape(); len(s) != 2 || s[0] != n || s[1] != n {
		return nil, fmt.Errorf("graph.cholGrad: adjoint of shape %v for a %d×%d factor", s, n, n)
	}
	return applyOp(cholGradOp{n: n}, l, gl)
}

func (op cholGradOp) Arity() int    { return 2 }
func (op cholGradOp) Type() hm.Type { return fnType(2, 2, 2) }
func (op cholGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op cholGradOp) String() string        { return fmt.Sprintf("CholeskyGrad%d", op.n) }
func (op cholGradOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op cholGradOp) Hashcode() uint32      { return hashOf(op) }
func (op cholGradOp) DiffWRT(int) []bool    { return []bool{true, true} }

func (op cholGradOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op cholGradOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	l, gl := in[0], in[1]
	n := op.n
	if len(l) != n*n || len(gl) != n*n {
		return nil, fmt.Errorf("graph: %v got %d and %d values", op, len(l), len(gl))
	}
	// The reverse pass runs in place on the lower triangle of L̄, which
	// becomes the gradient with respect to the lower triangle of A; the
	// upper triangle is only read at the end, to mirror.
	w := op.buf.take(n * n)
	for i := 0; i < n; i++ {
		copy(w[i*n:i*n+i+1], gl[i*n:i*n+i+1])
	}
	nb := min(cholRevBlock, n)
	cholRev(l, w, n, nb, op.buf.scratchOf(2*nb*nb+n*nb))
	multiplyAdds.Add(int64(n) * int64(n) * int64(n) / 3)
	// Our factor is of (A + Aᵀ)/2, so an off-diagonal element of A gets
	// half of its pair's gradient.
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			v := 0.5 * w[i*n+j]
			w[i*n+j], w[j*n+i] = v, v
		}
	}
	return op.buf.owned(tensor.Shape{n, n}, w), nil
}

// cholRev overwrites the lower triangle of w, the adjoint of the lower
// factor l (n×n, row-major), with the adjoint of the lower triangle of A,
// for panels of width nb, last panel first (Murray 2016, chol_blocked_rev).
// With the factor's panel partition at columns [j, k) — R = L[j:k, :j],
// D = L[j:k, j:k], B = L[k:, :j], C = L[k:, j:k] — the forward step was
// D = chol(D − tril(RRᵀ)), C = (C − BRᵀ)D⁻ᵀ; its reverse, in order:
// C̄ ← C̄D⁻¹, B̄ −= C̄R, D̄ −= tril(C̄ᵀC), D̄ ← unblocked reverse,
// R̄ −= C̄ᵀB + (D̄ + D̄ᵀ)R. s holds 2nb² + n·nb of scratch.
func cholRev(l, w []float64, n, nb int, s []float64) {
	inv, sq, tmp := s[:nb*nb], s[nb*nb:2*nb*nb], s[2*nb*nb:]
	view := func(a []float64, r0, c0, r, c int) blas64.General {
		if r == 0 || c == 0 {
			return blas64.General{Rows: r, Cols: c, Stride: max(c, 1), Data: nil}
		}
		return blas64.General{Rows: r, Cols: c, Stride: n, Data: a[r0*n+c0:]}
	}
	for k := n; k > 0; k -= nb {
		j := max(0, k-nb)
		b, m := k-j, n-k
		R, Rb := view(l, j, 0, b, j), view(w, j, 0, b, j)
		B, Bb := view(l, k, 0, m, j), view(w, k, 0, m, j)
		C, Cb := view(l, k, j, m, b), view(w, k, j, m, b)
		if m > 0 {
			// C̄D⁻¹ through D's explicit inverse: a right-side solve would
			// go to gonum's axpy loops, the inverse of a panel is b³/6.
			triInverse(l[j*n+j:], n, b, inv)
			Dinv := blas64.General{Rows: b, Cols: b, Stride: b, Data: inv}
			T := blas64.General{Rows: m, Cols: b, Stride: b, Data: tmp}
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, Cb, Dinv, 0, T)
			for i := 0; i < m; i++ {
				copy(w[(k+i)*n+j:(k+i)*n+k], tmp[i*b:(i+1)*b])
			}
			if j > 0 {
				blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, Cb, R, 1, Bb)
			}
			S := blas64.General{Rows: b, Cols: b, Stride: b, Data: sq}
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, Cb, C, 0, S)
			for r := 0; r < b; r++ {
				row := w[(j+r)*n+j : (j+r)*n+j+r+1]
				for c := range row {
					row[c] -= sq[r*b+c]
				}
			}
		}
		cholRevUnblocked(l, w, n, j, b)
		if j == 0 {
			continue
		}
		if m > 0 {
			blas64.Gemm(blas.Trans, blas.NoTrans, -1, Cb, B, 1, Rb)
		}
		// D̄ + D̄ᵀ, D̄ lower-triangular.
		for r := 0; r < b; r++ {
			for c := 0; c <= r; c++ {
				v := w[(j+r)*n+j+c]
				sq[r*b+c] = v
				sq[c*b+r] = v
			}
			sq[r*b+r] *= 2
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, blas64.General{Rows: b, Cols: b, Stride: b, Data: sq}, R, 1, Rb)
	}
}

// cholRevUnblocked is the reverse of the unblocked factorisation of the
// diagonal panel at (j0, j0), size b, one column at a time, last first
// (Murray 2016, chol_unblocked_rev). Column j's forward step was
// d = √(d₀ − r·r), c = (c₀ − B r)/d with r = L[j, :j], d = L[j, j],
// B = L[j+1:, :j] and c = L[j+1:, j] inside the panel.
func cholRevUnblocked(l, w []float64, n, j0, b int) {
	at := func(i, k int) int { return (j0+i)*n + j0 + k }
	for j := b - 1; j >= 0; j-- {
		d := l[at(j, j)]
		var s float64
		for i := j + 1; i < b; i++ {
			s += l[at(i, j)] * w[at(i, j)]
		}
		db := (w[at(j, j)] - s/d) / d
		r, rb := l[at(j, 0):at(j, j)], w[at(j, 0):at(j, j)]
		for q, v := range r {
			rb[q] -= db * v
		}
		for i := j + 1; i < b; i++ {
			ci := w[at(i, j)] / d
			w[at(i, j)] = ci
			bi, bbi := l[at(i, 0):at(i, j)], w[at(i, 0):at(i, j)]
			for q, v := range bi {
				rb[q] -= ci * v
				bbi[q] -= ci * r[q]
			}
		}
		w[at(j, j)] = db / 2
	}
}

// triInverse writes the inverse of the b×b lower-triangular block of t
// (row stride ld) into inv (b×b, row-major), column by column of forward
// substitution.
func triInverse(t []float64, ld, b int, inv []float64) {
	clear(inv[:b*b])
	for c := 0; c < b; c++ {
		inv[c*b+c] = 1 / t[c*ld+c]
		for i := c + 1; i < b; i++ {
			var s float64
			row := t[i*ld : i*ld+i]
			for q := c; q < i; q++ {
				s += row[q] * inv[q*b+c]
			}
			inv[i*b+c] = -s / t[i*ld+i]
		}
	}
}

// SymDiff differentiates Ā = sym(M), M = L⁻ᵀ P L⁻¹, P = Φ(Lᵀ L̄), for the
// second derivatives through the factorisation, with graph ops. With
// H = sym(Ā's adjoint) and W = L⁻¹H: P̄ = W·L⁻ᵀ = L⁻¹Wᵀ (symmetric),
// Q̄ = Φ(P̄), the adjoint of L̄ is L Q̄ and that of L is
// L̄ Q̄ᵀ − (M + Mᵀ) H L⁻ᵀ = L̄ Q̄ᵀ − 2 Ā Wᵀ.
func (op cholGradOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	l, gl := in[0], in[1]
	e := &Chain{}
	h := e.Do(Sym(g))
	w := e.Do(TriSolve(l, h, true, false))
	pb := e.Do(TriSolve(l, e.Do(G.Transpose(w)), true, false))
	qb := e.Do(TriMask(pb, true, 0.5))
	ggl := e.Do(TriMul(l, qb, true, false))
	gll := e.Do(G.Sub(e.Do(MatMul(gl, qb, false, true)), e.Do(G.HadamardProd(e.Do(MatMul(out, w, false, true)), G.NewConstant(2.0)))))
	return G.Nodes{gll, ggl}, e.Err
}
