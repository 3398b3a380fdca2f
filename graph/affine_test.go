package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// Affine is Σ_k x_k·W_k + 1bᵀ + r by definition, for one or several parts,
// with and without bias and residual.
func TestAffineValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	const n, q = 5, 3
	for _, c := range []struct {
		widths      []int
		bias, resid bool
	}{{[]int{4}, true, false}, {[]int{4, 2}, true, true}, {[]int{1, 3, 2}, false, true}, {[]int{2, 2}, false, false}} {
		g := G.NewGraph()
		var parts G.Nodes
		var xs [][]float64
		rows := 0
		for i, p := range c.widths {
			v := randMat(rng, n, p)
			xs = append(xs, v)
			parts = append(parts, matrix(g, "x"+string(rune('0'+i)), n, p, v...))
			rows += p
		}
		wv, bv, rv := randMat(rng, rows, q), randMat(rng, q, 1), randMat(rng, n, q)
		w := matrix(g, "W", rows, q, wv...)
		var b, r *G.Node
		if c.bias {
			b = vec(g, "b", bv...)
		}
		if c.resid {
			r = matrix(g, "r", n, q, rv...)
		}
		y := must(Affine(parts, w, b, r))
		p := run(t, g, y)
		if err := p.Run(); err != nil { // again, into last run's output buffer
			t.Fatal(err)
		}
		got, err := p.Float64s(y)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			for j := 0; j < q; j++ {
				var want float64
				if c.bias {
					want += bv[j]
				}
				if c.resid {
					want += rv[i*q+j]
				}
				off := 0
				for k, p := range c.widths {
					for l := 0; l < p; l++ {
						want += xs[k][i*p+l] * wv[(off+l)*q+j]
					}
					off += p
				}
				if math.Abs(got[i*q+j]-want) > 1e-13 {
					t.Fatalf("widths %v bias %v residual %v: y[%d,%d] = %v, want %v", c.widths, c.bias, c.resid, i, j, got[i*q+j], want)
				}
			}
		}
	}
	g := G.NewGraph()
	x, w := matrix(g, "x", 2, 3, randMat(rng, 2, 3)...), matrix(g, "W", 4, 2, randMat(rng, 4, 2)...)
	if _, err := Affine(G.Nodes{x}, w, nil, nil); err == nil {
		t.Fatal("3 input columns against 4 weight rows: want an error")
	}
	if _, err := Affine(G.Nodes{x, x}, matrix(g, "W6", 6, 2, randMat(rng, 6, 2)...), vec(g, "b3", 1, 2, 3), nil); err == nil {
		t.Fatal("a bias of the wrong length: want an error")
	}
}

// Gradients of every input, at first and second order (the second goes
// through the stacked-products op and its own adjoints).
func TestAffineGrad(t *testing.T) {
	for _, c := range []struct {
		widths      []int
		bias, resid bool
	}{{[]int{3}, true, true}, {[]int{3, 2}, true, false}, {[]int{1, 2, 2}, false, true}} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			const n, q = 4, 3
			var parts G.Nodes
			rows := 0
			for i, p := range c.widths {
				parts = append(parts, matrix(g, "x"+string(rune('0'+i)), n, p, randMat(rng, n, p)...))
				rows += p
			}
			w := matrix(g, "W", rows, q, randMat(rng, rows, q)...)
			params := append(append(G.Nodes(nil), parts...), w)
			var b, r *G.Node
			if c.bias {
				b = vec(g, "b", randMat(rng, q, 1)...)
				params = append(params, b)
			}
			if c.resid {
				r = matrix(g, "r", n, q, randMat(rng, n, q)...)
				params = append(params, r)
			}
			return nonlinearCost(t, rng, must(Affine(parts, w, b, r))), params
		})
	}
}
