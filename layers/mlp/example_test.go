package mlp_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/mlp"
)

// A network with one hidden layer of 4 ReLU units maps 5 points of dimension
// 3 to 2 outputs each.
func ExampleNew() {
	net, err := mlp.New("net", mlp.Config{In: 3, Out: 2, Hidden: []int{4}, Seed: 1})
	if err != nil {
		panic(err)
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	x := G.NewTensor(g, G.Float64, 2, G.WithShape(5, 3), G.WithName("x"),
		G.WithValue(graph.NewValue(tensor.Shape{5, 3}, make([]float64, 15))))
	y, err := net.Apply(s, x)
	if err != nil {
		panic(err)
	}
	prog, err := graph.Compile(g, y)
	if err != nil {
		panic(err)
	}
	defer prog.Close()
	if err := prog.Run(); err != nil {
		panic(err)
	}
	v, err := prog.Value(y)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(net.Params()), "parameters; output shape", v.Shape())
	// Output: 4 parameters; output shape (5, 2)
}
