package graph

import (
	"fmt"
	"hash"
	"runtime"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// ElemFunc is a scalar function of k arguments applied elementwise to k
// same-shaped n×d matrices, fused into one op (Map) or one op followed by a
// sum over each row (RowReduce).
//
// Why: Gorgonia runs each elementwise node as allocate, copy, operate; a
// dozen-node expression over a B×d batch (NIMGP's Gaussian input terms are
// seventeen forward and about thirty backward) costs more than the model's
// matrix products. Fused, the forward pass is one loop and the reverse
// pass one loop for all arguments. The adjoints are fused ops too; only
// differentiating them again (third order, or second order through a
// RowReduce) falls back to Stock, so every order stays correct.
type ElemFunc struct {
	// Name identifies the function in op names and hashes; two ElemFuncs
	// with the same name must be the same function.
	Name string
	// F is the value at one element; x holds the k arguments.
	F func(x []float64) float64
	// DF writes the k partial derivatives ∂F/∂x_a at one element into d.
	DF func(x, d []float64)
	// Stock builds the same elementwise function from differentiable
	// nodes; it is used only to differentiate the adjoints.
	Stock func(args G.Nodes) (*G.Node, error)
	// FB and DFB, if set, are F and the partial ∂F/∂x_k over whole slices
	// (args[a][e] is argument a at element e). A loop the compiler sees
	// whole runs several times faster than a call of F or DF per element;
	// they must agree with F and DF.
	FB  func(args [][]float64, out []float64)
	DFB func(args [][]float64, k int, out []float64)
	// Cost is the time of F (or of one partial) at one element in
	// nanoseconds, for deciding whether a call is worth splitting across
	// cores; 0 means 2, about a product of a few arguments (memory-bound).
	Cost float64
	// Linear maps the arguments whose partial ∂F/∂x_a is a constant to that
	// constant (μ in μ + σε has 1; ℓ in a −½ℓ term −½). Where it saves a
	// pass, the adjoint is built without the partial: a Map's matrix
	// argument with partial 1 gets ḡ itself, and a RowReduce's d-vector
	// argument gets c·Σ_i ḡ_i in every entry.
	Linear map[int]float64
}

// Map returns the n×d matrix F(a_ij, b_ij, …). Each argument is an n×d
// matrix or a d-vector, which stands for the matrix with that vector in
// every row (at least one argument must be a matrix): a per-dimension
// parameter shared by all rows enters without a broadcast node, and its
// gradient comes out column-summed without an n×d intermediate.
func Map(f *ElemFunc, args ...*G.Node) (*G.Node, error) { return applyElem(f, false, args) }

// RowReduce returns the n-vector Σ_j F(a_ij, b_ij, …), with arguments as
// for Map.
func RowReduce(f *ElemFunc, args ...*G.Node) (*G.Node, error) { return applyElem(f, true, args) }

func applyElem(f *ElemFunc, reduce bool, args G.Nodes) (*G.Node, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("graph.%s: no arguments", f.Name)
	}
	n, d := -1, -1
	for _, a := range args {
		if s := a.Shape(); len(s) == 2 {
			n, d = s[0], s[1]
			break
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("graph.%s: want at least one n×d matrix among the arguments", f.Name)
	}
	if len(args) > 64 {
		return nil, fmt.Errorf("graph.%s: %d arguments, at most 64", f.Name, len(args))
	}
	op := elemOp{f: f, k: len(args), n: n, d: d, reduce: reduce}
	for i, a := range args {
		switch s := a.Shape(); {
		case len(s) == 2 && s[0] == n && s[1] == d:
		case len(s) == 1 && s[0] == d:
			op.rowArgs |= 1 << i
		default:
			return nil, fmt.Errorf("graph.%s: argument %d has shape %v, want (%d, %d) or (%d)", f.Name, i, s, n, d, d)
		}
	}
	return applyOp(op, args...)
}

// elemOp is F applied elementwise (optionally row-summed), or, with grad
// set, adjoints ḡ ⊙ ∂F/∂x_a, where ḡ, the last input, is n×d for a Map and
// an n-vector broadcast along rows for a RowReduce. With the per-element
// forms all k adjoints come at once as a (k, n, d) tensor (one pass
// evaluates every partial, so shared subexpressions such as an exponential
// are computed once; elemPick hands each argument its slice); with the
// slice forms each argument gets its own adjoint op (one), column-summed
// for a row-vector argument.
type elemOp struct {
	pureOp
	f      *ElemFunc
	k      int
	n, d   int
	reduce bool
	grad   bool
	// one, with grad, is 1+a for the adjoint of argument a alone (used with
	// the slice forms, where a partial costs one tight loop and only the
	// arguments that need a gradient get one); 0 for all k at once.
	one int
	// rowArgs has bit a set when argument a is a d-vector (the same row
	// for every row).
	rowArgs uint64
	// addends, on the adjoint of one matrix argument or on a Map with the
	// slice forms, is how many last inputs (other gradient contributions of
	// the same node) are added to the output: the sum costs no separate
	// pass over memory, where an AddN of them would (see withAddend).
	addends int
}

func (op elemOp) isRow(a int) bool { return op.rowArgs&(1<<a) != 0 }

// cost is F's time per element in nanoseconds (ElemFunc.Cost).
func (op elemOp) cost() float64 {
	if op.f.Cost > 0 {
		return op.f.Cost
	}
	return 2
}

// linearAdjoint returns argument a's adjoint without evaluating its
// partial, when ElemFunc.Linear allows it (ok false otherwise): ḡ itself for
// a Map's matrix argument with partial 1, c·(Σ_i ḡ_i)·1 for a RowReduce's
// d-vector argument with partial c.
func (op elemOp) linearAdjoint(a int, g *G.Node) (adj *G.Node, ok bool, err error) {
	c, lin := op.f.Linear[a]
	switch {
	case !lin:
		return nil, false, nil
	case !op.reduce && !op.isRow(a) && c == 1:
		return g, true, nil
	case op.reduce && op.isRow(a):
		e := &Chain{}
		s := e.Do(G.HadamardProd(e.Do(G.Sum(g)), G.NewConstant(c)))
		return e.Do(BroadcastTo(s, tensor.Shape{op.d}, []int{0})), true, e.Err
	}
	return nil, false, nil
}

func (op elemOp) Arity() int {
	n := op.k
	if op.grad {
		n++
	}
	return n + op.addends
}

func (op elemOp) Type() hm.Type {
	ins := make([]int, op.k, op.k+1)
	for i := range ins {
		ins[i] = 2
		if op.isRow(i) {
			ins[i] = 1
		}
	}
	if op.grad {
		g, out := 2, 3
		if op.reduce {
			g = 1
		}
		if op.one > 0 {
			out = ins[op.one-1]
		}
		ins = append(ins, g)
		for range op.addends {
			ins = append(ins, 2)
		}
		return fnType(out, ins...)
	}
	if op.reduce {
		return fnType(1, ins...)
	}
	for range op.addends {
		ins = append(ins, 2)
	}
	return fnType(2, ins...)
}

func (op elemOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	switch {
	case op.grad && op.one > 0 && op.isRow(op.one-1):
		return tensor.Shape{op.d}, nil
	case op.grad && op.one > 0:
		return tensor.Shape{op.n, op.d}, nil
	case op.grad:
		return tensor.Shape{op.k, op.n, op.d}, nil
	case op.reduce:
		return tensor.Shape{op.n}, nil
	}
	return tensor.Shape{op.n, op.d}, nil
}

func (op elemOp) String() string {
	kind := "Map"
	if op.reduce {
		kind = "RowReduce"
	}
	dims := fmt.Sprintf("%dx%d", op.n, op.d)
	if op.rowArgs != 0 {
		dims += fmt.Sprintf(",rows%b", op.rowArgs)
	}
	switch {
	case op.addends == 1:
		dims += ",+addend"
	case op.addends > 1:
		dims += fmt.Sprintf(",+%d addends", op.addends)
	}
	if op.grad && op.one > 0 {
		return fmt.Sprintf("%s(%s)'%d(%s)", kind, op.f.Name, op.one-1, dims)
	}
	if op.grad {
		return fmt.Sprintf("%s(%s)'(%s)", kind, op.f.Name, dims)
	}
	return fmt.Sprintf("%s(%s)(%s)", kind, op.f.Name, dims)
}
func (op elemOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op elemOp) Hashcode() uint32      { return hashOf(op) }
func (op elemOp) DiffWRT(int) []bool {
	return allDiff(op.Arity())
}

// rows points row[a] at row i of every argument (the vector itself for a
// row-vector argument).
func (op elemOp) rows(in [][]float64, i int, row [][]float64) {
	for a := range row {
		if op.isRow(a) {
			row[a] = in[a][:op.d]
		} else {
			row[a] = in[a][i*op.d : (i+1)*op.d]
		}
	}
}

// gRow returns ḡ for row i: an n×d row for a Map, or ḡ_i (in s) for a
// RowReduce.
func (op elemOp) gRow(g []float64, i int) (row []float64, s float64) {
	if op.reduce {
		return nil, g[i]
	}
	return g[i*op.d : (i+1)*op.d], 0
}

func (op elemOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	if op.f.FB != nil && op.f.DFB != nil {
		return op.doBatch(in)
	}
	nd := op.n * op.d
	cost := (op.cost() + 4) * float64(op.d) // ns per row: a call of F or DF per element
	if !op.grad {
		// A RowReduce's row sums are its output, the n×d values scratch.
		sums, out := op.outAndScratch(nd)
		if splits(op.n, 1, cost) {
			parallelFor(op.n, 1, cost, func(lo, hi int) {
				op.mapElems(in, out, sums, lo, hi, make([]float64, op.k), make([][]float64, op.k))
			})
		} else {
			op.mapElems(in, out, sums, 0, op.n, op.buf.scratchOf(op.k), op.buf.rowsOf(op.k))
		}
		if op.reduce {
			return op.buf.owned(tensor.Shape{op.n}, sums), nil
		}
		return op.buf.owned(tensor.Shape{op.n, op.d}, out), nil
	}
	g := in[op.k]
	out := op.buf.take(op.k * nd)
	if splits(op.n, 1, cost) {
		parallelFor(op.n, 1, cost, func(lo, hi int) {
			op.adjointElems(in, g, out, lo, hi, make([]float64, 2*op.k), make([][]float64, op.k))
		})
	} else {
		op.adjointElems(in, g, out, 0, op.n, op.buf.scratchOf(2*op.k), op.buf.rowsOf(op.k))
	}
	return op.buf.owned(tensor.Shape{op.k, op.n, op.d}, out), nil
}

// outAndScratch returns the forward output and the n×d values: for a Map
// both are the n×d output (sums nil); for a RowReduce the n row sums come
// first in the buffer, so that they are what it hands out, and the values
// after them.
func (op elemOp) outAndScratch(nd int) (sums, out []float64) {
	if !op.reduce {
		return nil, op.buf.take(nd)
	}
	b := op.buf.take(op.n + nd)
	return b[:op.n], b[op.n:]
}

// mapElems computes rows [lo, hi) of the forward pass one element at a time
// (x holds k scratch values, row k scratch slices).
func (op elemOp) mapElems(in [][]float64, out, sums []float64, lo, hi int, x []float64, row [][]float64) {
	d := op.d
	for i := lo; i < hi; i++ {
		op.rows(in, i, row)
		var s float64
		for j := 0; j < d; j++ {
			for a := range x {
				x[a] = row[a][j]
			}
			v := op.f.F(x)
			out[i*d+j] = v
			s += v
		}
		if sums != nil {
			sums[i] = s
		}
	}
}

// adjointElems computes rows [lo, hi) of all k adjoints one element at a
// time (xdx holds 2k scratch values).
func (op elemOp) adjointElems(in [][]float64, g, out []float64, lo, hi int, xdx []float64, row [][]float64) {
	nd, d := op.n*op.d, op.d
	x, dx := xdx[:op.k], xdx[op.k:2*op.k]
	for i := lo; i < hi; i++ {
		op.rows(in, i, row)
		gr, gi := op.gRow(g, i)
		for j := 0; j < d; j++ {
			for a := range x {
				x[a] = row[a][j]
			}
			op.f.DF(x, dx)
			ge := gi
			if gr != nil {
				ge = gr[j]
			}
			for a, v := range dx {
				out[a*nd+i*d+j] = ge * v
			}
		}
	}
}

// doBatch is Do through the slice forms FB and DFB, called one row at a
// time (a row-vector argument is the same slice for every row), with the
// rows split across cores.
func (op elemOp) doBatch(in [][]float64) (G.Value, error) {
	nd, d := op.n*op.d, op.d
	cost := op.cost() * float64(d) // ns per row
	par := splits(op.n, 1, cost)
	if !op.grad {
		sums, out := op.outAndScratch(nd)
		if par {
			parallelFor(op.n, 1, cost, func(lo, hi int) { op.mapRows(in, out, sums, lo, hi, make([][]float64, op.k)) })
		} else {
			op.mapRows(in, out, sums, 0, op.n, op.buf.rowsOf(op.k))
		}
		if op.reduce {
			return op.buf.owned(tensor.Shape{op.n}, sums), nil
		}
		return op.buf.owned(tensor.Shape{op.n, op.d}, out), nil
	}
	g := in[op.k]
	if op.one == 0 { // all k adjoints, unsummed, as a (k, n, d) tensor
		out := op.buf.take(op.k * nd)
		if par {
			parallelFor(op.n, 1, cost, func(lo, hi int) { op.allPartialRows(in, g, out, lo, hi, make([][]float64, op.k)) })
		} else {
			op.allPartialRows(in, g, out, 0, op.n, op.buf.rowsOf(op.k))
		}
		return op.buf.owned(tensor.Shape{op.k, op.n, op.d}, out), nil
	}
	a := op.one - 1
	if !op.isRow(a) {
		out := op.buf.take(nd)
		if par {
			parallelFor(op.n, 1, cost, func(lo, hi int) { op.partialRows(in, g, out, lo, hi, make([][]float64, op.k)) })
		} else {
			op.partialRows(in, g, out, 0, op.n, op.buf.rowsOf(op.k))
		}
		return op.buf.owned(tensor.Shape{op.n, op.d}, out), nil
	}
	// A row-vector argument's adjoint is the column sum of the per-row
	// adjoints; each chunk of rows sums into its own vector, added to the
	// output in turn (in one piece, the chunk's vector is the output: 0 + s
	// is s).
	out := op.buf.take(d)
	clear(out)
	if !par {
		op.columnSumRows(in, g, out, 0, op.n, op.buf.scratchOf(d), op.buf.rowsOf(op.k))
		return op.buf.owned(tensor.Shape{op.d}, out), nil
	}
	// Chunks' sums are added in chunk order, so the result does not depend
	// on which chunk finished first.
	parts := make([][]float64, runtime.GOMAXPROCS(0))
	parallelChunks(op.n, 1, cost, func(c, lo, hi int) {
		acc := make([]float64, d)
		op.columnSumRows(in, g, acc, lo, hi, make([]float64, d), make([][]float64, op.k))
		parts[c] = acc
	})
	for _, acc := range parts {
		for j, v := range acc {
			out[j] += v
		}
	}
	return op.buf.owned(tensor.Shape{op.d}, out), nil
}

// mapRows computes rows [lo, hi) of the forward pass, and their sums for a
// RowReduce (sums non-nil).
func (op elemOp) mapRows(in [][]float64, out, sums []float64, lo, hi int, row [][]float64) {
	d := op.d
	for i := lo; i < hi; i++ {
		op.rows(in, i, row)
		o := out[i*d : (i+1)*d]
		op.f.FB(row, o)
		for _, x := range in[op.k : op.k+op.addends] {
			gemm.Add(o, x[i*d:(i+1)*d])
		}
		if sums != nil {
			var s float64
			for _, v := range o {
				s += v
			}
			sums[i] = s
		}
	}
}

// allPartialRows computes rows [lo, hi) of every argument's adjoint.
func (op elemOp) allPartialRows(in [][]float64, g, out []float64, lo, hi int, row [][]float64) {
	nd, d := op.n*op.d, op.d
	for i := lo; i < hi; i++ {
		op.rows(in, i, row)
		for a := 0; a < op.k; a++ {
			op.scaledPartial(row, a, g, i, out[a*nd+i*d:a*nd+(i+1)*d])
		}
	}
}

// partialRows computes rows [lo, hi) of the adjoint of matrix argument
// one−1, plus the addends if there are any.
func (op elemOp) partialRows(in [][]float64, g, out []float64, lo, hi int, row [][]float64) {
	d, a := op.d, op.one-1
	for i := lo; i < hi; i++ {
		op.rows(in, i, row)
		o := out[i*d : (i+1)*d]
		op.scaledPartial(row, a, g, i, o)
		for _, x := range in[op.k+1 : op.k+1+op.addends] {
			gemm.Add(o, x[i*d:(i+1)*d])
		}
	}
}

// columnSumRows adds rows [lo, hi) of the adjoint of row-vector argument
// one−1 into acc, one row at a time (tmp holds a row).
func (op elemOp) columnSumRows(in [][]float64, g, acc []float64, lo, hi int, tmp []float64, row [][]float64) {
	a := op.one - 1
	for i := lo; i < hi; i++ {
		op.rows(in, i, row)
		if gr, _ := op.gRow(g, i); op.f == product && gr != nil {
			gemm.MulAdd(acc, row[1-a], gr) // the partial and its sum in one pass
			continue
		}
		op.scaledPartial(row, a, g, i, tmp)
		for j, v := range tmp {
			acc[j] += v
		}
	}
}

// scaledPartial writes ḡ ⊙ ∂F/∂x_a for row i into dst.
func (op elemOp) scaledPartial(row [][]float64, a int, g []float64, i int, dst []float64) {
	gr, gi := op.gRow(g, i)
	if op.f == product && gr != nil {
		// ḡ ⊙ ∂(ab)/∂a = ḡ ⊙ b in one pass, where the partial's copy and
		// the scaling were two (ScaleColumns' adjoints are most of these).
		gemm.Mul(dst, row[1-a], gr)
		return
	}
	op.f.DFB(row, a, dst)
	if gr == nil {
		for j := range dst {
			dst[j] *= gi
		}
		return
	}
	for j, v := range gr {
		dst[j] *= v
	}
}

func (op elemOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	if !op.grad && op.addends > 0 { // each addend's gradient is g; the rest as without them
		plain := op
		plain.addends = 0
		grads, err := plain.SymDiff(in[:op.k], out, g)
		return appendCopies(grads, g, op.addends), err
	}
	if !op.grad && op.f.FB != nil && op.f.DFB != nil {
		grads := make(G.Nodes, op.k)
		for a := range grads {
			lin, ok, err := op.linearAdjoint(a, g)
			if err != nil {
				return nil, err
			}
			if ok {
				grads[a] = lin
				continue
			}
			adj := op
			adj.grad, adj.one = true, a+1
			if grads[a], err = applyOp(adj, append(append(G.Nodes(nil), in...), g)...); err != nil {
				return nil, err
			}
		}
		return grads, nil
	}
	if !op.grad {
		adj := op
		adj.grad = true
		all, err := applyOp(adj, append(append(G.Nodes(nil), in...), g)...)
		if err != nil {
			return nil, err
		}
		grads := make(G.Nodes, op.k)
		for a := range grads {
			if grads[a], err = applyOp(elemPickOp{a: a, k: op.k, n: op.n, d: op.d}, all); err != nil {
				return nil, err
			}
			if lin, ok, err := op.linearAdjoint(a, g); err != nil {
				return nil, err
			} else if ok {
				grads[a] = lin
			} else if op.isRow(a) {
				if grads[a], err = G.Sum(grads[a], 0); err != nil {
					return nil, err
				}
			}
		}
		return grads, nil
	}
	if op.addends > 0 { // each addend's gradient is g; the rest as without them
		plain := op
		plain.addends = 0
		grads, err := plain.SymDiff(in[:op.k+1], out, g)
		return appendCopies(grads, g, op.addends), err
	}
	// The adjoints' own adjoint: rebuild each ḡ ⊙ ∂F/∂x_a from stock nodes
	// and pull slice a of g back through it to every input, ḡ included.
	// A node passed in two argument slots gets a copy per extra slot, so
	// that the partials are per slot; the caller adds the slots up.
	orig := in
	in = append(G.Nodes(nil), in...)
	for i := range in {
		for j := 0; j < i; j++ {
			if orig[j] == orig[i] {
				a, err := applyOp(aliasOp{slot: i, shape: in[i].Shape().Clone()}, in[i])
				if err != nil {
					return nil, err
				}
				in[i] = a
				break
			}
		}
	}
	args, gbar := in[:op.k], in[op.k]
	// Stock sees n×d matrices: row-vector arguments are broadcast. The
	// partials are taken with respect to the broadcasts for the (k, n, d)
	// adjoint (whose slices are n×d), and to the vectors themselves, so
	// column-summed, for a single row-vector adjoint.
	full := append(G.Nodes(nil), args...)
	for a := range full {
		if op.isRow(a) {
			b, err := BroadcastTo(args[a], tensor.Shape{op.n, op.d}, []int{0})
			if err != nil {
				return nil, err
			}
			full[a] = b
		}
	}
	val, err := op.f.Stock(full)
	if err != nil {
		return nil, fmt.Errorf("graph.%s: Stock: %w", op.f.Name, err)
	}
	seed := gbar
	if op.reduce {
		if seed, err = BroadcastTo(gbar, tensor.Shape{op.n, op.d}, []int{1}); err != nil {
			return nil, err
		}
	}
	if op.one > 0 {
		adj, err := partials(G.Nodes{val}, G.Nodes{seed}, args)
		if err != nil {
			return nil, err
		}
		if adj[op.one-1] == nil {
			return make(G.Nodes, len(in)), nil
		}
		return partials(G.Nodes{adj[op.one-1]}, G.Nodes{g}, in)
	}
	adj, err := partials(G.Nodes{val}, G.Nodes{seed}, full)
	if err != nil {
		return nil, err
	}
	var outs, seeds G.Nodes
	for a, n := range adj {
		if n == nil {
			continue
		}
		h, err := applyOp(elemPickOp{a: a, k: op.k, n: op.n, d: op.d}, g)
		if err != nil {
			return nil, err
		}
		outs, seeds = append(outs, n), append(seeds, h)
	}
	if len(outs) == 0 {
		return make(G.Nodes, len(in)), nil
	}
	return partials(outs, seeds, in)
}

// takesAddend reports whether n is the adjoint of one matrix argument of a
// fused function (with the slice forms), or a Map with the slice forms,
// which withAddend can extend.
func takesAddend(n *G.Node) bool {
	op, is := n.Op().(elemOp)
	if !is || op.addends > 0 {
		return false
	}
	if !op.grad { // a Map computed row by row through its slice form
		return !op.reduce && op.f.FB != nil && op.f.DFB != nil
	}
	return op.one > 0 && !op.isRow(op.one-1)
}

// withAddend returns the node n (see takesAddend) plus the n×d matrices
// xs, as one op. Backprop uses it to sum an argument's gradient
// contributions without an AddN pass over memory: NIMGP_FO's inducing
// inputs have three (the cross-covariances, K_ZZ and the first-order
// term's Gram matrix), and the AddN of two of them was a pass over ten
// 100×784 matrices a step on MNIST.
func withAddend(n *G.Node, xs ...*G.Node) (*G.Node, error) {
	op := n.Op().(elemOp)
	for _, x := range xs {
		if !sameShape(x.Shape(), tensor.Shape{op.n, op.d}) {
			return nil, fmt.Errorf("graph: adding %v to the %dx%d adjoint %v", x.Shape(), op.n, op.d, op)
		}
	}
	op.addends = len(xs)
	return applyOp(op, append(Inputs(n), xs...)...)
}

// appendCopies appends k copies of g to grads.
func appendCopies(grads G.Nodes, g *G.Node, k int) G.Nodes {
	for range k {
		grads = append(grads, g)
	}
	return grads
}

// elemPickOp takes slice a of a (k, n, d) tensor; elemPlaceOp is its
// adjoint, putting an n×d matrix into slice a of zeros.
type elemPickOp struct {
	pureOp
	a, k, n, d int
}

func (op elemPickOp) Arity() int    { return 1 }
func (op elemPickOp) Type() hm.Type { return fnType(2, 3) }
func (op elemPickOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.d}, nil
}
func (op elemPickOp) String() string {
	return fmt.Sprintf("Pick%d(%dx%dx%d)", op.a, op.k, op.n, op.d)
}
func (op elemPickOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op elemPickOp) Hashcode() uint32      { return hashOf(op) }
func (op elemPickOp) DiffWRT(int) []bool    { return []bool{true} }
func (op elemPickOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	nd := op.n * op.d
	out := op.buf.take(nd)
	copy(out, x[op.a*nd:(op.a+1)*nd])
	return op.buf.owned(tensor.Shape{op.n, op.d}, out), nil
}
func (op elemPickOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	p, err := applyOp(elemPlaceOp(op), g)
	return G.Nodes{p}, err
}

