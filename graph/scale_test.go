package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// ScaleColumns is x·diag(v), and its gradients check out at both orders,
// with x also reaching the cost by another path.
func TestScaleColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(111, 112))
	xv, vv := randMat(rng, 3, 4), randMat(rng, 4, 1)
	g := G.NewGraph()
	y := must(ScaleColumns(matrix(g, "x", 3, 4, xv...), vec(g, "v", vv...)))
	got, err := run(t, g, y).Float64s(y)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			if want := xv[4*i+j] * vv[j]; math.Abs(got[4*i+j]-want) > 1e-15 {
				t.Fatalf("y[%d,%d] = %v, want %v", i, j, got[4*i+j], want)
			}
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x, v := matrix(g, "x", 3, 4, randMat(rng, 3, 4)...), vec(g, "v", randMat(rng, 4, 1)...)
		y := must(ScaleColumns(x, v))
		k := must(MatMul(y, y, false, true))
		return must(G.Add(nonlinearCost(t, rng, k), nonlinearCost(t, rng, x))), G.Nodes{x, v}
	})
}

// Square is x ⊙ x, with derivatives checked at both orders.
func TestSquare(t *testing.T) {
	rng := rand.New(rand.NewPCG(113, 114))
	xv := randMat(rng, 3, 4)
	g := G.NewGraph()
	y := must(Square(matrix(g, "x", 3, 4, xv...)))
	got, err := run(t, g, y).Float64s(y)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range xv {
		if got[i] != v*v {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], v*v)
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x := matrix(g, "x", 3, 4, randMat(rng, 3, 4)...)
		return must(G.Add(nonlinearCost(t, rng, must(Square(x))), nonlinearCost(t, rng, x))), G.Nodes{x}
	})
}
