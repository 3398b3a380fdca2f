package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// K(Z,Z) products take one node on both sides. Differentiated as a binary op
// they cost two n×n×d products in the reverse pass, one per side, summed
// afterwards; as unary ops the two sides fold into one product with
// Sym(Ḡ). MatMul(a, a, false, true) and SqDist(x, x) choose these ops
// themselves: 12% fewer multiply-adds in the MNIST step.

// gramTriMin is the size (multiply-adds) from which products go to the
// blocked kernel (gemm's smallMin): below it gonum's loops compute the
// whole product.
const gramTriMin = 4096

// gramOp computes A·Aᵀ.
type gramOp struct {
	pureOp
	n, d int
}

func (op gramOp) Arity() int    { return 1 }
func (op gramOp) Type() hm.Type { return fnType(2, 2) }
func (op gramOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op gramOp) String() string        { return fmt.Sprintf("Gram(%dx%d)", op.n, op.d) }
func (op gramOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op gramOp) Hashcode() uint32      { return hashOf(op) }
func (op gramOp) DiffWRT(int) []bool    { return []bool{true} }

func (op gramOp) Do(vs ...G.Value) (G.Value, error) {
	if n, d := op.n, op.d; gemm.KernelName != "go" && n*n*d >= gramTriMin {
		// One triangle by the blocked product, mirrored: the same tiles,
		// so the same values as the full product's, at a little over half
		// its multiply-adds.
		a, err := Float64s(vs[0])
		if err != nil {
			return nil, err
		}
		c := op.buf.take(n * n)
		multiplyAdds.Add(int64(n) * int64(n+1) / 2 * int64(d))
		gemm.DgemmTri(true, false, true, n, d, 1, a, d, a, d, c, n)
		mirrorLower(c, n)
		return op.buf.owned(tensor.Shape{n, n}, c), nil
	}
	return matMulOp{pureOp: op.pureOp, tb: true, m: op.n, k: op.d, n: op.n, ar: op.n, ac: op.d, br: op.n, bc: op.d}.Do(vs[0], vs[0])
}

// mirrorLower copies the lower triangle of the n×n matrix c onto its upper
// triangle.
func mirrorLower(c []float64, n int) {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			c[j*n+i] = c[i*n+j]
		}
	}
}

// SymDiff: Ā = (Ḡ + Ḡᵀ)·A, the sum formed on the n×n side.
func (op gramOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	e := &Chain{}
	s := e.Do(symScaled(g, 1))
	return G.Nodes{e.Do(MatMul(s, in[0], false, false))}, e.Err
}

// sqDistSelfOp computes D_ij = ‖x_i − x_j‖².
type sqDistSelfOp struct {
	pureOp
	n, d int
}

func (op sqDistSelfOp) Arity() int    { return 1 }
func (op sqDistSelfOp) Type() hm.Type { return fnType(2, 2) }
func (op sqDistSelfOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op sqDistSelfOp) String() string        { return fmt.Sprintf("SqDistSelf(%dx%d)", op.n, op.d) }
func (op sqDistSelfOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op sqDistSelfOp) Hashcode() uint32      { return hashOf(op) }
func (op sqDistSelfOp) DiffWRT(int) []bool    { return []bool{true} }

func (op sqDistSelfOp) Do(vs ...G.Value) (G.Value, error) {
	return sqDistOp{pureOp: op.pureOp, n: op.n, m: op.n, d: op.d}.Do(vs[0], vs[0])
}

// SymDiff: with S = 2(D̄ + D̄ᵀ) (four times Sym(D̄), formed on the n×n
// side), X̄ = rowsum(S) ⊙ X − S·X.
func (op sqDistSelfOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	x := in[0]
	e := &Chain{}
	s := e.Do(symScaled(g, 2))
	rs := e.Do(G.Sum(s, 1))
	a := e.Do(G.HadamardProd(e.Do(BroadcastTo(rs, tensor.Shape{op.n, op.d}, []int{1})), x))
	return G.Nodes{e.Do(G.Sub(a, e.Do(MatMul(s, x, false, false))))}, e.Err
}

func (op gramOp) withBuf(b *outBuf) G.Op       { op.buf = b; return op }
func (op sqDistSelfOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
