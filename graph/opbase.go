package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"slices"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
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
	// owner is the program whose liveness plan data belongs to (share.go),
	// nil while data is the node's own.
	owner *flat
	// val is the value last returned over data (see owned), and valAt the
	// address of its first element: comparing it costs nothing, where
	// asking val for its data boxes a slice header on the heap.
	val   G.Value
	valAt *float64
	// ins, rows, scratch and terms are working memory of the op's Do,
	// kept so that a run allocates nothing (see inputs, rowsOf, scratchOf,
	// termsOf). Unlike data they are not handed out, so they need no
	// epoch: they serve one call at a time, as the ops of one program run
	// one at a time.
	ins, rows [][]float64
	scratch   []float64
	terms     []gemm.Term
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

// sharer is an op whose output buffer the package manages.
type sharer interface{ outBuffer() *outBuf }

// bufOf returns op's managed output buffer, nil if it has none.
func bufOf(op G.Op) *outBuf {
	if h, ok := op.(sharer); ok {
		return h.outBuffer()
	}
	return nil
}

// sharedBuffers returns an error naming two nodes of g whose ops hold the
// same output buffer, which would let one overwrite the other's output.
func sharedBuffers(g *G.ExprGraph) error {
	owner := map[*outBuf]*G.Node{}
	for _, n := range g.AllNodes() {
		b := bufOf(n.Op())
		if b == nil {
			continue
		}
		if m, dup := owner[b]; dup {
			return fmt.Errorf("graph: nodes %v and %v share an output buffer (apply ops with applyOp)", m.Name(), n.Name())
		}
		owner[b] = n
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
	// Gorgonia keeps the argument slice as the node's children. A caller's
	// slice with spare capacity, appended to later, would rewrite this
	// node's inputs: two addend ops built from one fused adjoint once
	// shared a slice that way (TestFusedAdjointTakesTwoAddends).
	return G.ApplyOp(op, slices.Clone(args)...)
}

// owned wraps the op's output data as a value, reusing last run's value
// when data is again this buffer's memory with the same shape (for a
// scalar, the same *F64 with the new number): the tensor header, its
// access pattern and shape were a third of a small step's allocations.
// Data from elsewhere (a fresh allocation) gets a new value.
func (b *outBuf) owned(shape tensor.Shape, data []float64) G.Value {
	if b == nil || len(data) == 0 || len(b.data) == 0 || &data[0] != &b.data[0] {
		return owned(shape, data)
	}
	if b.val != nil && b.valAt == &data[0] {
		switch v := b.val.(type) {
		case *G.F64:
			if shape.IsScalar() {
				*v = G.F64(data[0])
				return v
			}
		case *tensor.Dense:
			// The shape is checked because a consumer may have reshaped
			// the value in place.
			if v.DataSize() == len(data) && sameShape(v.Shape(), shape) {
				return v
			}
		}
	}
	v := owned(shape, data)
	b.val, b.valAt = v, &data[0]
	return v
}

// inputs is float64sAll with the slice of slices kept in the buffer.
func (b *outBuf) inputs(vs []G.Value) ([][]float64, error) {
	if b == nil {
		return float64sAll(vs)
	}
	if cap(b.ins) < len(vs) {
		b.ins = make([][]float64, len(vs))
	}
	in := b.ins[:len(vs)]
	for i, v := range vs {
		f, err := Float64s(v)
		if err != nil {
			return nil, err
		}
		in[i] = f
	}
	return in, nil
}

// scratchOf returns n float64s of working memory of arbitrary content,
// kept in the buffer from call to call (fresh without a buffer).
func (b *outBuf) scratchOf(n int) []float64 {
	if b == nil {
		return make([]float64, n)
	}
	if cap(b.scratch) < n {
		b.scratch = make([]float64, n)
	}
	return b.scratch[:n]
}

// rowsOf returns k slice headers of working memory (fresh without a buffer).
func (b *outBuf) rowsOf(k int) [][]float64 {
	if b == nil {
		return make([][]float64, k)
	}
	if cap(b.rows) < k {
		b.rows = make([][]float64, k)
	}
	return b.rows[:k]
}

// termsOf returns an empty slice of products with room for n, kept in the
// buffer (fresh without one).
func (b *outBuf) termsOf(n int) []gemm.Term {
	if b == nil {
		return make([]gemm.Term, 0, n)
	}
	if cap(b.terms) < n {
		b.terms = make([]gemm.Term, 0, n)
	}
	return b.terms[:0]
}
