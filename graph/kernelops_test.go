package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestSqDist(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	xv, zv := randMat(rng, 3, 2), randMat(rng, 4, 2)
	g := G.NewGraph()
	D := must(SqDist(matrix(g, "X", 3, 2, xv...), matrix(g, "Z", 4, 2, zv...)))
	p := run(t, g, D)
	d, _ := p.Float64s(D)
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			want := math.Pow(xv[2*i]-zv[2*j], 2) + math.Pow(xv[2*i+1]-zv[2*j+1], 2)
			if math.Abs(d[4*i+j]-want) > 1e-12 {
				t.Fatalf("D[%d,%d] = %v, want %v", i, j, d[4*i+j], want)
			}
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		X, Z := matrix(g, "X", 3, 2, randMat(rng, 3, 2)...), matrix(g, "Z", 4, 2, randMat(rng, 4, 2)...)
		return nonlinearCost(t, rng, must(SqDist(X, Z))), G.Nodes{X, Z}
	})
	// The same node on both sides, as in K(Z, Z): the unary op.
	if op := must(SqDist(g.ByName("X")[0], g.ByName("X")[0])).Op(); fmt.Sprintf("%T", op) != "graph.sqDistSelfOp" {
		t.Fatalf("SqDist(X, X) built %T, want sqDistSelfOp", op)
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		Z := matrix(g, "Z", 4, 2, randMat(rng, 4, 2)...)
		return nonlinearCost(t, rng, must(SqDist(Z, Z))), G.Nodes{Z}
	})
}

func TestIntPow(t *testing.T) {
	g := G.NewGraph()
	x := vec(g, "x", -1.5, 0.5, 2)
	y := must(IntPow(x, 9))
	p := run(t, g, y)
	got, _ := p.Float64s(y)
	for i, v := range []float64{-1.5, 0.5, 2} {
		if math.Abs(got[i]-math.Pow(v, 9)) > 1e-12*math.Abs(math.Pow(v, 9)) {
			t.Fatalf("%v^9 = %v", v, got[i])
		}
	}
	for _, pw := range []int{0, 1, 2, 3, 9} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			x := vec(g, "x", 0.3, -0.7, 0.9)
			return nonlinearCost(t, rng, must(IntPow(x, pw))), G.Nodes{x}
		})
	}
}

// The blocked kernel gives the per-element binary exponentiation's values
// bit for bit, over block edges, and its gradient form p·x^(p−1)·g those of
// the power, the product and the scaling it replaced.
func TestIntPowKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	x, g := randMat(rng, 1, 200), randMat(rng, 1, 200)
	out := make([]float64, len(x))
	for p := 0; p <= 12; p++ {
		for _, n := range []int{0, 1, 63, 64, 65, 200} {
			intPow(out[:n], x[:n], nil, p, 1)
			for i, v := range x[:n] {
				r, b, e := 1.0, v, p
				for e > 0 {
					if e&1 == 1 {
						r *= b
					}
					b *= b
					e >>= 1
				}
				if math.Float64bits(out[i]) != math.Float64bits(r) {
					t.Fatalf("p=%d n=%d: %v^p = %v, per element %v", p, n, v, out[i], r)
				}
			}
			if p == 0 {
				continue
			}
			intPow(out[:n], x[:n], g[:n], p-1, float64(p))
			for i, v := range x[:n] {
				want := math.Pow(v, float64(p-1))
				if p-1 == 0 {
					want = 1
				}
				want = want * g[i] * float64(p)
				if math.Abs(out[i]-want) > 1e-13*math.Abs(want) {
					t.Fatalf("p=%d: gradient %v, want %v", p, out[i], want)
				}
			}
		}
	}
}
