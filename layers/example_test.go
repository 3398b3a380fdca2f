package layers_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// A positive parameter is stored as its logarithm (Exp), so an optimiser can
// move the storage freely; graphs see the positive value through the Scope,
// and gradients reach the storage through the transform: for the value
// σ² = 4 of f = 3σ², ∂f/∂(log σ²) = 3σ² = 12. After an update of the storage,
// Sync makes the next run see it.
func ExampleScope_Node() {
	p := layers.NewParam("variance", tensor.ScalarShape(), 4, layers.Exp)
	g := G.NewGraph()
	s := layers.NewScope(g)
	v, err := s.Node(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := G.Mul(v, G.NewConstant(3.0))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, raw := s.Trainable()
	grads, err := graph.Grad(f, raw...)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, err := graph.Compile(g, f, grads[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, storage := range []float64{p.Data[0], 0} {
		p.Data[0] = storage
		if err := s.Sync(); err != nil {
			fmt.Println(err)
			return
		}
		if err := prog.Run(); err != nil {
			fmt.Println(err)
			return
		}
		fv, _ := prog.Scalar(f)
		gv, _ := prog.Scalar(grads[0])
		fmt.Printf("storage %.6f: value %.6g, f %.6g, ∂f/∂storage %.6g\n", storage, p.Value(0), fv, gv)
	}
	// Output:
	// storage 1.386294: value 4, f 12, ∂f/∂storage 12
	// storage 0.000000: value 1, f 3, ∂f/∂storage 3
}
