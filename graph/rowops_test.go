package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestRowSum3AndRowScale2(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var a, b, r *G.Node
	// Small, and large enough to be split across cores.
	for _, sz := range [][2]int{{3, 4}, {301, 257}} {
		n, d := sz[0], sz[1]
		av, bv, cv, rv := randMat(rng, n, d), randMat(rng, n, d), randMat(rng, n, d), randMat(rng, n, 1)
		g := G.NewGraph()
		var c *G.Node
		a, b, c = matrix(g, "a", n, d, av...), matrix(g, "b", n, d, bv...), matrix(g, "c", n, d, cv...)
		r = vec(g, "r", rv...)
		s := must(RowSum3(a, b, c, 1.5))
		p := must(RowScale2(a, b, r, -2))
		prog := run(t, g, s, p)
		sg, _ := prog.Float64s(s)
		pg, _ := prog.Float64s(p)
		for i := 0; i < n; i++ {
			var want float64
			for j := 0; j < d; j++ {
				k := d*i + j
				want += 1.5 * av[k] * bv[k] * cv[k]
				if w := -2 * av[k] * bv[k] * rv[i]; math.Abs(pg[k]-w) > 1e-14 {
					t.Fatalf("%dx%d: RowScale2[%d,%d] = %v, want %v", n, d, i, j, pg[k], w)
				}
			}
			if math.Abs(sg[i]-want) > 1e-12 {
				t.Fatalf("%dx%d: RowSum3[%d] = %v, want %v", n, d, i, sg[i], want)
			}
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
