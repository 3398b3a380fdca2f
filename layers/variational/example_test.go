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

// NIMGP_FO's first-order term for a dot-product kernel (here a degree-2
// polynomial on eight inputs) and input-noise variances V shared by the
// rows, in closed form: InflatedClassMarginals' variance minus
// ClassMarginals' is Δ = Σ_j V_j (∂μ/∂x_j)², printed beside the same sum
// with ∂μ/∂x_j from central differences of the mean.
func ExampleBuilt_InflatedClassMarginals() {
	const m, n, d = 2, 2, 8
	poly := kernels.NewPolynomial("poly", 2, d, 2, 1, 0)
	cfg := variational.Config{Latent: 1, M: m, D: d, Whitened: true, Jitter: 1e-6}
	z := []float64{1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, -1}
	q, err := variational.New("q", cfg, []kernels.Kernel{poly}, [][]float64{z})
	if err != nil {
		fmt.Println(err)
		return
	}
	copy(q.Mean[0].Data, []float64{1, -0.5})
	g := G.NewGraph()
	s := layers.NewScope(g)
	b, err := q.Build(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	xs := []float64{0.5, 0.1, -0.2, 0.3, 0, 0.4, -0.1, 0.2, -0.3, 0.2, 0.1, 0, 0.5, -0.4, 0.2, 0.1}
	x := graph.Input(g, "x", tensor.Shape{n, d}, xs)
	vars := []float64{0.1, 0.2, 0.1, 0.3, 0.1, 0.2, 0.1, 0.05}
	V := graph.Input(g, "V", tensor.Shape{d}, vars)
	mu, v, err := b.ClassMarginals(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, vi, ok, err := b.InflatedClassMarginals(x, V)
	if err != nil || !ok {
		fmt.Println(ok, err)
		return
	}
	prog, err := graph.Compile(g, mu[0], v[0], vi[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	run := func() (mean, plain, inflated []float64) {
		if err := s.Sync(); err != nil {
			fmt.Println(err)
		}
		if err := prog.Run(); err != nil {
			fmt.Println(err)
		}
		mean, _ = prog.Float64s(mu[0])
		plain, _ = prog.Float64s(v[0])
		inflated, _ = prog.Float64s(vi[0])
		return append([]float64(nil), mean...), append([]float64(nil), plain...), append([]float64(nil), inflated...)
	}
	_, plain, inflated := run()
	const h = 1e-5
	for i := range n {
		var fd float64
		for j := range d {
			xs[i*d+j] += h
			up, _, _ := run()
			xs[i*d+j] -= 2 * h
			down, _, _ := run()
			xs[i*d+j] += h
			slope := (up[i] - down[i]) / (2 * h)
			fd += vars[j] * slope * slope
		}
		fmt.Printf("row %d: Δ %.8f closed form, %.8f by differences\n", i, inflated[i]-plain[i], fd)
	}
	// Output:
	// row 0: Δ 0.09560680 closed form, 0.09560680 by differences
	// row 1: Δ 0.09266581 closed form, 0.09266581 by differences
}
