package graph

import (
	"fmt"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float64s returns the float64 data of a Gorgonia value: a scalar as a
// one-element slice, a tensor as its backing data in row-major order. The
// slice aliases the value (except for a view, which is copied): do not
// write into it, and copy it before the value is reused if it must survive.
func Float64s(v G.Value) ([]float64, error) {
	switch x := v.(type) {
	case *G.F64:
		// F64 is a float64: its one-element slice costs no allocation, where
		// a copy was a third of a small step's remaining allocations.
		return unsafe.Slice((*float64)(x), 1), nil
	case *tensor.Dense:
		if x.Dtype() != tensor.Float64 {
			return nil, fmt.Errorf("graph: tensor of %v, want float64", x.Dtype())
		}
		if !x.IsMaterializable() {
			return x.Float64s(), nil
		}
		c := x.Materialize().(*tensor.Dense)
		return c.Float64s(), nil
	case nil:
		return nil, fmt.Errorf("graph: no value")
	default:
		return nil, fmt.Errorf("graph: unsupported value type %T", v)
	}
}

// Scalar returns the float64 in a scalar value (or a one-element tensor).
func Scalar(v G.Value) (float64, error) {
	f, err := Float64s(v)
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("graph: value of %d elements is not a scalar", len(f))
	}
	return f[0], nil
}

// NewValue returns a value of the given shape backed by data (copied); an
// empty shape gives a scalar.
func NewValue(shape tensor.Shape, data []float64) G.Value {
	if shape.IsScalar() {
		return G.NewF64(data[0])
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]float64(nil), data...)))
}

// Input returns an input node of g named name holding data in the given
// shape (a scalar for an empty shape). A tensor's value uses data as its
// backing array, so writing into data changes what the next run sees; a
// scalar's value is a copy.
func Input(g *G.ExprGraph, name string, shape tensor.Shape, data []float64) *G.Node {
	if shape.IsScalar() {
		return G.NewScalar(g, G.Float64, G.WithName(name), G.WithValue(G.NewF64(data[0])))
	}
	t := tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(data))
	return G.NewTensor(g, G.Float64, shape.Dims(), G.WithShape(shape.Clone()...), G.WithName(name), G.WithValue(t))
}

// owned wraps freshly computed data as a value without copying it; op Do
// methods use it for the outputs they allocate.
func owned(shape tensor.Shape, data []float64) G.Value {
	if shape.IsScalar() {
		return G.NewF64(data[0])
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data)) // WithShape copies the shape
}

// Chain threads the first error through a sequence of graph constructions,
// so that long formulas read as formulas: after an error every Do returns nil
// and Err reports the first failure.
type Chain struct{ Err error }

// Do returns n, or nil once any step has failed.
func (c *Chain) Do(n *G.Node, err error) *G.Node {
	if c.Err == nil && err != nil {
		c.Err = err
	}
	if c.Err != nil {
		return nil
	}
	return n
}

// float64sAll is Float64s of every value.
func float64sAll(vs []G.Value) ([][]float64, error) {
	out := make([][]float64, len(vs))
	for i, v := range vs {
		f, err := Float64s(v)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}
