package graph

import G "gorgonia.org/gorgonia"

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
	FB: func(a [][]float64, out []float64) {
		x, y := a[0][:len(out)], a[1][:len(out)]
		for e := range out {
			out[e] = x[e] * y[e]
		}
	},
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
