package graph

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// A node entering several PowAffines of one factor gets their adjoints as
// one PowSum (no AddN, one power pass), with gradients that match finite
// differences at orders 1 and 2: κ(q) and κ'(q) of a polynomial kernel,
// as NIMGP_FO builds them, and powers two and more apart.
func TestPowSum(t *testing.T) {
	for _, powers := range [][]int{{9, 8}, {3, 6, 4}} {
		build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			qs := randMat(rng, 3, 4)
			for i := range qs {
				qs[i] *= 0.3 // (q + ½)^9 of order one, where differences are accurate
			}
			q := matrix(g, "q", 3, 4, qs...)
			v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(0.7))
			var c *G.Node
			for i, p := range powers {
				y := must(PowAffineScaled(q, v, 0.5, p, float64(1+i)))
				term := nonlinearCost(t, rng, y)
				if c == nil {
					c = term
				} else {
					c = must(G.Add(c, term))
				}
			}
			return c, G.Nodes{q, v}
		}
		g := G.NewGraph()
		cost, params := build(g, rand.New(rand.NewPCG(71, 72)))
		gr, err := Grad(cost, params...)
		if err != nil {
			t.Fatal(err)
		}
		op, ok := gr[0].Op().(powSumOp)
		if !ok || len(op.terms) != len(powers) {
			t.Fatalf("powers %v: ∂cost/∂q is %v, want one PowSum", powers, gr[0].Op())
		}
		checkBoth(t, build)
	}
}
