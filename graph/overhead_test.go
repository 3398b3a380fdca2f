package graph

import (
	"testing"

	G "gorgonia.org/gorgonia"
)

// BenchmarkNodeOverhead runs a chain of 500 elementwise ops on a 4-vector:
// the cost per run divided by 500 is the executor's fixed cost per node.
func BenchmarkNodeOverhead(b *testing.B) {
	g := G.NewGraph()
	x := vec(g, "x", 1, 2, 3, 4)
	y := x
	for i := 0; i < 250; i++ {
		y = must(G.Add(y, x))
		y = must(G.HadamardProd(y, G.NewConstant(0.5)))
	}
	s := must(G.Sum(y))
	p, err := Compile(g, s)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
