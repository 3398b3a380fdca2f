package graph

import (
	"fmt"
	"hash"
	"sync/atomic"
	"time"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// multiplyAdds counts the multiply-adds of the matrix products run by
// MatMul and SqDist, whichever BLAS does them.
var multiplyAdds atomic.Int64

// MultiplyAdds returns the multiply-adds done so far in this process by the
// matrix products of MatMul, TriMul (n(n+1)/2 per column) and SqDist nodes, the bulk of a GP step. The
// difference over a training iteration is its arithmetic cost, which is
// what bounds the ratio of two models' times (see `gpc bench`).
func MultiplyAdds() int64 { return multiplyAdds.Load() }

// matMulOp computes op(A)·op(B) for matrices with one Gemm call. Gorgonia's Mul
// treats n×1 matrices as vectors and needs explicit Transpose copies; kernels
// and predictive means are dominated by these products.
type matMulOp struct {
	pureOp
	ta, tb  bool
	m, k, n int // op(A) is m×k, op(B) is k×n
	ar, ac  int
	br, bc  int
}

// MatMul returns op(a)·op(b), where op transposes when the flag is set.
func MatMul(a, b *G.Node, transA, transB bool) (*G.Node, error) {
	as, bs := a.Shape(), b.Shape()
	if len(as) != 2 || len(bs) != 2 {
		return nil, fmt.Errorf("graph.MatMul: want matrices, got shapes %v and %v", as, bs)
	}
	op := matMulOp{ta: transA, tb: transB, ar: as[0], ac: as[1], br: bs[0], bc: bs[1]}
	op.m, op.k = as[0], as[1]
	if transA {
		op.m, op.k = as[1], as[0]
	}
	kb, n := bs[0], bs[1]
	if transB {
		kb, n = bs[1], bs[0]
	}
	if kb != op.k {
		return nil, fmt.Errorf("graph.MatMul: inner dimensions differ: op(A) is %d×%d, op(B) is %d×%d", op.m, op.k, kb, n)
	}
	op.n = n
	if a == b && !transA && transB {
		return applyOp(gramOp{n: op.m, d: op.k}, a)
	}
	return applyOp(op, a, b)
}

func (op matMulOp) Arity() int    { return 2 }
func (op matMulOp) Type() hm.Type { return fnType(2, 2, 2) }
func (op matMulOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.m, op.n}, nil
}
func (op matMulOp) String() string {
	return fmt.Sprintf("MatMul(%v,%v,%dx%d,%dx%d)", op.ta, op.tb, op.ar, op.ac, op.br, op.bc)
}
func (op matMulOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op matMulOp) Hashcode() uint32      { return hashOf(op) }
func (op matMulOp) DiffWRT(int) []bool    { return []bool{true, true} }

func (op matMulOp) Do(vs ...G.Value) (G.Value, error) {
	a, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	b, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	c := op.buf.take(op.m * op.n)
	multiplyAdds.Add(int64(op.m) * int64(op.n) * int64(op.k))
	ta, tb := blas.NoTrans, blas.NoTrans
	if op.ta {
		ta = blas.Trans
	}
	if op.tb {
		tb = blas.Trans
	}
	blas64.Gemm(ta, tb, 1,
		blas64.General{Rows: op.ar, Cols: op.ac, Stride: op.ac, Data: a},
		blas64.General{Rows: op.br, Cols: op.bc, Stride: op.bc, Data: b},
		0, blas64.General{Rows: op.m, Cols: op.n, Stride: op.n, Data: c})
	return op.buf.owned(tensor.Shape{op.m, op.n}, c), nil
}

func (op matMulOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	a, b := in[0], in[1]
	var ga, gb *G.Node
	var err error
	if op.ta { // Ā = op(B) Ḡᵀ
		ga, err = MatMul(b, g, op.tb, true)
	} else { // Ā = Ḡ op(B)ᵀ
		ga, err = MatMul(g, b, false, !op.tb)
	}
	if err != nil {
		return nil, err
	}
	if op.tb { // B̄ = Ḡᵀ op(A)
		gb, err = MatMul(g, a, true, op.ta)
	} else { // B̄ = op(A)ᵀ Ḡ
		gb, err = MatMul(a, g, !op.ta, false)
	}
	return G.Nodes{ga, gb}, err
}

func (op matMulOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// TimeProducts switches on (or off) the accounting of the time spent in
// matrix products and triangular solves and products (the level-3 calls of
// the matrix kernel), which ProductTime reports; `gpc bench` uses it to
// give each step's share of products. Off, a product pays one atomic load.
func TimeProducts(on bool) { gemm.SetTiming(on) }

// ProductTime is the time spent in products while TimeProducts was on,
// summed over goroutines.
func ProductTime() time.Duration { return time.Duration(gemm.Nanos()) }
