package likelihoods_test

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// constant makes an input node of the given shape (a vector when c is 0).
func constant(g *G.ExprGraph, name string, r, c int, v ...float64) *G.Node {
	if c == 0 {
		return G.NewVector(g, G.Float64, G.WithShape(r), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(r), tensor.WithBacking(v))))
	}
	return G.NewMatrix(g, G.Float64, G.WithShape(r, c), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(v))))
}

// run compiles and runs the graph of s and returns the values of out.
func run(s *layers.Scope, out *G.Node) ([]float64, error) {
	prog, err := graph.Compile(s.G, out)
	if err != nil {
		return nil, err
	}
	if err := s.Sync(); err != nil {
		return nil, err
	}
	if err := prog.Run(); err != nil {
		return nil, err
	}
	return prog.Float64s(out)
}

// GPC-II's binary data term (Liu et al. 2019, eq. 8) as graph code, beside
// its closed form log((1−δ)/δ)·Φ(yμ/√(a+ν)) + log δ with a = 1: the labels
// 1 and 0 become y = +1 and −1 through Targets.
func ExampleNewAdditive() {
	const a, delta = 1, 1e-3
	lik := likelihoods.NewAdditive("gpc2", a, delta)
	labels := []int{1, 0}
	mu, v := []float64{1, -0.5}, []float64{0.5, 2}
	targets, width := lik.Targets(labels, 2)

	g := G.NewGraph()
	s := layers.NewScope(g)
	ell, err := lik.ExpectedLogLik(s,
		constant(g, "mu", 2, 1, mu...), constant(g, "v", 2, 1, v...),
		constant(g, "y", 2, width, targets...))
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := run(s, ell)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range labels {
		phi := 0.5 * math.Erfc(-targets[i]*mu[i]/math.Sqrt(a+v[i])/math.Sqrt2)
		closed := math.Log((1-delta)/delta)*phi + math.Log(delta)
		fmt.Printf("y=%+g: %.6f (closed form %.6f)\n", targets[i], got[i], closed)
	}
	// Output:
	// y=+1: -1.431445 (closed form -1.431445)
	// y=-1: -2.669874 (closed form -2.669874)
}

// The Gauss–Hermite rule integrates against e^{−t²}; with f = √2·t and the
// weights over √π it gives expectations under N(0, 1), exactly for
// polynomials of degree below twice the number of points.
func ExampleHermite() {
	t, w := likelihoods.Hermite(20)
	var m2, m4 float64
	for i := range t {
		f := math.Sqrt2 * t[i]
		m2 += w[i] / math.Sqrt(math.Pi) * f * f
		m4 += w[i] / math.Sqrt(math.Pi) * f * f * f * f
	}
	fmt.Printf("E[f²] = %.12f, E[f⁴] = %.12f\n", m2, m4)
	// Output: E[f²] = 1.000000000000, E[f⁴] = 3.000000000000
}

// Expect1D is how a user-written likelihood takes a one-dimensional Gaussian
// expectation inside the graph: here E[exp(f)] for f ~ N(μ, ν), whose closed
// form is exp(μ + ν/2) (a Poisson likelihood's term, for instance).
func ExampleExpect1D() {
	g := G.NewGraph()
	s := layers.NewScope(g)
	mu := constant(g, "mu", 2, 0, 0, 1)
	v := constant(g, "v", 2, 0, 1, 0.25)
	e, err := likelihoods.Expect1D(g, mu, v, 20, func(f *G.Node) (*G.Node, error) { return G.Exp(f) })
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := run(s, e)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("[%.8f %.8f] closed form [%.8f %.8f]\n", got[0], got[1], math.Exp(0.5), math.Exp(1.125))
	// Output: [1.64872127 3.08021685] closed form [1.64872127 3.08021685]
}

// The Monte Carlo softmax on draws the caller supplies (an engine passes
// fresh ones at every step): the estimate is the mean of log softmax_y at
// μ + √ν∘ε_k over the draws, here two of them beside the same two terms
// computed directly.
func ExampleSoftmax_ExpectedLogLikDraws() {
	lik := &likelihoods.Softmax{Samples: 2}
	g := G.NewGraph()
	s := layers.NewScope(g)
	mu, v := []float64{1, -1}, []float64{0.25, 1}
	eps := []float64{1, -0.5, -1, 0.5} // draw k of the row in columns 2k, 2k+1
	targets, _ := lik.Targets([]int{0}, 2)
	ell, err := lik.ExpectedLogLikDraws(s, constant(g, "mu", 1, 2, mu...), constant(g, "v", 1, 2, v...),
		constant(g, "y", 1, 2, targets...), constant(g, "eps", 1, 4, eps...))
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := run(s, ell)
	if err != nil {
		fmt.Println(err)
		return
	}
	logSoftmax0 := func(f0, f1 float64) float64 { return -math.Log1p(math.Exp(f1 - f0)) }
	direct := 0.0
	for k := 0; k < 2; k++ {
		f0 := mu[0] + math.Sqrt(v[0])*eps[2*k]
		f1 := mu[1] + math.Sqrt(v[1])*eps[2*k+1]
		direct += logSoftmax0(f0, f1) / 2
	}
	fmt.Printf("estimate %.6f, direct %.6f, draw width for 2 classes: %d\n", got[0], direct, lik.DrawWidth(2))
	// Output: estimate -0.180925, direct -0.180925, draw width for 2 classes: 4
}
