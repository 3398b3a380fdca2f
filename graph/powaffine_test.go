package graph

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// The fused polynomial rounds exactly as the chain it replaces (an
// addition, an IntPow, the variance's product), for negative, zero and
// large bases and every small degree, and its gradients (with the factor
// g of its adjoints, reached at second order) match finite differences.
func TestPowAffine(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const n, m = 9, 15 // 135 elements: two blocks and a partial one
	xv := randMat(rng, n, m)
	xv[0], xv[1], xv[2] = -1, -3.5, 40
	for _, p := range []int{0, 1, 2, 3, 9} {
		g := G.NewGraph()
		x := matrix(g, "x", n, m, xv...)
		v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(1.7))
		got := must(PowAffine(x, v, 1, p))
		want := must(G.HadamardProd(v, must(IntPow(must(G.Add(x, G.NewConstant(1.0))), p))))
		prog := run(t, g, got, want)
		a, _ := prog.Float64s(got)
		b, _ := prog.Float64s(want)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("p = %d: y[%d] = %v, the chain gives %v", p, i, a[i], b[i])
			}
		}
		if p > 0 && a[0] != 0 {
			t.Fatalf("p = %d: (−1 + 1)^p = %v", p, a[0])
		}
	}
	scalar := func(g *G.ExprGraph, x float64) *G.Node {
		return G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(x))
	}
	for _, p := range []int{0, 1, 2, 3, 9} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			xv := randMat(rng, 4, 3)
			for i := range xv { // keep (x+1)^9 within exp's range in the cost
				xv[i] *= 0.3
			}
			x := matrix(g, "x", 4, 3, xv...)
			v := scalar(g, 1.3)
			return nonlinearCost(t, rng, must(PowAffine(x, v, 1, p))), G.Nodes{x, v}
		})
	}
	// A vector (the kernel's diagonal) and another shift.
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x := vec(g, "x", 0.3, -0.7, 0.9, 0.1)
		v := scalar(g, 0.6)
		return nonlinearCost(t, rng, must(PowAffine(x, v, -0.5, 4))), G.Nodes{x, v}
	})
}

// A vector factor and a negative power are refused, before any graph runs.
func TestPowAffineArguments(t *testing.T) {
	g := G.NewGraph()
	x := vec(g, "x", 1, 2, 3)
	if _, err := PowAffine(x, vec(g, "v", 1, 2), 1, 2); err == nil {
		t.Fatal("a vector factor was accepted")
	}
	v := G.NewScalar(g, G.Float64, G.WithName("s"), G.WithValue(1.0))
	if _, err := PowAffine(x, v, 1, -1); err == nil {
		t.Fatal("a negative power was accepted")
	}
}
