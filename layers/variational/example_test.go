package variational_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/variational"
)

// A sparse posterior q(u) at its starting point, the prior: the KL term is
// zero and the marginals at any input are the prior's, mean 0 and variance
// k(x, x) = σ² (plus the white noise and jitter the papers add to every
// marginal variance, zero and 1e-6 here). Then a mean of 1 for every
// (whitened) inducing value moves the KL to ½·Σ m² = 1.5 and the mean near
// the inducing inputs (far from them, at x = 5, it stays near the prior's 0);
// the variances depend on q(u)'s covariance alone and do not move.
func ExampleNew() {
	se := kernels.NewSE("se", 1, 1, 2, 0)
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
	g := G.NewGraph()
	s := layers.NewScope(g)
	b, err := q.Build(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	x := G.NewMatrix(g, G.Float64, G.WithShape(2, 1), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{0.3, 5}))))
	mu, v, err := b.Marginals(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, err := graph.Compile(g, b.KL, mu, v)
	if err != nil {
		fmt.Println(err)
		return
	}
	show := func() {
		if err := s.Sync(); err != nil {
			fmt.Println(err)
			return
		}
		if err := prog.Run(); err != nil {
			fmt.Println(err)
			return
		}
		kl, _ := prog.Scalar(b.KL)
		m, _ := prog.Float64s(mu)
		vv, _ := prog.Float64s(v)
		fmt.Printf("KL %.6f, means [%.6f %.6f], variances [%.6f %.6f]\n", kl, m[0], m[1], vv[0], vv[1])
	}
	show()
	q.Mean[0].Fill(1)
	show()
	// Output:
	// KL 0.000000, means [0.000000 0.000000], variances [2.000001 2.000001]
	// KL 1.500000, means [2.126830 0.000642], variances [2.000001 2.000001]
}
