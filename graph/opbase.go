package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// pureOp holds the Op methods that are the same for every op in this package:
// outputs never alias inputs, inputs are never overwritten, and the hash is
// derived from String, which must therefore name every parameter (Gorgonia
// merges nodes whose ops hash equal). buf, set by applyOp for ops that
// implement buffered, is the node's output buffer, kept between runs.
type pureOp struct{ buf *outBuf }

func (pureOp) ReturnsPtr() bool     { return false }
func (pureOp) CallsExtern() bool    { return false }
func (pureOp) OverwritesInput() int { return -1 }

func hashOf(s fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, s.String())
	return h.Sum32()
}

func writeHash(h hash.Hash, s fmt.Stringer) { fmt.Fprint(h, s.String()) }

// tensorType is the Gorgonia type of a float64 value with d dimensions (a scalar for d = 0).
func tensorType(d int) hm.Type {
	if d == 0 {
		return tensor.Float64
	}
	return G.TensorType{Dims: d, Of: tensor.Float64}
}

// fnType builds the type of an op from its input and output dimension counts.
func fnType(out int, ins ...int) hm.Type {
	ts := make([]hm.Type, 0, len(ins)+1)
	for _, d := range ins {
		ts = append(ts, tensorType(d))
	}
	ts = append(ts, tensorType(out))
	return hm.NewFnType(ts...)
}

// shapeOf extracts the shape from a DimSizer passed to InferShape.
func shapeOf(d G.DimSizer) (tensor.Shape, error) {
	switch s := d.(type) {
	case tensor.Shape:
		return s.Clone(), nil
	}
	return nil, fmt.Errorf("graph: cannot infer shape from %T", d)
}

// allDiff is DiffWRT for an op differentiable in all n inputs.
func allDiff(n int) []bool {
	w := make([]bool, n)
	for i := range w {
		w[i] = true
	}
	return w
}

// outBuf is one node's output buffer, reused from run to run of a compiled
// graph. A fresh buffer per run (the Go runtime zeroes every allocation,
// about 130 MB per MNIST step) cost a tenth of the step in clearing memory
// alone, and each op's output came from memory no cache had seen.
//
// The output of run r is dead once run r+1 reaches the node again: Program
// copies its outputs out (gorgonia.Read) and resets the machine's registers
// after every run. A buffer is handed out at most once per run, so an op
// value shared by two nodes (applyOp prevents it) would get a fresh
// allocation rather than a clobbered buffer.
type outBuf struct {
	data  []float64
	epoch uint64
	// val is the value last returned over data (see owned).
	val *tensor.Dense
}

// runEpoch numbers Program runs.
var runEpoch atomic.Uint64

// take returns n float64s of arbitrary content for the op's output, which
// the op must overwrite completely.
func (b *outBuf) take(n int) []float64 {
	if b == nil {
		return make([]float64, n)
	}
	e := runEpoch.Load()
	if b.epoch == e {
		return make([]float64, n)
	}
	b.epoch = e
	if cap(b.data) < n {
		b.data = make([]float64, n)
	}
	return b.data[:n]
}

func (p pureOp) outBuffer() *outBuf { return p.buf }

// sharedBuffers returns an error naming two nodes of g whose ops hold the
// same output buffer, which would let one overwrite the other's output.
func sharedBuffers(g *G.ExprGraph) error {
	owner := map[*outBuf]*G.Node{}
	for _, n := range g.AllNodes() {
		h, ok := n.Op().(interface{ outBuffer() *outBuf })
		if !ok || h.outBuffer() == nil {
			continue
		}
		if m, dup := owner[h.outBuffer()]; dup {
			return fmt.Errorf("graph: nodes %v and %v share an output buffer (apply ops with applyOp)", m.Name(), n.Name())
		}
		owner[h.outBuffer()] = n
	}
	return nil
}

// buffered ops return a copy of themselves with the given output buffer.
type buffered interface{ withBuf(*outBuf) G.Op }

// applyOp is gorgonia.ApplyOp with a new output buffer for a buffered op:
// every node gets its own. All ops of this package are applied through it.
func applyOp(op G.Op, args ...*G.Node) (*G.Node, error) {
	if b, ok := op.(buffered); ok {
		op = b.withBuf(&outBuf{})
	}
	return G.ApplyOp(op, args...)
}

// owned wraps the op's output data as a value, reusing last run's value
// when data is again this buffer's memory with the same shape: the tensor
// header, its access pattern and shape were a third of a small step's
// allocations. Data from elsewhere (a fresh allocation) gets a new value.
func (b *outBuf) owned(shape tensor.Shape, data []float64) G.Value {
	if b == nil || len(data) == 0 || shape.IsScalar() || len(b.data) == 0 || &data[0] != &b.data[0] {
		return owned(shape, data)
	}
	if v := b.val; v != nil && v.Size() == len(data) && v.Shape().Eq(shape) && v.DataSize() == len(data) {
		if d, ok := v.Data().([]float64); ok && len(d) > 0 && &d[0] == &data[0] {
			return v
		}
	}
	v := owned(shape, data).(*tensor.Dense)
	b.val = v
	return v
}
