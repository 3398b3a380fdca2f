package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// QuadForm equals the composed colsum(K ⊙ AK), forward and back, for an A
// that is not symmetric (whose adjoint K̄ needs A + Aᵀ), and its
// gradients match finite differences to second order, in A, in K and
// through a K shared with A's construction.
func TestQuadForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const m, n = 13, 29
	g := G.NewGraph()
	a := matrix(g, "a", m, m, randMat(rng, m, m)...)
	k := matrix(g, "k", m, n, randMat(rng, m, n)...)
	w := vec(g, "w", randMat(rng, 1, n)...)
	fused := must(QuadForm(a, k))
	chain := must(G.Sum(must(G.HadamardProd(k, must(MatMul(a, k, false, false)))), 0))
	cf := must(G.Sum(must(G.HadamardProd(fused, w))))
	cc := must(G.Sum(must(G.HadamardProd(chain, w))))
	gf, err := Grad(cf, a, k)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := Grad(cc, a, k)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, fused, chain, gf[0], gc[0], gf[1], gc[1])
	for _, pair := range [][2]*G.Node{{fused, chain}, {gf[0], gc[0]}, {gf[1], gc[1]}} {
		x, _ := p.Float64s(pair[0])
		y, _ := p.Float64s(pair[1])
		if len(x) != len(y) {
			t.Fatalf("%v has %d values, the chain %d", pair[0].Op(), len(x), len(y))
		}
		for i := range x {
			if math.Abs(x[i]-y[i]) > 1e-12*(1+math.Abs(y[i])) {
				t.Fatalf("%v[%d] = %v, the chain gives %v", pair[0].Op(), i, x[i], y[i])
			}
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a := matrix(g, "a", 4, 4, randMat(rng, 4, 4)...)
		k := matrix(g, "k", 4, 3, randMat(rng, 4, 3)...)
		return nonlinearCost(t, rng, must(QuadForm(a, k))), G.Nodes{a, k}
	})
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		// A = K Kᵀ ⊙ B: K reaches the form both ways, as NIMGP_FO's
		// inducing inputs do through the Gram matrix.
		b := matrix(g, "b", 3, 3, randMat(rng, 3, 3)...)
		k := matrix(g, "k", 3, 5, randMat(rng, 3, 5)...)
		a := must(G.HadamardProd(must(MatMul(k, k, false, true)), b))
		return nonlinearCost(t, rng, must(QuadForm(a, k))), G.Nodes{b, k}
	})
}

// QuadForm rejects shapes that do not fit, naming them.
func TestQuadFormShapes(t *testing.T) {
	g := G.NewGraph()
	for _, c := range [][4]int{{3, 4, 3, 5}, {3, 3, 4, 5}} {
		a := matrix(g, "a", c[0], c[1], make([]float64, c[0]*c[1])...)
		k := matrix(g, "k", c[2], c[3], make([]float64, c[2]*c[3])...)
		if _, err := QuadForm(a, k); err == nil {
			t.Errorf("QuadForm of %dx%d and %dx%d: no error", c[0], c[1], c[2], c[3])
		}
	}
}
