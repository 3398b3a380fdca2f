package graph

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
)

// The fused ops give, to the last bit, the compositions they replace, and
// their gradients (also bit for bit at first order) pass the
// finite-difference checks at both orders.
func TestExpDiagLowerIsTheComposition(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	n := 9
	xv, wv := randMat(rng, n, n), randMat(rng, n, n)
	g := G.NewGraph()
	X := matrix(g, "X", n, n, xv...)
	W := matrix(g, "W", n, n, wv...)
	fused := must(ExpDiagLower(X))
	composed := must(G.Add(must(TriMask(X, true, 0)), must(DiagMatrix(must(G.Exp(must(Diag(X))))))))
	cf := must(G.Sum(must(G.HadamardProd(fused, W))))
	cc := must(G.Sum(must(G.HadamardProd(composed, W))))
	gf, gc := mustNodes(Grad(cf, X))[0], mustNodes(Grad(cc, X))[0]
	p := run(t, g, fused, composed, gf, gc)
	a, _ := p.Float64s(fused)
	b, _ := p.Float64s(composed)
	if !slices.Equal(a, b) {
		t.Fatalf("values differ:\n%v\n%v", a, b)
	}
	a, _ = p.Float64s(gf)
	b, _ = p.Float64s(gc)
	if !slices.Equal(a, b) {
		t.Fatalf("gradients differ:\n%v\n%v", a, b)
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		X := matrix(g, "X", 4, 4, randMat(rng, 4, 4)...)
		return nonlinearCost(t, rng, must(ExpDiagLower(X))), G.Nodes{X}
	})
}

func TestSumSquaresIsTheComposition(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, shape := range [][]int{{300}, {30, 40}} {
		nv := 1
		for _, d := range shape {
			nv *= d
		}
		g := G.NewGraph()
		var X *G.Node
		if len(shape) == 1 {
			X = vec(g, "x", randMat(rng, nv, 1)...)
		} else {
			X = matrix(g, "X", shape[0], shape[1], randMat(rng, nv, 1)...)
		}
		fused := must(SumSquares(X))
		composed := must(G.Sum(must(G.Square(X))))
		cf := must(G.Exp(must(G.HadamardProd(fused, G.NewConstant(0.01)))))
		cc := must(G.Exp(must(G.HadamardProd(composed, G.NewConstant(0.01)))))
		gf, gc := mustNodes(Grad(cf, X))[0], mustNodes(Grad(cc, X))[0]
		p := run(t, g, fused, composed, gf, gc)
		a, _ := p.Float64s(fused)
		b, _ := p.Float64s(composed)
		if !slices.Equal(a, b) {
			t.Fatalf("%v: values differ: %v %v", shape, a, b)
		}
		a, _ = p.Float64s(gf)
		b, _ = p.Float64s(gc)
		if !slices.Equal(a, b) {
			t.Fatalf("%v: gradients differ", shape)
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		X := matrix(g, "X", 3, 4, randMat(rng, 3, 4)...)
		return must(G.Exp(must(G.HadamardProd(must(SumSquares(X)), G.NewConstant(0.1))))), G.Nodes{X}
	})
	g := G.NewGraph()
	if _, err := SumSquares(G.NewScalar(g, G.Float64, G.WithName("s"))); err == nil {
		t.Error("a scalar was accepted")
	}
}

func mustNodes(ns G.Nodes, err error) G.Nodes {
	if err != nil {
		panic(err)
	}
	return ns
}
