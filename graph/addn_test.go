package graph

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestAddN(t *testing.T) {
	g := G.NewGraph()
	a, b, c := matrix(g, "a", 2, 2, 1, 2, 3, 4), matrix(g, "b", 2, 2, 10, 20, 30, 40), matrix(g, "c", 2, 2, 100, 200, 300, 400)
	s := must(AddN(a, b, c))
	p := run(t, g, s)
	got, _ := p.Float64s(s)
	for i, want := range []float64{111, 222, 333, 444} {
		if got[i] != want {
			t.Fatalf("AddN[%d] = %v, want %v", i, got[i], want)
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, b := matrix(g, "a", 3, 2, randMat(rng, 3, 2)...), matrix(g, "b", 3, 2, randMat(rng, 3, 2)...)
		ab := must(G.HadamardProd(a, b))
		return nonlinearCost(t, rng, must(AddN(a, ab, b, a))), G.Nodes{a, b}
	})
	if _, err := AddN(a, must(Diag(a))); err == nil {
		t.Fatal("AddN of a matrix and a vector: want a shape error")
	}
	// Large enough to be split across cores, and scalars.
	rng := rand.New(rand.NewPCG(83, 84))
	const n, d = 301, 257
	av, bv := randMat(rng, n, d), randMat(rng, n, d)
	g = G.NewGraph()
	big := must(AddN(matrix(g, "a", n, d, av...), matrix(g, "b", n, d, bv...)))
	sc := must(AddN(G.NewScalar(g, G.Float64, G.WithName("s1"), G.WithValue(1.5)), G.NewScalar(g, G.Float64, G.WithName("s2"), G.WithValue(2.0))))
	p = run(t, g, big, sc)
	got, _ = p.Float64s(big)
	for i := range av {
		if got[i] != av[i]+bv[i] {
			t.Fatalf("large AddN[%d] = %v, want %v", i, got[i], av[i]+bv[i])
		}
	}
	if v, err := p.Scalar(sc); err != nil || v != 3.5 {
		t.Fatalf("scalar AddN = %v (%v), want 3.5", v, err)
	}
}
