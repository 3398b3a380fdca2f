package graph

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// expQuadChain is the unfused chain ExpQuad replaces, op for op as the SE
// kernel built it.
func expQuadChain(c, xx, zz, v *G.Node) *G.Node {
	nm := c.Shape().Clone()
	d := must(G.Add(must(BroadcastTo(xx, nm, []int{1})), must(BroadcastTo(zz, nm, []int{0}))))
	d = must(G.Sub(d, must(G.HadamardProd(c, G.NewConstant(2.0)))))
	return must(G.HadamardProd(v, must(Exp(must(G.HadamardProd(d, G.NewConstant(-0.5)))))))
}

// The fused kernel rounds exactly as the chain it replaces, including
// where the exponent is large and K underflows, and its gradients match
// finite differences to second order, with xx and zz distinct or one node.
func TestExpQuad(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, m = 7, 5
	cv, xv, zv := randMat(rng, n, m), randMat(rng, n, 1), randMat(rng, m, 1)
	for i := range xv {
		xv[i] = 2 + 3*xv[i]*xv[i]
	}
	xv[0] = 1500 // exp(−750): K underflows to zero
	g := G.NewGraph()
	c, xx, zz := matrix(g, "c", n, m, cv...), vec(g, "xx", xv...), vec(g, "zz", zv...)
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(1.7))
	got, want := must(ExpQuad(c, xx, zz, v)), expQuadChain(c, xx, zz, v)
	p := run(t, g, got, want)
	a, _ := p.Float64s(got)
	b, _ := p.Float64s(want)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("K[%d] = %v, the chain gives %v", i, a[i], b[i])
		}
	}
	if a[0] != 0 {
		t.Fatalf("K[0] = %v, want an underflow to 0", a[0])
	}
	scalar := func(g *G.ExprGraph, x float64) *G.Node {
		return G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(x))
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		c := matrix(g, "c", 4, 3, randMat(rng, 4, 3)...)
		xx, zz := vec(g, "xx", 0.5, 1.1, 0.2, 0.9), vec(g, "zz", 0.7, 0.3, 1.4)
		v := scalar(g, 1.3)
		return nonlinearCost(t, rng, must(ExpQuad(c, xx, zz, v))), G.Nodes{c, xx, zz, v}
	})
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		c := matrix(g, "c", 3, 3, randMat(rng, 3, 3)...)
		zz := vec(g, "zz", 0.7, 0.3, 1.4)
		v := scalar(g, 0.8)
		return nonlinearCost(t, rng, must(ExpQuad(c, zz, zz, v))), G.Nodes{c, zz, v}
	})
}

// Mismatched shapes are refused with the shapes named, before any graph
// is built.
func TestExpQuadShapes(t *testing.T) {
	g := G.NewGraph()
	c := G.NewMatrix(g, G.Float64, G.WithShape(3, 2), G.WithName("c"), G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking(make([]float64, 6)))))
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(1.0))
	if _, err := ExpQuad(c, vec(g, "a", 1, 2), vec(g, "b", 1, 2), v); err == nil {
		t.Fatal("an xx of 2 for 3 rows was accepted")
	}
	if _, err := ExpQuad(c, vec(g, "a2", 1, 2, 3), vec(g, "b2", 1, 2), vec(g, "v2", 1)); err == nil {
		t.Fatal("a vector variance was accepted")
	}
}

// BenchmarkExpQuadRows fills a 200×100 kernel matrix (the synthetic
// tables' batch against their inducing inputs).
func BenchmarkExpQuadRows(b *testing.B) {
	const n, m = 200, 100
	c, xx, zz := make([]float64, n*m), make([]float64, n), make([]float64, m)
	for i := range c {
		c[i] = float64(i%17) * 0.01
	}
	for i := range xx {
		xx[i] = float64(i%5) * 0.1
	}
	for j := range zz {
		zz[j] = float64(j%7) * 0.1
	}
	out := make([]float64, n*m)
	in := [4][]float64{c, xx, zz, {1.3}}
	for b.Loop() {
		expQuadRows(in, out, m, 0, n)
	}
}
