package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
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
}

// Map returns the n×d matrix F(a_ij, b_ij, …).
func Map(f *ElemFunc, args ...*G.Node) (*G.Node, error) { return applyElem(f, false, args) }

// RowReduce returns the n-vector Σ_j F(a_ij, b_ij, …).
func RowReduce(f *ElemFunc, args ...*G.Node) (*G.Node, error) { return applyElem(f, true, args) }

func applyElem(f *ElemFunc, reduce bool, args G.Nodes) (*G.Node, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("graph.%s: no arguments", f.Name)
	}
	n, d, err := sameMatrices(f.Name, args...)
	if err != nil {
		return nil, err
	}
	return G.ApplyOp(elemOp{f: f, k: len(args), n: n, d: d, reduce: reduce}, args...)
}

// elemOp is F applied elementwise (optionally row-summed), or, with grad
// set, adjoints ḡ ⊙ ∂F/∂x_a, where ḡ, the last input, is n×d for a Map and
// an n-vector broadcast along rows for a RowReduce. With the per-element
// forms all k adjoints come at once as a (k, n, d) tensor (one pass
// evaluates every partial, so shared subexpressions such as an exponential
// are computed once; elemPick hands each argument its slice); with the
// slice forms each argument gets its own adjoint op (one).
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
}

func (op elemOp) Arity() int {
	if op.grad {
		return op.k + 1
	}
	return op.k
}

func (op elemOp) Type() hm.Type {
	ins := make([]int, op.k, op.k+1)
	for i := range ins {
		ins[i] = 2
	}
	if op.grad {
		g, out := 2, 3
		if op.reduce {
			g = 1
		}
		if op.one > 0 {
			out = 2
		}
		return fnType(out, append(ins, g)...)
	}
	if op.reduce {
		return fnType(1, ins...)
	}
	return fnType(2, ins...)
}

