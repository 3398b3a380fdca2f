package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// broadcastOp replicates its input along the axes that a Sum removed. It is
// the adjoint of Sum, and Sum is its adjoint, so the pair differentiates to
// any order.
type broadcastOp struct {
	pureOp
	out  tensor.Shape
	axes []int
}

// BroadcastTo replicates x along axes so that it takes shape out; x's shape
// must equal out with those axes removed (a scalar when all are removed).
func BroadcastTo(x *G.Node, out tensor.Shape, axes []int) (*G.Node, error) {
	want := removeAxes(out, axes)
	if !sameShape(want, x.Shape()) && want.TotalSize() != x.Shape().TotalSize() {
		return nil, fmt.Errorf("graph.BroadcastTo: %v cannot broadcast to %v along %v", x.Shape(), out, axes)
	}
	return applyOp(broadcastOp{out: out.Clone(), axes: append([]int(nil), axes...)}, x)
}

func removeAxes(s tensor.Shape, axes []int) tensor.Shape {
	var r tensor.Shape
	for i, d := range s {
		drop := false
		for _, a := range axes {
			drop = drop || a == i
		}
		if !drop {
			r = append(r, d)
		}
	}
	if len(r) == 0 {
		return tensor.ScalarShape()
	}
	return r
}

func (op broadcastOp) Arity() int { return 1 }
func (op broadcastOp) Type() hm.Type {
	return fnType(len(op.out), len(removeAxes(op.out, op.axes)))
}
func (op broadcastOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.out.Clone(), nil }
func (op broadcastOp) String() string                                 { return fmt.Sprintf("Broadcast%v→%v", op.axes, op.out) }
func (op broadcastOp) WriteHash(h hash.Hash)                          { writeHash(h, op) }
func (op broadcastOp) Hashcode() uint32                               { return hashOf(op) }
func (op broadcastOp) DiffWRT(int) []bool                             { return []bool{true} }

func (op broadcastOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	out := op.buf.take(op.out.TotalSize())
	isAx := make([]bool, len(op.out))
	for _, a := range op.axes {
		isAx[a] = true
	}
	// Walk the output in row-major order with an odometer over its index,
	// keeping the matching offset into x (whose strides skip the broadcast axes).
	xs := make([]int, len(op.out))
	acc := 1
	for d := len(op.out) - 1; d >= 0; d-- {
		if !isAx[d] {
			xs[d] = acc
			acc *= op.out[d]
		}
	}
	last := len(op.out) - 1
	idx := make([]int, len(op.out))
	xi := 0
	inner := op.out[last]
	for k := 0; k < len(out); k += inner {
		if isAx[last] {
			v := x[xi]
			for j := 0; j < inner; j++ {
				out[k+j] = v
			}
		} else {
			copy(out[k:k+inner], x[xi:xi+inner])
		}
		for d := last - 1; d >= 0; d-- {
			idx[d]++
			xi += xs[d]
			if idx[d] < op.out[d] {
				break
			}
			xi -= xs[d] * idx[d]
			idx[d] = 0
		}
	}
	return op.buf.owned(op.out, out), nil
}

func (op broadcastOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	s, err := G.Sum(g, op.axes...)
	if err != nil {
		return nil, err
	}
	s, err = reshapeTo(s, in[0].Shape())
	return G.Nodes{s}, err
}

// takeOp selects the contiguous range [start, end) of one axis.
type takeOp struct {
	pureOp
	in               tensor.Shape
	axis, start, end int
	out              tensor.Shape // outShape, kept so that Do need not build it
}

// scatterOp places its input at [start, start+n) of one axis of a zero tensor
// of shape out; it is the adjoint of takeOp.
type scatterOp struct {
	pureOp
	out         tensor.Shape
	axis, start int
	n           int
}

// Take returns x restricted to indices [start, end) of axis, keeping the axis.
// Use it instead of gorgonia.Slice on paths that are differentiated twice.
func Take(x *G.Node, axis, start, end int) (*G.Node, error) {
	s := x.Shape()
	if axis < 0 || axis >= len(s) || start < 0 || end > s[axis] || start >= end {
		return nil, fmt.Errorf("graph.Take: range [%d,%d) of axis %d is outside shape %v", start, end, axis, s)
	}
	op := takeOp{in: s, axis: axis, start: start, end: end}
	op.out = op.outShape()
	return applyOp(op, x)
}

// Scatter embeds x at offset start along axis of a zero tensor of shape out.
func Scatter(x *G.Node, out tensor.Shape, axis, start int) (*G.Node, error) {
	s := x.Shape()
	if len(s) != len(out) || start+s[axis] > out[axis] {
		return nil, fmt.Errorf("graph.Scatter: %v does not fit in %v at %d along %d", s, out, start, axis)
	}
	return applyOp(scatterOp{out: out.Clone(), axis: axis, start: start, n: s[axis]}, x)
}

func (op takeOp) Arity() int                                     { return 1 }
func (op takeOp) Type() hm.Type                                  { return fnType(len(op.in), len(op.in)) }
func (op takeOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.outShape(), nil }
func (op takeOp) String() string {
	return fmt.Sprintf("Take(%v,%d,%d:%d)", op.in, op.axis, op.start, op.end)
}
func (op takeOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op takeOp) Hashcode() uint32      { return hashOf(op) }
func (op takeOp) DiffWRT(int) []bool    { return []bool{true} }
func (op takeOp) outShape() tensor.Shape {
	s := op.in.Clone()
	s[op.axis] = op.end - op.start
	return s
}

