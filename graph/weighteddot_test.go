package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

func vector(g *G.ExprGraph, name string, v []float64) *G.Node {
	return Input(g, name, []int{len(v)}, v)
}

// positive returns n weights in [0.5, 1.5).
func positive(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 0.5 + rng.Float64()
	}
	return v
}

// The cross product equals ScaleColumns then MatMul to the last bit where
// MatMul uses the packed kernel too (below gemm's smallMin gonum's loops sum
// in another order, and so do gonum's and OpenBLAS's products in the purego
// and openblas builds), and the Gram matrix the Gram of z ⊙ √w within
// rounding, symmetric exactly.
func TestWeightedDotMatchesComposed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, s := range [][3]int{{200, 100, 784}, {7, 5, 3}, {1, 9, 20}} {
		m, n, d := s[0], s[1], s[2]
		g := G.NewGraph()
		x := matrix(g, "x", m, d, randMat(rng, m, d)...)
		z := matrix(g, "z", n, d, randMat(rng, n, d)...)
		w := vector(g, "w", positive(rng, d))
		fused := must(WeightedDot(x, z, w))
		composed := must(MatMul(x, must(ScaleColumns(z, w)), false, true))
		gram := must(WeightedDot(z, z, w))
		zs := must(ScaleColumns(z, must(G.Sqrt(w))))
		gramComposed := must(MatMul(zs, zs, false, true))
		p := run(t, g, fused, composed, gram, gramComposed)
		a, _ := p.Float64s(fused)
		b, _ := p.Float64s(composed)
		if m*n*d >= 1<<16 && fusedSums && gemm.KernelName != "go" && !slices.Equal(a, b) {
			t.Errorf("%d×%d×%d: WeightedDot differs from ScaleColumns+MatMul", m, n, d)
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-13*(1+math.Abs(b[i])) {
				t.Fatalf("%d×%d×%d: element %d %v, composed %v", m, n, d, i, a[i], b[i])
			}
		}
		a, _ = p.Float64s(gram)
		b, _ = p.Float64s(gramComposed)
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12*(1+math.Abs(b[i])) {
				t.Fatalf("%d×%d Gram: element %d %v, composed %v", n, d, i, a[i], b[i])
			}
		}
		for i := 0; i < n; i++ {
			for j := 0; j < i; j++ {
				if a[i*n+j] != a[j*n+i] {
					t.Fatalf("Gram not symmetric at (%d,%d)", i, j)
				}
			}
		}
	}
}

// Both sides of the reverse pass: the weighted copy on x's side (x the
// shorter) and on z's.
func TestWeightedDotGrad(t *testing.T) {
	for _, rows := range [][2]int{{5, 4}, {3, 5}, {4, 4}} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			x := matrix(g, "x", rows[0], 3, randMat(rng, rows[0], 3)...)
			z := matrix(g, "z", rows[1], 3, randMat(rng, rows[1], 3)...)
			w := vector(g, "w", positive(rng, 3))
			return nonlinearCost(t, rng, must(WeightedDot(x, z, w))), G.Nodes{x, z, w}
		})
	}
}

func TestWeightedGramGrad(t *testing.T) {
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		z := matrix(g, "z", 4, 3, randMat(rng, 4, 3)...)
		w := vector(g, "w", positive(rng, 3))
		return nonlinearCost(t, rng, must(WeightedDot(z, z, w))), G.Nodes{z, w}
	})
}
