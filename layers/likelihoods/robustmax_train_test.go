package likelihoods

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// The training op (one Rows node with its own reverse pass) gives the graph
// form's argmax probabilities and the graph form's gradients with respect to
// the means and variances: for 2 to 10 classes, the adaptive rule with 0 to
// 3 Newton steps and the plain rule, and variances spread up to 50-fold
// (steep integrands, where the Newton steps move the nodes most).
func TestRobustMaxTrainRowsMatchGraph(t *testing.T) {
	for _, c := range []int{2, 3, 5, 10} {
		for _, cfg := range []struct {
			plain  bool
			newton int
			ratio  float64
		}{{false, 0, 2}, {false, 2, 2}, {false, 3, 50}, {true, 0, 2}, {false, 2, 50}} {
			const n = 30
			l := &RobustMax{Epsilon: 1e-3, Points: 20, Plain: cfg.plain, Newton: cfg.newton}
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			mu, v := spreadMarginals(rng, n, c, cfg.ratio)
			labels := make([]int, n)
			for i := range labels {
				labels[i] = rng.IntN(c)
			}
			w := make([]float64, n)
			for i := range w {
				w[i] = rng.NormFloat64()
			}
			var vals, grads [2][]float64
			for form := range 2 {
				g := G.NewGraph()
				muV := G.NewMatrix(g, G.Float64, G.WithShape(n, c), G.WithName("muv"), G.WithValue(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(append([]float64(nil), mu...)))))
				vV := G.NewMatrix(g, G.Float64, G.WithShape(n, c), G.WithName("vv"), G.WithValue(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(append([]float64(nil), v...)))))
				y := constant(g, "y", tensor.Shape{n, c}, oneHot(labels, c))
				var p *G.Node
				var err error
				if form == 0 {
					p, err = l.argmaxProb(nil, muV, vV, y, -1)
				} else {
					p, err = l.argmaxProbGraph(layers.NewScope(g), muV, vV, y, -1)
				}
				if err != nil {
					t.Fatal(err)
				}
				wp, err := G.HadamardProd(p, constant(g, "w", tensor.Shape{n}, w))
				if err != nil {
					t.Fatal(err)
				}
				cost, err := G.Sum(wp)
				if err != nil {
					t.Fatal(err)
				}
				gs, err := graph.Grad(cost, muV, vV)
				if err != nil {
					t.Fatal(err)
				}
				out := eval(t, g, p, gs[0], gs[1])
				vals[form] = out[0]
				grads[form] = append(append([]float64(nil), out[1]...), out[2]...)
			}
			for i := range vals[0] {
				if d := math.Abs(vals[0][i] - vals[1][i]); !(d <= 1e-12*math.Abs(vals[1][i])+1e-300) {
					t.Fatalf("C=%d %+v row %d: op %v, graph %v", c, cfg, i, vals[0][i], vals[1][i])
				}
			}
			for i := range grads[0] {
				if d := math.Abs(grads[0][i] - grads[1][i]); !(d <= 1e-10*math.Abs(grads[1][i])+1e-14) {
					t.Fatalf("C=%d %+v gradient %d: op %v, graph %v", c, cfg, i, grads[0][i], grads[1][i])
				}
			}
		}
	}
}
