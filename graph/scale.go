package graph

import (
	"fmt"
	"sync"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// ScaleColumns returns x·diag(v), x_ij·v_j, for an n×d matrix x and a
// d-vector v: one pass forward, x̄ = ḡ·diag(v) and v̄ = column sums of ḡ ⊙ x
// back (the latter without an n×d intermediate), exact at every order. It
// replaces HadamardProd(x, BroadcastTo(v, …)), whose broadcast is an n×d
// copy forward and an n×d product plus a column sum back; kernels weight
// every input column by an inverse length-scale this way.
func ScaleColumns(x, v *G.Node) (*G.Node, error) { return Map(product, x, v) }

// product is a·b.
var product = &ElemFunc{
	Name: "product",
	Cost: 0.5,
	F:    func(x []float64) float64 { return x[0] * x[1] },
	DF:   func(x, d []float64) { d[0], d[1] = x[1], x[0] },
	FB:   func(a [][]float64, out []float64) { gemm.Mul(out, a[0], a[1]) },
	DFB: func(a [][]float64, k int, out []float64) {
		copy(out, a[1-k][:len(out)]) // ∂(ab)/∂a = b, ∂(ab)/∂b = a
	},
	Stock: func(in G.Nodes) (*G.Node, error) { return G.HadamardProd(in[0], in[1]) },
}

// Square returns x ⊙ x for an n×d matrix as one fused op: x̄ = 2x ⊙ ḡ is one
// pass (gorgonia.Square's gradient takes two), which can also add x's other
// gradient contributions (see Backprop).
func Square(x *G.Node) (*G.Node, error) { return Map(square, x) }

// square is a².
var square = &ElemFunc{
	Name: "square",
	Cost: 0.5,
	F:    func(x []float64) float64 { return x[0] * x[0] },
	DF:   func(x, d []float64) { d[0] = 2 * x[0] },
	FB: func(a [][]float64, out []float64) {
		for e, v := range a[0][:len(out)] {
			out[e] = v * v
		}
	},
	DFB: func(a [][]float64, _ int, out []float64) {
		for e, v := range a[0][:len(out)] {
			out[e] = 2 * v
		}
	},
	Stock: func(in G.Nodes) (*G.Node, error) { return G.Square(in[0]) },
}

// scaledColumns returns ḡ and v when n is ḡ ⊙ v, an n×d ḡ with a d-vector
// v in every row: the adjoint of the matrix argument of ScaleColumns (or of
// any product of a matrix and a row vector).
func scaledColumns(n *G.Node) (g, v *G.Node, ok bool) {
	op, is := n.Op().(elemOp)
	if !is || op.f != product || !op.grad || op.one == 0 || op.addends > 0 || op.reduce {
		return nil, nil, false
	}
	a := op.one - 1
	if op.isRow(a) || !op.isRow(1-a) {
		return nil, nil, false
	}
	in := Inputs(n)
	return in[op.k], in[1-a], true
}

// sumScaledColumns adds the contributions among ns that are ḡ_i ⊙ v_i
// (scaledColumns), when there are two or more, as one Map Σ_i ḡ_i ⊙ v_i,
// and returns it with the other contributions (nil if there are fewer
// than two). An ARD kernel's inducing inputs get such an adjoint from each
// product they enter (K_Zx, K_ZZ and NIMGP_FO's Gram matrix), each the
// product's output scaled by the weights: computed one by one and then
// added, every one was written out and read back, where the sum reads
// each once and writes one matrix.
func sumScaledColumns(ns G.Nodes) (*G.Node, G.Nodes, error) {
	var pairs, rest G.Nodes
	for _, n := range ns {
		if g, v, ok := scaledColumns(n); ok {
			pairs = append(pairs, g, v)
		} else {
			rest = append(rest, n)
		}
	}
	if len(pairs) < 4 {
		return nil, nil, nil
	}
	s, err := Map(pairProducts(len(pairs)/2), pairs...)
	return s, rest, err
}

var (
	productSumsMu sync.Mutex
	productSums   = map[int]*ElemFunc{}
)

// pairProducts is Σ_i a_2i·a_2i+1 over k pairs of arguments, one
// ElemFunc per k (its name says k, as names must identify functions).
func pairProducts(k int) *ElemFunc {
	productSumsMu.Lock()
	defer productSumsMu.Unlock()
	if f, ok := productSums[k]; ok {
		return f
	}
	f := &ElemFunc{
		Name: fmt.Sprintf("pairProducts%d", k),
		Cost: 0.5 * float64(k),
		F: func(x []float64) float64 {
			s := x[0] * x[1]
			for i := 2; i < len(x); i += 2 {
				s += x[i] * x[i+1]
			}
			return s
		},
		DF: func(x, d []float64) {
			for i := 0; i < len(x); i += 2 {
				d[i], d[i+1] = x[i+1], x[i]
			}
		},
		FB: func(a [][]float64, out []float64) {
			gemm.Mul(out, a[0], a[1])
			for i := 2; i < len(a); i += 2 {
				gemm.MulAdd(out, a[i], a[i+1])
			}
		},
		DFB: func(a [][]float64, i int, out []float64) { copy(out, a[i^1][:len(out)]) },
		Stock: func(in G.Nodes) (*G.Node, error) {
			e := &Chain{}
			s := e.Do(G.HadamardProd(in[0], in[1]))
			for i := 2; i < len(in); i += 2 {
				s = e.Do(G.Add(s, e.Do(G.HadamardProd(in[i], in[i+1]))))
			}
			return s, e.Err
		},
	}
	productSums[k] = f
	return f
}
