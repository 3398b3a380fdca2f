package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RowFunc maps row i of each of its arguments to row i of its output: a
// likelihood's predictive probabilities, or, given its vector-Jacobian
// product, a differentiable per-row term such as an expected
// log-likelihood by quadrature.
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
	// VJP, when set, makes the node differentiable once: it adds to grad[a]
	// (zero on entry, the width of argument a) the gradient of
	// Σ_j gOut[j]·F(in)[j] with respect to row i of argument a. It is given
	// Scratch float64s of its own. Without Graph the gradient node has no
	// gradient itself: a second derivative through it is an error naming
	// the function.
	VJP func(in [][]float64, gOut []float64, grad [][]float64, scratch []float64)
	// VJPCost is VJP's time on one row in nanoseconds, as Cost.
	VJPCost float64
	// Saved, with VJP, is the number of float64s per row that F leaves for
	// VJP (the forward pass's intermediates, which VJP would otherwise
	// compute again): F's out row then has Out+Saved entries, the last
	// Saved of them kept, and VJP finds them, read-only, as one more
	// argument row after the others.
	Saved int
	// Graph, when set with VJP, builds the same function from graph ops
	// (its n×Out result from the argument nodes): second derivatives are
	// taken through it, the first through VJP. It is only built when a
	// second derivative is asked for.
	Graph func(args []*G.Node) (*G.Node, error)
}

