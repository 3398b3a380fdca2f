package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestRowSum3AndRowScale2(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	av, bv, cv, rv := randMat(rng, 3, 4), randMat(rng, 3, 4), randMat(rng, 3, 4), randMat(rng, 3, 1)
	g := G.NewGraph()
	a, b, c := matrix(g, "a", 3, 4, av...), matrix(g, "b", 3, 4, bv...), matrix(g, "c", 3, 4, cv...)
	r := vec(g, "r", rv...)
	s := must(RowSum3(a, b, c, 1.5))
	p := must(RowScale2(a, b, r, -2))
	prog := run(t, g, s, p)
	sg, _ := prog.Float64s(s)
	pg, _ := prog.Float64s(p)
	for i := 0; i < 3; i++ {
		var want float64
		for j := 0; j < 4; j++ {
			k := 4*i + j
			want += 1.5 * av[k] * bv[k] * cv[k]
			if w := -2 * av[k] * bv[k] * rv[i]; math.Abs(pg[k]-w) > 1e-14 {
				t.Fatalf("RowScale2[%d,%d] = %v, want %v", i, j, pg[k], w)
			}
		}
		if math.Abs(sg[i]-want) > 1e-13 {
			t.Fatalf("RowSum3[%d] = %v, want %v", i, sg[i], want)
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, b, c := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, randMat(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
		return nonlinearCost(t, rng, must(RowSum3(a, b, c, 0.7))), G.Nodes{a, b, c}
	})
	// One node twice, as in NIMGP_FO's Σ_j g²·v.
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x, v := matrix(g, "x", 3, 4, randMat(rng, 3, 4)...), matrix(g, "v", 3, 4, randMat(rng, 3, 4)...)
		return nonlinearCost(t, rng, must(RowSum3(x, x, v, 1))), G.Nodes{x, v}
	})
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x, y, r := matrix(g, "x", 3, 4, randMat(rng, 3, 4)...), matrix(g, "y", 3, 4, randMat(rng, 3, 4)...), vec(g, "r", randMat(rng, 3, 1)...)
		return nonlinearCost(t, rng, must(RowScale2(x, y, r, 2))), G.Nodes{x, y, r}
	})
	if _, err := RowSum3(a, b, r, 1); err == nil {
		t.Fatal("RowSum3 with a vector: want a shape error")
	}
	if _, err := RowScale2(a, b, a, 1); err == nil {
		t.Fatal("RowScale2 with a matrix of scales: want a shape error")
	}
}

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
}
