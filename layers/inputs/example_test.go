package inputs_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/variational"
)

// The first-order model's variance inflation (NIMGP_FO): with input-noise
// variance σ_x², the latent variance at x grows by Δ = (∂μ/∂x)²·σ_x², the
// gradient of the posterior mean taken inside the graph. Beside it, the same
// Δ from central differences of μ.
func ExampleInflated() {
	se := kernels.NewSE("se", 1, 1, 1, 0)
	cfg := variational.Config{Latent: 1, M: 3, D: 1, Whitened: true, Jitter: 1e-6}
	q, err := variational.New("q", cfg, []kernels.Kernel{se}, [][]float64{{-1, 0, 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := q.InitPrior(); err != nil {
		fmt.Println(err)
		return
	}
	copy(q.Mean[0].Data, []float64{1, -1, 0.5})

	g := G.NewGraph()
	s := layers.NewScope(g)
	post, err := q.Build(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	const x0, h, noiseVar = 0.3, 1e-5, 0.2
	at := func(name string, x float64) *G.Node {
		return G.NewMatrix(g, G.Float64, G.WithShape(1, 1), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{x}))))
	}
	noise := G.NewVector(g, G.Float64, G.WithShape(1), G.WithName("noise"),
		G.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{noiseVar}))))
	_, vInf, err := inputs.Inflated(post, at("x", x0), noise)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, v, err := post.Marginals(at("x'", x0))
	if err != nil {
		fmt.Println(err)
		return
	}
	muHi, _, err := post.Marginals(at("x+h", x0+h))
	if err != nil {
		fmt.Println(err)
		return
	}
	muLo, _, err := post.Marginals(at("x-h", x0-h))
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, err := graph.Compile(g, vInf, v, muHi, muLo)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Sync(); err != nil {
		fmt.Println(err)
		return
	}
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	vi, _ := prog.Float64s(vInf)
	v0, _ := prog.Float64s(v)
	hi, _ := prog.Float64s(muHi)
	lo, _ := prog.Float64s(muLo)
	d := (hi[0] - lo[0]) / (2 * h)
	fmt.Printf("Δ in the graph %.6f, by differences %.6f\n", vi[0]-v0[0], d*d*noiseVar)
	// Output:
	// Δ in the graph 0.010688, by differences 0.010688
}