// blocks describes a tensor as outer × axis × inner for copying ranges of one axis.
func blocks(s tensor.Shape, axis int) (outer, inner int) {
	outer, inner = 1, 1
	for i, d := range s {
		if i < axis {
			outer *= d
		} else if i > axis {
			inner *= d
		}
	}
	return
}

func (op takeOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	outer, inner := blocks(op.in, op.axis)
	n := op.end - op.start
	out := op.buf.take(outer * n * inner)
	for o := 0; o < outer; o++ {
		base := (o*op.in[op.axis] + op.start) * inner
		copy(out[o*n*inner:(o+1)*n*inner], x[base:base+n*inner])
	}
	return op.buf.owned(op.out, out), nil
}

func (op takeOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	s, err := Scatter(g, op.in, op.axis, op.start)
	return G.Nodes{s}, err
}

func (op scatterOp) Arity() int    { return 1 }
func (op scatterOp) Type() hm.Type { return fnType(len(op.out), len(op.out)) }
func (op scatterOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.out.Clone(), nil
}
func (op scatterOp) String() string {
	return fmt.Sprintf("Scatter(%v,%d,%d+%d)", op.out, op.axis, op.start, op.n)
}
func (op scatterOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op scatterOp) Hashcode() uint32      { return hashOf(op) }
func (op scatterOp) DiffWRT(int) []bool    { return []bool{true} }

func (op scatterOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	outer, inner := blocks(op.out, op.axis)
	out := op.buf.take(op.out.TotalSize())
	clear(out)
	for o := 0; o < outer; o++ {
		dst := (o*op.out[op.axis] + op.start) * inner
		src := o * op.n * inner
		copy(out[dst:dst+op.n*inner], x[src:src+op.n*inner])
	}
	return op.buf.owned(op.out, out), nil
}

func (op scatterOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	t, err := Take(g, op.axis, op.start, op.start+op.n)
	return G.Nodes{t}, err
}

// reshapeOp copies its input into a new shape. Gorgonia's own Reshape returns a
// view; when its input is a graph input, a later in-place op writes through the
// view into the input's value (a parameter silently changes on every run).
type reshapeOp struct {
	pureOp
	from, to tensor.Shape
}

// Reshape returns x's data in shape to (same number of elements); a copy, so it
// is safe on parameters and data, unlike gorgonia.Reshape.
func Reshape(x *G.Node, to tensor.Shape) (*G.Node, error) {
	from := x.Shape()
	if from.TotalSize() != to.TotalSize() {
		return nil, fmt.Errorf("graph.Reshape: cannot reshape %v to %v", from, to)
	}
	if sameShape(from, to) {
		return x, nil
	}
	return applyOp(reshapeOp{from: from.Clone(), to: to.Clone()}, x)
}

func (op reshapeOp) Arity() int                                     { return 1 }
func (op reshapeOp) Type() hm.Type                                  { return fnType(op.to.Dims(), op.from.Dims()) }
func (op reshapeOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.to.Clone(), nil }
func (op reshapeOp) String() string                                 { return fmt.Sprintf("Reshape%v→%v", op.from, op.to) }
func (op reshapeOp) WriteHash(h hash.Hash)                          { writeHash(h, op) }
func (op reshapeOp) Hashcode() uint32                               { return hashOf(op) }
func (op reshapeOp) DiffWRT(int) []bool                             { return []bool{true} }
func (op reshapeOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	out := op.buf.take(len(x)) // a copy: x is the input's data
	copy(out, x)
	return op.buf.owned(op.to, out), nil
}
func (op reshapeOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	r, err := Reshape(g, op.from)
	return G.Nodes{r}, err
}

// Stack places n-vectors side by side as the columns of an n×len(cols)
// matrix (built from Reshape, Scatter and Add, so it differentiates to any order).
func Stack(cols ...*G.Node) (*G.Node, error) {
	if len(cols) == 0 {
		return nil, fmt.Errorf("graph.Stack: no columns")
	}
	n := cols[0].Shape()[0]
	out := tensor.Shape{n, len(cols)}
	var acc *G.Node
	for j, c := range cols {
		if c.Dims() != 1 || c.Shape()[0] != n {
			return nil, fmt.Errorf("graph.Stack: column %d has shape %v, want (%d)", j, c.Shape(), n)
		}
		r, err := Reshape(c, tensor.Shape{n, 1})
		if err != nil {
			return nil, err
		}
		if len(cols) > 1 {
			if r, err = Scatter(r, out, 1, j); err != nil {
				return nil, err
			}
		}
		if acc == nil {
			acc = r
		} else if acc, err = G.Add(acc, r); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// Column returns column j of an n×k matrix as an n-vector.
func Column(x *G.Node, j int) (*G.Node, error) {
	c, err := Take(x, 1, j, j+1)
	if err != nil {
		return nil, err
	}
	return Reshape(c, tensor.Shape{x.Shape()[0]})
}

func (op broadcastOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op scatterOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op takeOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op reshapeOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