func (op elemOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	switch {
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
	if op.grad && op.one > 0 {
		return fmt.Sprintf("%s(%s)'%d(%dx%d)", kind, op.f.Name, op.one-1, op.n, op.d)
	}
	if op.grad {
		return fmt.Sprintf("%s(%s)'(%dx%d)", kind, op.f.Name, op.n, op.d)
	}
	return fmt.Sprintf("%s(%s)(%dx%d)", kind, op.f.Name, op.n, op.d)
}
func (op elemOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op elemOp) Hashcode() uint32      { return hashOf(op) }
func (op elemOp) DiffWRT(int) []bool {
	return allDiff(op.Arity())
}

func (op elemOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := float64sAll(vs)
	if err != nil {
		return nil, err
	}
	if op.f.FB != nil && op.f.DFB != nil {
		return op.doBatch(in)
	}
	nd := op.n * op.d
	cost := 4 * op.k // ns per element: a call of F or DF and k loads
	if !op.grad {
		if !op.reduce {
			out := make([]float64, nd)
			parallelFor(nd, 1, cost, func(lo, hi int) {
				x := make([]float64, op.k)
				for e := lo; e < hi; e++ {
					for a := range x {
						x[a] = in[a][e]
					}
					out[e] = op.f.F(x)
				}
			})
			return owned(tensor.Shape{op.n, op.d}, out), nil
		}
		sums := make([]float64, op.n)
		parallelFor(op.n, 1, cost*op.d, func(lo, hi int) {
			x := make([]float64, op.k)
			for i := lo; i < hi; i++ {
				var s float64
				for e := i * op.d; e < (i+1)*op.d; e++ {
					for a := range x {
						x[a] = in[a][e]
					}
					s += op.f.F(x)
				}
				sums[i] = s
			}
		})
		return owned(tensor.Shape{op.n}, sums), nil
	}
	g := in[op.k]
	out := make([]float64, op.k*nd)
	parallelFor(nd, op.d, cost, func(lo, hi int) {
		x, dx := make([]float64, op.k), make([]float64, op.k)
		for e := lo; e < hi; e++ {
			for a := range x {
				x[a] = in[a][e]
			}
			op.f.DF(x, dx)
			ge := g[e%len(g)]
			if op.reduce {
				ge = g[e/op.d]
			}
			for a, v := range dx {
				out[a*nd+e] = ge * v
			}
		}
	})
	return owned(tensor.Shape{op.k, op.n, op.d}, out), nil
}

// doBatch is Do through the slice forms FB and DFB, each called on a chunk
// of whole rows per core.
func (op elemOp) doBatch(in [][]float64) (G.Value, error) {
	nd := op.n * op.d
	args := in[:op.k]
	chunk := func(lo, hi int) [][]float64 {
		sub := make([][]float64, len(args))
		for a, x := range args {
			sub[a] = x[lo:hi]
		}
		return sub
	}
	cost := 2 * op.k // ns per element: a vectorisable loop over k slices
	if !op.grad {
		out := make([]float64, nd)
		var sums []float64
		if op.reduce {
			sums = make([]float64, op.n)
		}
		parallelFor(nd, op.d, cost, func(lo, hi int) {
			op.f.FB(chunk(lo, hi), out[lo:hi])
			for i := lo / op.d; i < hi/op.d && op.reduce; i++ {
				var s float64
				for _, v := range out[i*op.d : (i+1)*op.d] {
					s += v
				}
				sums[i] = s
			}
		})
		if !op.reduce {
			return owned(tensor.Shape{op.n, op.d}, out), nil
		}
		return owned(tensor.Shape{op.n}, sums), nil
	}
	g := in[op.k]
	lo, hi, shape := 0, op.k, tensor.Shape{op.k, op.n, op.d}
	if op.one > 0 {
		lo, hi, shape = op.one-1, op.one, tensor.Shape{op.n, op.d}
	}
	out := make([]float64, (hi-lo)*nd)
	parallelFor(nd, op.d, cost*(hi-lo), func(e0, e1 int) {
		sub := chunk(e0, e1)
		for a := lo; a < hi; a++ {
			part := out[(a-lo)*nd+e0 : (a-lo)*nd+e1]
			op.f.DFB(sub, a, part)
			if op.reduce {
				for i := e0 / op.d; i < e1/op.d; i++ {
					gi := g[i]
					row := part[i*op.d-e0 : (i+1)*op.d-e0]
					for j := range row {
						row[j] *= gi
					}
				}
				continue
			}
			for e, ge := range g[e0:e1] {
				part[e] *= ge
			}
		}
	})
	return owned(shape, out), nil
}

func (op elemOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	if !op.grad && op.f.FB != nil && op.f.DFB != nil {
		grads := make(G.Nodes, op.k)
		for a := range grads {
			adj := op
			adj.grad, adj.one = true, a+1
			var err error
			if grads[a], err = G.ApplyOp(adj, append(append(G.Nodes(nil), in...), g)...); err != nil {
				return nil, err
			}
		}
		return grads, nil
	}
	if !op.grad {
		adj := op
		adj.grad = true
		all, err := G.ApplyOp(adj, append(append(G.Nodes(nil), in...), g)...)
		if err != nil {
			return nil, err
		}
		grads := make(G.Nodes, op.k)
		for a := range grads {
			if grads[a], err = G.ApplyOp(elemPickOp{a: a, k: op.k, n: op.n, d: op.d}, all); err != nil {
				return nil, err
			}
		}
		return grads, nil
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
				a, err := G.ApplyOp(aliasOp{slot: i, shape: in[i].Shape().Clone()}, in[i])
				if err != nil {
					return nil, err
				}
				in[i] = a
				break
			}
		}
	}
	args, gbar := in[:op.k], in[op.k]
	val, err := op.f.Stock(args)
	if err != nil {
		return nil, fmt.Errorf("graph.%s: Stock: %w", op.f.Name, err)
	}
	seed := gbar
	if op.reduce {
		if seed, err = BroadcastTo(gbar, tensor.Shape{op.n, op.d}, []int{1}); err != nil {
			return nil, err
		}
	}
	adj, err := partials(G.Nodes{val}, G.Nodes{seed}, args)
	if err != nil {
		return nil, err
	}
	if op.one > 0 {
		if adj[op.one-1] == nil {
			return make(G.Nodes, len(in)), nil
		}
		return partials(G.Nodes{adj[op.one-1]}, G.Nodes{g}, in)
	}
	var outs, seeds G.Nodes
	for a, n := range adj {
		if n == nil {
			continue
		}
		h, err := G.ApplyOp(elemPickOp{a: a, k: op.k, n: op.n, d: op.d}, g)
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
	return owned(tensor.Shape{op.n, op.d}, append([]float64(nil), x[op.a*nd:(op.a+1)*nd]...)), nil
}
func (op elemPickOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	p, err := G.ApplyOp(elemPlaceOp(op), g)
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
	out := make([]float64, op.k*nd)
	copy(out[op.a*nd:], x)
	return owned(tensor.Shape{op.k, op.n, op.d}, out), nil
}
func (op elemPlaceOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	p, err := G.ApplyOp(elemPickOp(op), g)
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
	return owned(op.shape.Clone(), append([]float64(nil), x...)), nil
}
func (op aliasOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) { return G.Nodes{g}, nil }
