package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// ColumnSumSquares returns the n-vector s_j = Σ_i a_ij² of an m×n matrix:
// the squared column norms that the variational marginal variances are
// made of (‖L⁻¹K_Zx‖² and ‖Lᵀ·‖² per column, one column per point).
//
// Why one op: Square then Sum over the rows was two passes over m×n
// forward and, back, a broadcast of the n-vector gradient to m×n and the
// square's adjoint, with the m×n intermediates of each; per class at the
// UCI shape (m = 300 inducing points, n = 1024 points) those passes were a
// visible part of a step. Here the forward is one pass that adds the rows'
// squares in row order, as the sum did (bit for bit, TestColumnSumSquares),
// and the adjoint ā = a·diag(2ḡ) is one ScaleColumns pass, built from
// differentiable ops so that it can be differentiated again.
func ColumnSumSquares(a *G.Node) (*G.Node, error) {
	s := a.Shape()
	if len(s) != 2 || a.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("graph.ColumnSumSquares: want a float64 matrix, got %v of shape %v", a.Dtype(), s)
	}
	return applyOp(colSumSqOp{m: s[0], n: s[1]}, a)
}

type colSumSqOp struct {
	pureOp
	m, n int
}

func (op colSumSqOp) Arity() int    { return 1 }
func (op colSumSqOp) Type() hm.Type { return fnType(1, 2) }
func (op colSumSqOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n}, nil
}
func (op colSumSqOp) String() string        { return fmt.Sprintf("ColSumSq(%dx%d)", op.m, op.n) }
func (op colSumSqOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op colSumSqOp) Hashcode() uint32      { return hashOf(op) }
func (op colSumSqOp) DiffWRT(int) []bool    { return []bool{true} }

func (op colSumSqOp) Do(vs ...G.Value) (G.Value, error) {
	a, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	m, n := op.m, op.n
	if len(a) != m*n {
		return nil, fmt.Errorf("graph: %v got %d values", op, len(a))
	}
	out := op.buf.take(n)
	gemm.Mul(out, a[:n], a[:n])
	for i := 1; i < m; i++ {
		row := a[i*n : (i+1)*n]
		gemm.MulAdd(out, row, row)
	}
	return op.buf.owned(tensor.Shape{n}, out), nil
}

func (op colSumSqOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	two, err := G.HadamardProd(g, G.NewConstant(2.0))
	if err != nil {
		return nil, err
	}
	d, err := ScaleColumns(in[0], two)
	return G.Nodes{d}, err
}

func (op colSumSqOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
