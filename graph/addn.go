package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
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
		for i, v := range x[lo:hi] {
			dst[i] += v
		}
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
