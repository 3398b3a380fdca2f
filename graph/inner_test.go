package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// Inner is Σ a ⊙ b (to rounding: it sums in another order than a plain
// loop), for lengths that leave every remainder of its groups of four, and
// its gradients match finite differences to second order.
func TestInner(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{1, 3, 4, 7, 301} {
		av, bv := randMat(rng, n, 1), randMat(rng, n, 1)
		g := G.NewGraph()
		y := must(Inner(vec(g, "a", av...), vec(g, "b", bv...)))
		p := run(t, g, y)
		got, _ := p.Float64s(y)
		var want, abs float64
		for i := range av {
			want += av[i] * bv[i]
			abs += math.Abs(av[i] * bv[i])
		}
		if math.Abs(got[0]-want) > 1e-14*abs {
			t.Fatalf("n = %d: Σ a⊙b = %v, a loop gives %v", n, got[0], want)
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, b := matrix(g, "a", 3, 5, randMat(rng, 3, 5)...), matrix(g, "b", 3, 5, randMat(rng, 3, 5)...)
		return nonlinearCost(t, rng, must(Inner(a, b))), G.Nodes{a, b}
	})
	if _, err := Inner(vec(G.NewGraph(), "a", 1, 2), vec(G.NewGraph(), "b", 1, 2, 3)); err == nil {
		t.Fatal("a 2- and a 3-vector were accepted")
	}
}