type elemPlaceOp elemPickOp

func (op elemPlaceOp) Arity() int    { return 1 }
func (op elemPlaceOp) Type() hm.Type { return fnType(3, 2) }
func (op elemPlaceOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.k, op.n, op.d}, nil
}
func (op elemPlaceOp) String() string {
	return fmt.Sprintf("Place%d(%dx%dx%d)", op.a, op.k, op.n, op.d)
}
func (op elemPlaceOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op elemPlaceOp) Hashcode() uint32      { return hashOf(op) }
func (op elemPlaceOp) DiffWRT(int) []bool    { return []bool{true} }
func (op elemPlaceOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	nd := op.n * op.d
	out := op.buf.take(op.k * nd)
	clear(out)
	copy(out[op.a*nd:], x)
	return op.buf.owned(tensor.Shape{op.k, op.n, op.d}, out), nil
}
func (op elemPlaceOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	p, err := applyOp(elemPickOp(op), g)
	return G.Nodes{p}, err
}

// aliasOp is a copying identity. It gives one node a distinct name per
// argument slot of a fused op (see elemOp.SymDiff).
type aliasOp struct {
	pureOp
	slot  int
	shape tensor.Shape
}

func (op aliasOp) Arity() int    { return 1 }
func (op aliasOp) Type() hm.Type { return fnType(op.shape.Dims(), op.shape.Dims()) }
func (op aliasOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op aliasOp) String() string        { return fmt.Sprintf("Alias%d%v", op.slot, op.shape) }
func (op aliasOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op aliasOp) Hashcode() uint32      { return hashOf(op) }
func (op aliasOp) DiffWRT(int) []bool    { return []bool{true} }
func (op aliasOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	out := op.buf.take(len(x))
	copy(out, x)
	return op.buf.owned(op.shape, out), nil
}
func (op aliasOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) { return G.Nodes{g}, nil }

func (op elemOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op elemPickOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op elemPlaceOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
