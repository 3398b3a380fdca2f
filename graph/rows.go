package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RowFunc maps row i of each of its arguments to row i of its output, for
// values that are never differentiated, such as a likelihood's predictive
// probabilities.
//
// Why: a per-row computation of many small steps (a quadrature with
// Newton-located nodes per row and class) built from graph ops is dozens
// of passes over narrow n×k intermediates, each paying an op's fixed cost
// and its memory traffic; as one loop per row its intermediates stay in a
// few registers' worth of scratch.
type RowFunc struct {
	// Name identifies the function in op names and hashes; two RowFuncs
	// with the same name must be the same function (Gorgonia merges equal
	// nodes by their hashes).
	Name string
	// Out is the width of an output row.
	Out int
	// Scratch is the number of float64s of working space F is given.
	Scratch int
	// F writes the output row out from the argument rows in (in[a] is row i
	// of argument a); scratch is its own for the call, with stale contents.
	F func(in [][]float64, out, scratch []float64)
	// Cost is the time of F on one row in nanoseconds, for deciding whether
	// a call is worth splitting across cores; 0 never splits.
	Cost float64
}

// Rows returns the n×f.Out matrix whose row i is f.F of row i of each
// argument; every argument is a float64 n×d_a matrix with the same n. The
// node has no gradient: differentiating through it is an error that names
// f, never a silent zero.
func Rows(f *RowFunc, args ...*G.Node) (*G.Node, error) {
	if f == nil || f.F == nil || f.Out < 1 || f.Scratch < 0 || len(args) == 0 {
		return nil, fmt.Errorf("graph.Rows: need a RowFunc with F, Out ≥ 1 and Scratch ≥ 0, and at least one argument")
	}
	op := rowsOp{f: f, widths: make([]int, len(args))}
	for a, x := range args {
		s := x.Shape()
		if x.Dtype() != tensor.Float64 || len(s) != 2 {
			return nil, fmt.Errorf("graph.Rows(%s): argument %d (%v) is %v of shape %v, want a float64 matrix", f.Name, a, x.Name(), x.Dtype(), s)
		}
		if a == 0 {
			op.n = s[0]
		} else if s[0] != op.n {
			return nil, fmt.Errorf("graph.Rows(%s): argument %d (%v) has %d rows, argument 0 has %d", f.Name, a, x.Name(), s[0], op.n)
		}
		op.widths[a] = s[1]
	}
	return applyOp(op, args...)
}

type rowsOp struct {
	pureOp
	f      *RowFunc
	n      int
	widths []int
}

func (op rowsOp) Arity() int { return len(op.widths) }
func (op rowsOp) Type() hm.Type {
	ins := make([]int, len(op.widths))
	for i := range ins {
		ins[i] = 2
	}
	return fnType(2, ins...)
}
func (op rowsOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.f.Out}, nil
}
func (op rowsOp) String() string {
	return fmt.Sprintf("Rows(%s,%d,%v→%d)", op.f.Name, op.n, op.widths, op.f.Out)
}
func (op rowsOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op rowsOp) Hashcode() uint32      { return hashOf(op) }
func (op rowsOp) DiffWRT(k int) []bool {
	d := make([]bool, k)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff refuses: a RowFunc has no derivative to offer, and a zero would
// be a wrong gradient that nothing reports.
func (op rowsOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("graph.Rows(%s) has no gradient: it computes values that are not differentiated", op.f.Name)
}

func (op rowsOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	for a, f := range in {
		if len(f) != op.n*op.widths[a] {
			return nil, fmt.Errorf("graph: %v got %d values for argument %d", op, len(f), a)
		}
	}
	out := op.buf.take(op.n * op.f.Out)
	if op.f.Cost > 0 && splits(op.n, 1, op.f.Cost) {
		parallelFor(op.n, 1, op.f.Cost, func(lo, hi int) {
			op.rows(in, out, lo, hi, make([][]float64, len(in)), make([]float64, op.f.Scratch))
		})
	} else {
		op.rows(in, out, 0, op.n, op.buf.rowsOf(len(in)), op.buf.scratchOf(op.f.Scratch))
	}
	return op.buf.owned(tensor.Shape{op.n, op.f.Out}, out), nil
}

// rows runs F on rows [lo, hi), with one set of row views and scratch.
func (op rowsOp) rows(in [][]float64, out []float64, lo, hi int, row [][]float64, scratch []float64) {
	w := op.f.Out
	for i := lo; i < hi; i++ {
		for a, x := range in {
			d := op.widths[a]
			row[a] = x[i*d : (i+1)*d : (i+1)*d]
		}
		op.f.F(row, out[i*w:(i+1)*w:(i+1)*w], scratch)
	}
}

func (op rowsOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
