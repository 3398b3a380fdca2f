package graph

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BroadcastTo against a direct index computation on every axis pattern of a 3-D shape.
func TestBroadcastToValues(t *testing.T) {
	out := tensor.Shape{3, 4, 5}
	for _, axes := range [][]int{{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}} {
		in := removeAxes(out, axes)
		rng := rand.New(rand.NewPCG(1, 1))
		x := randMat(rng, in.TotalSize(), 1)
		g := G.NewGraph()
		var xn *G.Node
		if in.IsScalar() {
			xn = G.NewScalar(g, G.Float64, G.WithName("x"), G.WithValue(x[0]))
		} else {
			xn = G.NewTensor(g, G.Float64, in.Dims(), G.WithShape(in...), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(in...), tensor.WithBacking(x))))
		}
		b := must(BroadcastTo(xn, out, axes))
		p := run(t, g, b)
		got, _ := p.Float64s(b)
		isAx := map[int]bool{}
		for _, a := range axes {
			isAx[a] = true
		}
		for i := 0; i < 3; i++ {
			for j := 0; j < 4; j++ {
				for k := 0; k < 5; k++ {
					xi := 0
					for d, v := range []int{i, j, k} {
						if !isAx[d] {
							xi = xi*out[d] + v
						}
					}
					if w := got[(i*4+j)*5+k]; w != x[xi] {
						t.Fatalf("axes %v: out[%d,%d,%d] = %v, want %v", axes, i, j, k, w, x[xi])
					}
				}
			}
		}
	}
}
