package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// The fused column sum of squares is bit for bit Square then Sum over the
// rows, forward and back (the gradient of a weighted sum of it), and its
// gradients match finite differences to second order.
func TestColumnSumSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const m, n = 37, 23
	g := G.NewGraph()
	a := matrix(g, "a", m, n, randMat(rng, m, n)...)
	w := vec(g, "w", randMat(rng, 1, n)...)
	fused := must(ColumnSumSquares(a))
	chain := must(G.Sum(must(Square(a)), 0))
	cf := must(G.Sum(must(G.HadamardProd(fused, w))))
	cc := must(G.Sum(must(G.HadamardProd(chain, w))))
	gf, err := Grad(cf, a)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := Grad(cc, a)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, fused, chain, gf[0], gc[0])
	for _, pair := range [][2]*G.Node{{fused, chain}, {gf[0], gc[0]}} {
		x, _ := p.Float64s(pair[0])
		y, _ := p.Float64s(pair[1])
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				t.Fatalf("%v[%d] = %v, the chain gives %v", pair[0].Name(), i, x[i], y[i])
			}
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a := matrix(g, "a", 4, 3, randMat(rng, 4, 3)...)
		return nonlinearCost(t, rng, must(ColumnSumSquares(a))), G.Nodes{a}
	})
}
