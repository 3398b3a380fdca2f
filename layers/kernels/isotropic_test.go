package kernels

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// The isotropic SE against its formula, and its gradients in ℓ, σ² and
// the inputs to second order.
func TestSEIsotropic(t *testing.T) {
	const n, m, d = 4, 3, 2
	xv := []float64{0.1, -0.4, 1.2, 0.3, -0.7, 0.9, 0.5, 0.5}
	zv := []float64{0, 0.2, -1, 1, 0.3, -0.6}
	k := NewSEIsotropic("iso", d, 1.7, 0.8, 0)
	g := G.NewGraph()
	s := layers.NewScope(g)
	x := graph.Input(g, "x", tensor.Shape{n, d}, xv)
	z := graph.Input(g, "z", tensor.Shape{m, d}, zv)
	kxz, err := k.K(s, x, z)
	if err != nil {
		t.Fatal(err)
	}
	w := graph.Input(g, "w", tensor.Shape{n, m}, []float64{1, -2, 0.5, 3, 0.25, -1, 2, 1, -0.5, 0.7, 1.5, -0.3})
	e := &graph.Chain{}
	cost := e.Do(G.Sum(e.Do(G.HadamardProd(e.Do(G.HadamardProd(kxz, kxz)), w))))
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	p, err := graph.Compile(g, kxz)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	got, _ := p.Float64s(kxz)
	for i := range n {
		for j := range m {
			var r2 float64
			for c := range d {
				u := xv[i*d+c] - zv[j*d+c]
				r2 += u * u
			}
			want := 0.8 * math.Exp(-0.5*r2/1.7)
			if math.Abs(got[i*m+j]-want) > 1e-14 {
				t.Errorf("K[%d,%d] = %v, want %v", i, j, got[i*m+j], want)
			}
		}
	}
	p.Close()
	ell, _ := s.Raw(k.Lengthscale)
	v, _ := s.Raw(k.Variance)
	for order, check := range []func(*G.Node, G.Nodes, graph.CheckOptions) (graph.CheckReport, error){graph.CheckGrad, graph.CheckGrad2} {
		r, err := check(cost, G.Nodes{ell, v, x}, graph.CheckOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !(r.MaxRelErr < 1e-7) {
			t.Errorf("order %d: %s", order+1, r.Worst())
		}
	}
}
