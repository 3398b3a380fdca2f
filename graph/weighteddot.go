package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// WeightedDot returns x·diag(w)·zᵀ for an m×d x, an n×d z and a d-vector w
// (an ARD kernel's weighted inner products). The weights enter the
// product's packing of z rather than a weighted copy: on MNIST (d = 784,
// ten classes) the copies and their passes over memory took a seventh of
// the step. With x and z the same node it is the Gram matrix z·diag(w)·zᵀ,
// one triangle computed and mirrored, whose reverse pass is one product.
// Values equal the composed form's (ScaleColumns then MatMul) within
// rounding, to the last bit when the weights are on z's side.
func WeightedDot(x, z, w *G.Node) (*G.Node, error) {
	xs, zs, ws := x.Shape(), z.Shape(), w.Shape()
	if len(xs) != 2 || len(zs) != 2 || xs[1] != zs[1] || len(ws) != 1 || ws[0] != xs[1] {
		return nil, fmt.Errorf("graph.WeightedDot: want an m×d, an n×d matrix and a d-vector, got shapes %v, %v and %v", xs, zs, ws)
	}
	if x == z {
		return applyOp(weightedGramOp{n: zs[0], d: zs[1]}, z, w)
	}
	return applyOp(weightedDotOp{m: xs[0], n: zs[0], d: xs[1]}, x, z, w)
}

type weightedDotOp struct {
	pureOp
	m, n, d int
}

func (op weightedDotOp) Arity() int    { return 3 }
func (op weightedDotOp) Type() hm.Type { return fnType(2, 2, 2, 1) }
func (op weightedDotOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.m, op.n}, nil
}
func (op weightedDotOp) String() string {
	return fmt.Sprintf("WeightedDot(%dx%d,%dx%d)", op.m, op.d, op.n, op.d)
}
func (op weightedDotOp) WriteHash(h hash.Hash)  { writeHash(h, op) }
func (op weightedDotOp) Hashcode() uint32       { return hashOf(op) }
func (op weightedDotOp) DiffWRT(int) []bool     { return allDiff(3) }
func (op weightedDotOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op weightedDotOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	x, z, w := in[0], in[1], in[2]
	c := op.buf.take(op.m * op.n)
	multiplyAdds.Add(int64(op.m) * int64(op.n) * int64(op.d))
	t := append(op.buf.termsOf(1), gemm.Term{TB: true, K: op.d, Alpha: 1, A: x, LDA: op.d, B: z, LDB: op.d, ScaleK: w})
	gemm.DgemmSum(op.m, op.n, t, 0, c, op.n)
	return op.buf.owned(tensor.Shape{op.m, op.n}, c), nil
}

// SymDiff is the reverse pass of the composed form, x ⊙ w times zᵀ (for
// an x with no more rows than z; mirrored otherwise): with U = Ḡ z,
// x̄ = U ⊙ w and w̄ = Σ_rows U ⊙ x, and z̄ = Ḡᵀ(x ⊙ w). The weighted copy
// of the shorter side is made only if z̄ is wanted (NIMGP's batch of
// inputs, not MGP's data), and w̄ comes from that side's product, which
// the inducing points' own gradient needs anyway.
func (op weightedDotOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	x, z, w := in[0], in[1], in[2]
	if op.m <= op.n {
		gx, gz, gw, err := weightedAdjoints(g, x, z, w, false)
		return G.Nodes{gx, gz, gw}, err
	}
	gz, gx, gw, err := weightedAdjoints(g, z, x, w, true)
	return G.Nodes{gx, gz, gw}, err
}

// weightedAdjoints returns the adjoints of s, o and w for C = s·diag(w)·oᵀ
// (C = o·diag(w)·sᵀ when tr) and C's adjoint g, the weights on s's side.
func weightedAdjoints(g, s, o, w *G.Node, tr bool) (gs, gother, gw *G.Node, err error) {
	e := &Chain{}
	u := e.Do(MatMul(g, o, tr, false))
	if e.Err != nil {
		return nil, nil, nil, e.Err
	}
	if gs, gw, err = scaleColumnsAdjoints(s, w, u); err != nil {
		return nil, nil, nil, err
	}
	gother = e.Do(MatMul(g, e.Do(ScaleColumns(s, w)), !tr, false))
	return gs, gother, gw, e.Err
}

