package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// composedCholGrad is the Cholesky adjoint as the package built it before
// cholGrad, from graph ops: sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹).
func composedCholGrad(l, gl *G.Node) *G.Node {
	p := must(TriMask(must(MatMul(l, gl, true, false)), true, 0.5))
	y := must(TriSolve(l, p, true, true))
	st := must(TriSolve(l, must(G.Transpose(y)), true, true))
	return must(Sym(st))
}

// The blocked reverse pass equals the composed formula at every size from
// one panel to several, with partial last panels, and panel widths from 1
// to wider than the matrix; the adjoint's upper triangle is ignored, as
// the factor's is structurally zero.
func TestCholGradMatchesComposed(t *testing.T) {
	defer func(b int) { cholRevBlock = b }(cholRevBlock)
	rng := rand.New(rand.NewPCG(21, 4))
	for _, n := range []int{1, 2, 3, 7, 16, 33, 64, 100, 151} {
		for _, nb := range []int{1, 5, 16, 48, 200} {
			cholRevBlock = nb
			g := G.NewGraph()
			A := matrix(g, "A", n, n, spd(rng, n)...)
			L := must(Cholesky(A))
			gl := matrix(g, "gL", n, n, randMat(rng, n, n)...)
			fused, composed := must(cholGrad(L, gl)), composedCholGrad(L, gl)
			p := run(t, g, fused, composed)
			a, _ := p.Float64s(fused)
			b, _ := p.Float64s(composed)
			var worst, scale float64
			for i := range a {
				worst = max(worst, math.Abs(a[i]-b[i]))
				scale = max(scale, math.Abs(b[i]))
			}
			if !(worst <= 1e-12*max(scale, 1)) {
				t.Errorf("n=%d block %d: max |fused − composed| %.3g (scale %.3g)", n, nb, worst, scale)
			}
			for i := 0; i < n; i++ {
				for j := 0; j < i; j++ {
					if a[i*n+j] != a[j*n+i] {
						t.Fatalf("n=%d block %d: result not symmetric at (%d,%d)", n, nb, i, j)
					}
				}
			}
		}
	}
}

// First and second derivatives through the factorisation, with panels
// narrow enough that the blocked path (several panels, a partial one) and
// the unblocked one both run.
func TestCholeskyGradBlocked(t *testing.T) {
	defer func(b int) { cholRevBlock = b }(cholRevBlock)
	for _, c := range []struct{ n, nb int }{{9, 4}, {11, 48}} {
		cholRevBlock = c.nb
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			A := matrix(g, "A", c.n, c.n, spd(rng, c.n)...)
			return nonlinearCost(t, rng, must(Cholesky(A))), G.Nodes{A}
		})
	}
}

// BenchmarkCholGrad times the fused reverse pass against the composed one
// at the factor sizes of the papers' steps (M = 100 and 300).
func BenchmarkCholGrad(b *testing.B) {
	for _, n := range []int{100, 300} {
		for _, fused := range []bool{true, false} {
			name := map[bool]string{true: "fused", false: "composed"}[fused]
			b.Run(fmt.Sprintf("n%d/%s", n, name), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				g := G.NewGraph()
				L := matrix(g, "L", n, n, tri(rng, n, true)...)
				gl := matrix(g, "gL", n, n, randMat(rng, n, n)...)
				out := composedCholGrad(L, gl)
				if fused {
					out = must(cholGrad(L, gl))
				}
				benchRun(b, g, out)
			})
		}
	}
}

// BenchmarkCholesky times the factorisation at the factor sizes of the
// papers' steps (M = 100 and 300).
func BenchmarkCholesky(b *testing.B) {
	for _, n := range []int{100, 300} {
		b.Run(fmt.Sprintf("n%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			g := G.NewGraph()
			out := must(Cholesky(matrix(g, "A", n, n, spd(rng, n)...)))
			benchRun(b, g, out)
		})
	}
}

// benchRun times running the compiled program of g that computes out.
func benchRun(b *testing.B, g *G.ExprGraph, out *G.Node) {
	p, err := Compile(g, out)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for b.Loop() {
		if err := p.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
