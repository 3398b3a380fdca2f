package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// addNOp sums any number of same-shaped tensors.
type addNOp struct {
	pureOp
	k     int
	shape tensor.Shape
}

// AddN returns the elementwise sum of one or more tensors of one shape.
func AddN(ns ...*G.Node) (*G.Node, error) {
	if len(ns) == 0 {
		return nil, fmt.Errorf("graph.AddN: nothing to add")
	}
	if len(ns) == 1 {
		return ns[0], nil
	}
	s := ns[0].Shape()
	for _, n := range ns[1:] {
		if !sameShape(n.Shape(), s) {
			return nil, fmt.Errorf("graph.AddN: shapes differ: %v and %v", s, n.Shape())
		}
	}
	return applyOp(addNOp{k: len(ns), shape: s.Clone()}, ns...)
}

func (op addNOp) Arity() int { return op.k }
func (op addNOp) Type() hm.Type {
	ins := make([]int, op.k)
	for i := range ins {
		ins[i] = op.shape.Dims()
	}
	return fnType(op.shape.Dims(), ins...)
}
func (op addNOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op addNOp) String() string                                 { return fmt.Sprintf("AddN%d%v", op.k, op.shape) }
func (op addNOp) WriteHash(h hash.Hash)                          { writeHash(h, op) }
func (op addNOp) Hashcode() uint32                               { return hashOf(op) }
func (op addNOp) DiffWRT(int) []bool {
	return allDiff(op.k)
}

func (op addNOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	out := op.buf.take(op.shape.TotalSize())
	cost := 0.5 * float64(op.k) // memory-bound
	if splits(len(out), 1, cost) {
		parallelFor(len(out), 1, cost, func(lo, hi int) { addRange(out, in, lo, hi) })
	} else {
		addRange(out, in, 0, len(out))
	}
	return op.buf.owned(op.shape, out), nil
}

// addRange sets out[lo:hi] to the sum of the inputs there, added in
// argument order.
func addRange(out []float64, in [][]float64, lo, hi int) {
	dst := out[lo:hi]
	copy(dst, in[0][lo:hi])
	for _, x := range in[1:] {
		gemm.Add(dst, x[lo:hi])
	}
}

// SymDiff: every summand receives the output's gradient.
func (op addNOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	grads := make(G.Nodes, op.k)
	for i := range grads {
		grads[i] = g
	}
	return grads, nil
}

func (op addNOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// addOuterOp is Σ_i X_i + op(a)·op(b) where the product is an outer one
// (inner dimension 1): the sum in one pass over memory, where the product
// written out and then added read and wrote the m×n matrix three times
// (the gradient of a minibatch's kernel matrix, 300×1024, has one from
// the predictive mean beside the variance's).
type addOuterOp struct {
	pureOp
	k     int      // plain addends, first in the arguments
	outer matMulOp // the outer product of the last two arguments
}

// outerProduct reports whether n is a MatMul with inner dimension 1.
func outerProduct(n *G.Node) (matMulOp, bool) {
	op, ok := n.Op().(matMulOp)
	return op, ok && op.k == 1
}

// addOuter returns the sum of xs (same-shaped matrices) and the outer
// product node p (see outerProduct), as one op.
func addOuter(xs G.Nodes, p *G.Node) (*G.Node, error) {
	op, ok := outerProduct(p)
	if !ok || len(xs) == 0 {
		return nil, fmt.Errorf("graph: addOuter of %v", p.Op())
	}
	for _, x := range xs {
		if !sameShape(x.Shape(), tensor.Shape{op.m, op.n}) {
			return nil, fmt.Errorf("graph: adding %v to the %dx%d outer product %v", x.Shape(), op.m, op.n, op)
		}
	}
	return applyOp(addOuterOp{k: len(xs), outer: op}, append(append(G.Nodes(nil), xs...), children(p)...)...)
}

func (op addOuterOp) Arity() int { return op.k + 2 }
func (op addOuterOp) Type() hm.Type {
	ins := make([]int, op.k+2)
	for i := range ins {
		ins[i] = 2
	}
	return fnType(2, ins...)
}
func (op addOuterOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.outer.m, op.outer.n}, nil
}
func (op addOuterOp) String() string        { return fmt.Sprintf("AddOuter%d(%v)", op.k, op.outer) }
func (op addOuterOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op addOuterOp) Hashcode() uint32      { return hashOf(op) }
func (op addOuterOp) DiffWRT(int) []bool {
	d := make([]bool, op.k+2)
	for i := range d {
		d[i] = true
	}
	return d
}

func (op addOuterOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	m, n := op.outer.m, op.outer.n
	out := op.buf.take(m * n)
	multiplyAdds.Add(int64(m) * int64(n))
	cost := 0.5 * float64(op.k+1) // memory-bound, as AddN
	if splits(m*n, n, cost) {
		parallelFor(m*n, n, cost, func(lo, hi int) { op.rows(in, out, lo/n, hi/n) })
	} else {
		op.rows(in, out, 0, m)
	}
	return op.buf.owned(tensor.Shape{m, n}, out), nil
}

// rows computes rows [lo, hi) of the sum into out.
func (op addOuterOp) rows(in [][]float64, out []float64, lo, hi int) {
	n := op.outer.n
	u, v := in[op.k], in[op.k+1] // an m-vector and an n-vector, whichever the layout
	for i := lo; i < hi; i++ {
		addRange(out, in[:op.k], i*n, (i+1)*n) // the addends, row by row while it is in cache
		row := out[i*n : (i+1)*n]
		ui := u[i]
		for j, vj := range v[:n] {
			row[j] += float64(ui * vj) // the product rounded, as written out and added
		}
	}
}

// SymDiff: each addend receives the gradient, the factors the product's.
func (op addOuterOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	grads := make(G.Nodes, op.k, op.k+2)
	for i := range grads {
		grads[i] = g
	}
	gp, err := op.outer.SymDiff(in[op.k:], nil, g)
	return append(grads, gp...), err
}

func (op addOuterOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
