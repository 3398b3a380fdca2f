package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// A factor's gradient contributions (triangles of products with k > 1 and
// k = 1, scales 1 and −1, a diagonal matrix) merge into one op whose value
// is their sum, whatever else is beside them; its gradients pass the
// finite-difference checks at both orders.
func TestSumOfTriangles(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	for _, m := range []int{4, 37, 300} {
		for _, lower := range []bool{true, false} {
			g := G.NewGraph()
			u1, v1 := matrix(g, "u1", m, 7, randMat(rng, m, 7)...), matrix(g, "v1", m, 7, randMat(rng, m, 7)...)
			u2, v2 := matrix(g, "u2", m, 3, randMat(rng, m, 3)...), matrix(g, "v2", m, 3, randMat(rng, m, 3)...)
			u3, v3 := matrix(g, "u3", m, 1, randMat(rng, m, 1)...), matrix(g, "v3", m, 1, randMat(rng, m, 1)...)
			u4, v4 := matrix(g, "u4", m, 1, randMat(rng, m, 1)...), matrix(g, "v4", m, 1, randMat(rng, m, 1)...)
			d := vec(g, "d", randMat(rng, m, 1)...)
			x := matrix(g, "x", m, m, randMat(rng, m, m)...)
			parts := G.Nodes{
				must(TriProd(u1, v1, lower)), must(triProdScaled(u2, v2, lower, -1)),
				must(triProdScaled(u3, v3, lower, -1)), must(triProdScaled(u4, v4, lower, 1)),
				must(DiagMatrix(d)),
			}
			merged, err := sumOfTriangles(append(G.Nodes{x}, parts...))
			if err != nil {
				t.Fatal(err)
			}
			if len(merged) != 2 || merged[1] != x {
				t.Fatalf("m=%d: merged into %d nodes, want the sum and x", m, len(merged))
			}
			want := must(AddN(parts...))
			p := run(t, g, merged[0], want)
			got, _ := p.Float64s(merged[0])
			w, _ := p.Float64s(want)
			for i := range w {
				if math.Abs(got[i]-w[i]) > 1e-12*(1+math.Abs(w[i])) || (w[i] == 0 && got[i] != 0) {
					t.Fatalf("m=%d lower=%v: entry (%d,%d) = %v, want %v", m, lower, i/m, i%m, got[i], w[i])
				}
			}
		}
	}
	for _, lower := range []bool{true, false} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			u1, v1 := matrix(g, "u1", 4, 3, randMat(rng, 4, 3)...), matrix(g, "v1", 4, 3, randMat(rng, 4, 3)...)
			u2, v2 := matrix(g, "u2", 4, 1, randMat(rng, 4, 1)...), matrix(g, "v2", 4, 1, randMat(rng, 4, 1)...)
			d := vec(g, "d", randMat(rng, 4, 1)...)
			ns := mustNodes(sumOfTriangles(G.Nodes{must(TriProd(u1, v1, lower)), must(triProdScaled(u2, v2, lower, -1)), must(DiagMatrix(d))}))
			return nonlinearCost(t, rng, ns[0]), G.Nodes{u1, v1, u2, v2, d}
		})
	}
}
