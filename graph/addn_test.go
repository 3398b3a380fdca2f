package graph

import (
	"math/rand/v2"
	"slices"
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

// A gradient that sums one outer product with other contributions is one
// AddOuter op: its values are, to the last bit, the AddN of the product
// and the others it replaced, and its gradients pass the
// finite-difference checks at both orders.
func TestAddOuter(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			m, n := 5, 7
			if ta && tb {
				m, n = 300, 1024 // in chunks on more than one core
			}
			av, bv := randMat(rng, m, 1), randMat(rng, n, 1)
			x1, x2 := randMat(rng, m, n), randMat(rng, m, n)
			g := G.NewGraph()
			A, B := matrix(g, "a", m, 1, av...), matrix(g, "b", n, 1, bv...)
			if ta {
				A = matrix(g, "a", 1, m, av...)
			}
			if !tb {
				B = matrix(g, "b", 1, n, bv...)
			}
			X1, X2 := matrix(g, "X1", m, n, x1...), matrix(g, "X2", m, n, x2...)
			P := must(MatMul(A, B, ta, tb))
			fused := must(addOuter(G.Nodes{X1, X2}, P))
			plain := must(AddN(X1, X2, P))
			p := run(t, g, fused, plain)
			f, _ := p.Float64s(fused)
			w, _ := p.Float64s(plain)
			if !slices.Equal(f, w) {
				t.Fatalf("ta=%v tb=%v: AddOuter differs from AddN", ta, tb)
			}
			m, n = 5, 7
			checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
				A, B := matrix(g, "a", m, 1, randMat(rng, m, 1)...), matrix(g, "b", n, 1, randMat(rng, n, 1)...)
				if ta {
					A = matrix(g, "a", 1, m, randMat(rng, m, 1)...)
				}
				if !tb {
					B = matrix(g, "b", 1, n, randMat(rng, n, 1)...)
				}
				X := matrix(g, "X", m, n, randMat(rng, m, n)...)
				return nonlinearCost(t, rng, must(addOuter(G.Nodes{X}, must(MatMul(A, B, ta, tb))))), G.Nodes{A, B, X}
			})
		}
	}
}
