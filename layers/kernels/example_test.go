package kernels_test

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
)

// matrix makes a constant r×c input node.
func matrix(g *G.ExprGraph, name string, r, c int, v ...float64) *G.Node {
	return G.NewMatrix(g, G.Float64, G.WithShape(r, c), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(v))))
}

// run compiles the graph of s, runs it with the parameters' current values
// and returns the values of out.
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

// Evaluating a kernel outside any model: the squared-exponential kernel's
// cross-covariance between two inputs and one, beside its closed form. The
// length-scale parameter ℓ divides squared differences (the papers' ℓ is a
// squared length-scale), so k(x, z) = σ² exp(−‖x−z‖²/(2ℓ)).
func ExampleNewSE() {
	g := G.NewGraph()
	s := layers.NewScope(g)
	k := kernels.NewSE("se", 2, 0.5, 2, 0)
	x := matrix(g, "x", 2, 2, 0, 0, 1, 1)
	z := matrix(g, "z", 1, 2, 0, 1)
	kxz, err := k.K(s, x, z)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := run(s, kxz)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("K(x, z) = [%.6f %.6f]\n", v[0], v[1])
	fmt.Printf("closed form: %.6f (both rows are at squared distance 1)\n", 2*math.Exp(-1/(2*0.5)))
	// Output:
	// K(x, z) = [0.735759 0.735759]
	// closed form: 0.735759 (both rows are at squared distance 1)
}

// Table V's kernel of the additive-noise paper, Matérn-5/2 + RBF, is a Sum of
// two kernels, each with its own parameters; its value is the sum of the
// parts' and its parameters are theirs, in order.
func ExampleSum() {
	g := G.NewGraph()
	s := layers.NewScope(g)
	m52, err := kernels.NewMatern("m52", 2.5, 1, 1, 1, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	k := kernels.Sum{m52, kernels.NewSE("rbf", 1, 1, 0.5, 0)}
	x := matrix(g, "x", 1, 1, 0)
	z := matrix(g, "z", 3, 1, 0, 1, 2)
	kxz, err := k.K(s, x, z)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := run(s, kxz)
	if err != nil {
		fmt.Println(err)
		return
	}
	for j, r := range []float64{0, 1, 2} {
		closed := (1+math.Sqrt(5)*r+5*r*r/3)*math.Exp(-math.Sqrt(5)*r) + 0.5*math.Exp(-r*r/2)
		fmt.Printf("r = %g: %.6f (closed form %.6f)\n", r, v[j], closed)
	}
	fmt.Println(len(k.Params()), "parameters")
	// Output:
	// r = 0: 1.500000 (closed form 1.500000)
	// r = 1: 0.827259 (closed form 0.827259)
	// r = 2: 0.206328 (closed form 0.206328)
	// 4 parameters
}

// K(Z, Z) as the sparse posteriors use it: the kernel plus its white noise σ₀²
// and a jitter on the diagonal. The jitter is a node of its own, so that a
// training loop can raise it after a failed Cholesky factorisation without
// rebuilding the graph.
func ExampleKZZ() {
	g := G.NewGraph()
	s := layers.NewScope(g)
	k := kernels.NewSE("se", 1, 1, 1, 0.01)
	jitter := kernels.Jitter("jitter", 1e-3)
	jn, err := s.Node(jitter)
	if err != nil {
		fmt.Println(err)
		return
	}
	z := matrix(g, "z", 2, 1, 0, 3)
	kzz, err := kernels.KZZ(k, s, z, jn)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := run(s, kzz)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("[%.4f %.4f; %.4f %.4f]\n", v[0], v[1], v[2], v[3])
	// Output: [1.0110 0.0111; 0.0111 1.0110]
}