// symmetricAdjoints lets a Gram matrix's reverse pass skip symmetrising an
// adjoint that is symmetric by construction (a package variable so that a
// test can compare both ways).
var symmetricAdjoints = true

type weightedGramOp struct {
	pureOp
	n, d int
}

func (op weightedGramOp) Arity() int    { return 2 }
func (op weightedGramOp) Type() hm.Type { return fnType(2, 2, 1) }
func (op weightedGramOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op weightedGramOp) String() string         { return fmt.Sprintf("WeightedGram(%dx%d)", op.n, op.d) }
func (op weightedGramOp) WriteHash(h hash.Hash)  { writeHash(h, op) }
func (op weightedGramOp) Hashcode() uint32       { return hashOf(op) }
func (op weightedGramOp) DiffWRT(int) []bool     { return allDiff(2) }
func (op weightedGramOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op weightedGramOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	z, w := in[0], in[1]
	n, d := op.n, op.d
	c := op.buf.take(n * n)
	multiplyAdds.Add(int64(n) * int64(n+1) / 2 * int64(d))
	gemm.DgemmTriTerm(true, n, gemm.Term{TB: true, K: d, Alpha: 1, A: z, LDA: d, B: z, LDB: d, ScaleK: w}, c, n)
	mirrorLower(c, n)
	return op.buf.owned(tensor.Shape{n, n}, c), nil
}

// SymDiff: with P = (Ḡ + Ḡᵀ)z, z̄ = P ⊙ w and w̄ = ½ Σ_rows P ⊙ z. When
// Ḡ is symmetric by construction (knownSymmetric: a Cholesky reverse pass,
// a Gram matrix, elementwise functions of them), P/2 = Ḡz is formed
// without the pass that adds Ḡᵀ, and z̄ = (Ḡz) ⊙ 2w, w̄ = Σ_rows (Ḡz) ⊙ z:
// the same values to the bit, scalings by two being exact.
func (op weightedGramOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	z, w := in[0], in[1]
	e := &Chain{}
	if symmetricAdjoints && knownSymmetric(g) {
		p := e.Do(MatMul(g, z, false, false))
		w2 := e.Do(G.HadamardProd(w, G.NewConstant(2.0)))
		if e.Err != nil {
			return nil, e.Err
		}
		gz, err := scaleColumnsAdjoint(z, w2, p, 0)
		if err != nil {
			return nil, err
		}
		gw, err := scaleColumnsAdjoint(z, w, p, 1)
		return G.Nodes{gz, gw}, err
	}
	p := e.Do(MatMul(e.Do(symScaled(g, 1)), z, false, false))
	if e.Err != nil {
		return nil, e.Err
	}
	gz, gw, err := scaleColumnsAdjoints(z, w, p)
	if err != nil {
		return nil, err
	}
	gw = e.Do(G.HadamardProd(gw, G.NewConstant(0.5)))
	return G.Nodes{gz, gw}, e.Err
}

// scaleColumnsAdjoint returns the adjoint of x (a = 0) or of v (a = 1) in
// x ⊙ v (v a d-vector shared by the rows) for the adjoint g: g ⊙ v, or
// Σ_rows g ⊙ x. It is the node ScaleColumns' own reverse pass makes
// (elemOp.SymDiff gives each argument of a function with slice forms its
// own adjoint op), so sumScaledColumns recognises it.
func scaleColumnsAdjoint(x, v, g *G.Node, a int) (*G.Node, error) {
	s := x.Shape()
	op := elemOp{f: product, k: 2, n: s[0], d: s[1], rowArgs: 1 << 1, grad: true, one: a + 1}
	return applyOp(op, x, v, g)
}

// scaleColumnsAdjoints returns both of scaleColumnsAdjoint's nodes.
func scaleColumnsAdjoints(x, v, g *G.Node) (gx, gv *G.Node, err error) {
	if gx, err = scaleColumnsAdjoint(x, v, g, 0); err != nil {
		return nil, nil, err
	}
	gv, err = scaleColumnsAdjoint(x, v, g, 1)
	return gx, gv, err
}
