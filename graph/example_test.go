package graph_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// A gradient of a gradient: for f = Σ (x⊙w)², g = ∂f/∂x and L = Σ g², the
// project's Grad gives ∂L/∂w = 16x²w³ (gorgonia.Grad returns half of it).
func ExampleGrad() {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2}))))
	w := G.NewVector(g, G.Float64, G.WithShape(2), G.WithName("w"), G.WithValue(tensor.New(tensor.WithBacking([]float64{3, 0.5}))))
	y, _ := G.HadamardProd(x, w)
	sq, _ := G.Square(y)
	f, _ := G.Sum(sq)
	gx, _ := graph.Grad(f, x)
	gsq, _ := G.Square(gx[0])
	L, _ := G.Sum(gsq)
	gw, _ := graph.Grad(L, w)
	prog, _ := graph.Compile(g, gw[0])
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := prog.Float64s(gw[0])
	fmt.Println(v)
	// Output: [432 8]
}

// Checking a user-written cost against finite differences, first and second order.
func ExampleCheckGrad() {
	g := G.NewGraph()
	a := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("A"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{2, 0.3, 0.3, 1}))))
	l, _ := graph.Cholesky(a)
	cost, _ := graph.LogDetChol(l)
	r1, _ := graph.CheckGrad(cost, G.Nodes{a}, graph.CheckOptions{})
	r2, _ := graph.CheckGrad2(cost, G.Nodes{a}, graph.CheckOptions{})
	fmt.Println(r1.MaxRelErr < 1e-6, r2.MaxRelErr < 1e-6)
	// Output: true true
}
