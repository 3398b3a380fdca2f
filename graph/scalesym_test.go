package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// ScaleSym is S ⊙ aaᵀ: the value and S's adjoint to the bit, a's adjoint
// within rounding (the sums run in another order), and its gradients match
// finite differences to second order.
func TestScaleSym(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 9
	g := G.NewGraph()
	s := matrix(g, "s", n, n, randMat(rng, n, n)...)
	a := vec(g, "a", randMat(rng, 1, n)...)
	w := matrix(g, "w", n, n, randMat(rng, n, n)...)
	fused := must(ScaleSym(s, a))
	chain := must(G.HadamardProd(s, must(Outer(a, a))))
	cf := must(G.Sum(must(G.HadamardProd(fused, w))))
	cc := must(G.Sum(must(G.HadamardProd(chain, w))))
	gf, err := Grad(cf, s, a)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := Grad(cc, s, a)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, fused, chain, gf[0], gc[0], gf[1], gc[1])
	for k, pair := range [][2]*G.Node{{fused, chain}, {gf[0], gc[0]}, {gf[1], gc[1]}} {
		x, _ := p.Float64s(pair[0])
		y, _ := p.Float64s(pair[1])
		for i := range y {
			exact := k < 2
			if (exact && math.Float64bits(x[i]) != math.Float64bits(y[i])) || math.Abs(x[i]-y[i]) > 1e-13*(1+math.Abs(y[i])) {
				t.Fatalf("pair %d [%d]: %v fused, %v composed", k, i, x[i], y[i])
			}
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		s := matrix(g, "s", 4, 4, randMat(rng, 4, 4)...)
		a := vec(g, "a", randMat(rng, 1, 4)...)
		return nonlinearCost(t, rng, must(ScaleSym(s, a))), G.Nodes{s, a}
	})
	if _, err := ScaleSym(w, must(G.Sum(a))); err == nil {
		t.Error("ScaleSym took a scalar for the vector")
	}
	if !knownSymmetric(must(ScaleSym(must(WeightedDot(s, s, a)), a))) || knownSymmetric(fused) {
		t.Error("ScaleSym's symmetry not read from its matrix argument")
	}
}