// Rows returns the n×f.Out matrix whose row i is f.F of row i of each
// argument; every argument is a float64 n×d_a matrix with the same n.
// Without f.VJP the node has no gradient: differentiating through it is an
// error that names f, never a silent zero.
func Rows(f *RowFunc, args ...*G.Node) (*G.Node, error) {
	if f == nil || f.F == nil || f.Out < 1 || f.Scratch < 0 || f.Saved < 0 || len(args) == 0 {
		return nil, fmt.Errorf("graph.Rows: need a RowFunc with F, Out ≥ 1, Scratch ≥ 0 and Saved ≥ 0, and at least one argument")
	}
	if f.Saved > 0 && f.VJP == nil {
		// F would be handed rows Out wide while written for Out+Saved.
		return nil, fmt.Errorf("graph.Rows(%s): Saved without VJP (the kept values are for the VJP)", f.Name)
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
	if f.Saved == 0 || f.VJP == nil {
		return applyOp(op, args...)
	}
	op.saved = f.Saved
	raw, err := applyOp(op, args...)
	if err != nil {
		return nil, err
	}
	return Take(raw, 1, 0, f.Out)
}

type rowsOp struct {
	pureOp
	f      *RowFunc
	n      int
	widths []int
	saved  int // per-row values kept for the VJP after the outputs
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
	return tensor.Shape{op.n, op.f.Out + op.saved}, nil
}
func (op rowsOp) String() string {
	return fmt.Sprintf("Rows(%s,%d,%v→%d+%d)", op.f.Name, op.n, op.widths, op.f.Out, op.saved)
}
func (op rowsOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op rowsOp) Hashcode() uint32      { return hashOf(op) }
func (op rowsOp) DiffWRT(k int) []bool  { return allDiff(k) }

// SymDiff is f.VJP's node, one n×Σd_a matrix split into the arguments'
// gradients; without VJP it refuses, since a zero would be a wrong gradient
// that nothing reports.
func (op rowsOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	if op.f.VJP == nil {
		return nil, fmt.Errorf("graph.Rows(%s) has no gradient: it computes values that are not differentiated", op.f.Name)
	}
	total := 0
	for _, w := range op.widths {
		total += w
	}
	vjp := rowsVJPOp{f: op.f, n: op.n, widths: op.widths, total: total, saved: op.saved}
	args := append(G.Nodes{}, in...)
	if op.saved > 0 {
		args = append(args, out) // the kept intermediates, and the order
	}
	all, err := applyOp(vjp, append(args, g)...)
	if err != nil {
		return nil, err
	}
	grads := make(G.Nodes, len(in))
	off := 0
	for a, w := range op.widths {
		if grads[a], err = Take(all, 1, off, off+w); err != nil {
			return nil, err
		}
		off += w
	}
	return grads, nil
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
	w := op.f.Out + op.saved
	out := op.buf.take(op.n * w)
	if op.f.Cost > 0 && splits(op.n, 1, op.f.Cost) {
		parallelFor(op.n, 1, op.f.Cost, func(lo, hi int) {
			op.rows(in, out, lo, hi, make([][]float64, len(in)), make([]float64, op.f.Scratch))
		})
	} else {
		op.rows(in, out, 0, op.n, op.buf.rowsOf(len(in)), op.buf.scratchOf(op.f.Scratch))
	}
	return op.buf.owned(tensor.Shape{op.n, w}, out), nil
}

// rows runs F on rows [lo, hi), with one set of row views and scratch.
func (op rowsOp) rows(in [][]float64, out []float64, lo, hi int, row [][]float64, scratch []float64) {
	w := op.f.Out + op.saved
	for i := lo; i < hi; i++ {
		for a, x := range in {
			d := op.widths[a]
			row[a] = x[i*d : (i+1)*d : (i+1)*d]
		}
		op.f.F(row, out[i*w:(i+1)*w:(i+1)*w], scratch)
	}
}

func (op rowsOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// rowsVJPOp computes a RowFunc's vector-Jacobian product for every
// argument, side by side in one n×total matrix.
type rowsVJPOp struct {
	pureOp
	f      *RowFunc
	n      int
	widths []int
	total  int
	saved  int // > 0: the forward node (outputs and kept values) is an input
}

// args is the number of inputs before the output's gradient.
func (op rowsVJPOp) args() int {
	if op.saved > 0 {
		return len(op.widths) + 1
	}
	return len(op.widths)
}

func (op rowsVJPOp) Arity() int { return op.args() + 1 }
func (op rowsVJPOp) Type() hm.Type {
	ins := make([]int, op.args()+1)
	for i := range ins {
		ins[i] = 2
	}
	return fnType(2, ins...)
}
func (op rowsVJPOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.total}, nil
}
func (op rowsVJPOp) String() string {
	return fmt.Sprintf("RowsVJP(%s,%d,%v,%d)", op.f.Name, op.n, op.widths, op.saved)
}
func (op rowsVJPOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op rowsVJPOp) Hashcode() uint32      { return hashOf(op) }

// DiffWRT is every input, so that a second derivative reaches SymDiff.
func (op rowsVJPOp) DiffWRT(k int) []bool { return allDiff(k) }

// SymDiff differentiates the gradient through f.Graph: the graph form's
// first derivative, pulled back by the partials that fused ops' adjoints
// use, gives the adjoints of the arguments and of the output's gradient.
func (op rowsVJPOp) SymDiff(in G.Nodes, _, g *G.Node) (G.Nodes, error) {
	if op.f.Graph == nil {
		return nil, fmt.Errorf("graph.Rows(%s): its gradient has no gradient (second derivatives need the RowFunc's Graph form)", op.f.Name)
	}
	k := len(op.widths)
	args, gOut := in[:k], in[len(in)-1]
	for a := range args {
		for b := range a {
			if args[a] == args[b] {
				// partials keys adjoints by node: one node in two
				// argument positions would be counted twice.
				return nil, fmt.Errorf("graph.Rows(%s): second derivatives need distinct argument nodes (%v is arguments %d and %d)", op.f.Name, args[a].Name(), b, a)
			}
		}
	}
	if op.saved > 0 { // the gradient of the outputs and (zero) kept values
		var err error
		if gOut, err = Take(gOut, 1, 0, op.f.Out); err != nil {
			return nil, err
		}
	}
	f, err := op.f.Graph(args)
	if err != nil {
		return nil, fmt.Errorf("graph.Rows(%s): building its graph form: %w", op.f.Name, err)
	}
	if s := f.Shape(); len(s) != 2 || s[0] != op.n || s[1] != op.f.Out {
		return nil, fmt.Errorf("graph.Rows(%s): its graph form has shape %v, want (%d, %d)", op.f.Name, s, op.n, op.f.Out)
	}
	first, err := partials(G.Nodes{f}, G.Nodes{gOut}, args)
	if err != nil {
		return nil, err
	}
	var outs, seeds G.Nodes
	off := 0
	for a, w := range op.widths {
		if first[a] != nil {
			seed, err := Take(g, 1, off, off+w)
			if err != nil {
				return nil, err
			}
			outs, seeds = append(outs, first[a]), append(seeds, seed)
		}
		off += w
	}
	if len(outs) == 0 {
		return make(G.Nodes, len(in)), nil
	}
	// The kept values are functions of the arguments, which the graph form
	// differentiates directly: they get no adjoint of their own.
	wrt := append(append(G.Nodes{}, args...), in[len(in)-1])
	adj, err := partials(outs, seeds, wrt)
	if err != nil {
		return nil, err
	}
	res := make(G.Nodes, len(in))
	copy(res, adj[:k])
	res[len(in)-1] = adj[k]
	return res, nil
}

func (op rowsVJPOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	for a, w := range op.widths {
		if len(in[a]) != op.n*w {
			return nil, fmt.Errorf("graph: %v got %d values for argument %d", op, len(in[a]), a)
		}
	}
	fw := op.f.Out + op.saved // the width of the forward node and its gradient
	if op.saved > 0 && len(in[len(op.widths)]) != op.n*fw {
		return nil, fmt.Errorf("graph: %v got %d kept values", op, len(in[len(op.widths)]))
	}
	if g := in[op.args()]; len(g) != op.n*fw {
		return nil, fmt.Errorf("graph: %v got %d values for the output's gradient", op, len(g))
	}
	out := op.buf.take(op.n * op.total)
	clear(out)
	k := op.args()
	if op.f.VJPCost > 0 && splits(op.n, 1, op.f.VJPCost) {
		parallelFor(op.n, 1, op.f.VJPCost, func(lo, hi int) {
			op.rows(in, out, lo, hi, make([][]float64, k+len(op.widths)), make([]float64, op.f.Scratch))
		})
	} else {
		op.rows(in, out, 0, op.n, op.buf.rowsOf(k+len(op.widths)), op.buf.scratchOf(op.f.Scratch))
	}
	return op.buf.owned(tensor.Shape{op.n, op.total}, out), nil
}

// rows runs VJP on rows [lo, hi): views[:args] are the argument rows (and
// the kept values), the rest the gradient rows.
func (op rowsVJPOp) rows(in [][]float64, out []float64, lo, hi int, views [][]float64, scratch []float64) {
	k := op.args()
	args, grads := views[:k], views[k:]
	gOut := in[k]
	fw := op.f.Out + op.saved
	for i := lo; i < hi; i++ {
		off := i * op.total
		for a, d := range op.widths {
			args[a] = in[a][i*d : (i+1)*d : (i+1)*d]
			grads[a] = out[off : off+d : off+d]
			off += d
		}
		if op.saved > 0 {
			args[k-1] = in[k-1][i*fw+op.f.Out : (i+1)*fw : (i+1)*fw]
		}
		op.f.VJP(args, gOut[i*fw:i*fw+op.f.Out:i*fw+op.f.Out], grads, scratch)
	}
}

func (op rowsVJPOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
