package graph

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// pureOp holds the Op methods that are the same for every op in this package:
// outputs are freshly allocated, inputs are never overwritten, and the hash is
// derived from String, which must therefore name every parameter (Gorgonia
// merges nodes whose ops hash equal).
type pureOp struct{}

func (pureOp) ReturnsPtr() bool     { return false }
func (pureOp) CallsExtern() bool    { return false }
func (pureOp) OverwritesInput() int { return -1 }

func hashOf(s fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, s.String())
	return h.Sum32()
}

func writeHash(h hash.Hash, s fmt.Stringer) { fmt.Fprint(h, s.String()) }

// tensorType is the Gorgonia type of a float64 value with d dimensions (a scalar for d = 0).
func tensorType(d int) hm.Type {
	if d == 0 {
		return tensor.Float64
	}
	return G.TensorType{Dims: d, Of: tensor.Float64}
}

// fnType builds the type of an op from its input and output dimension counts.
func fnType(out int, ins ...int) hm.Type {
	ts := make([]hm.Type, 0, len(ins)+1)
	for _, d := range ins {
		ts = append(ts, tensorType(d))
	}
	ts = append(ts, tensorType(out))
	return hm.NewFnType(ts...)
}

// shapeOf extracts the shape from a DimSizer passed to InferShape.
func shapeOf(d G.DimSizer) (tensor.Shape, error) {
	switch s := d.(type) {
	case tensor.Shape:
		return s.Clone(), nil
	}
	return nil, fmt.Errorf("graph: cannot infer shape from %T", d)
}

// allDiff is DiffWRT for an op differentiable in all n inputs.
func allDiff(n int) []bool {
	w := make([]bool, n)
	for i := range w {
		w[i] = true
	}
	return w
}
