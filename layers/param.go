package layers

import (
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/graph"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Transform maps a parameter's unconstrained storage to the value a model uses.
type Transform int

const (
	// Identity uses the stored value as is.
	Identity Transform = iota
	// Exp stores the logarithm of a positive quantity (the original code's
	// convention for length-scales, amplitudes and variances).
	Exp
)

// Param is one trainable array. Data holds the unconstrained values in
// row-major order and is updated in place by optimisers.
type Param struct {
	Name      string
	Shape     tensor.Shape
	Data      []float64
	Transform Transform
	// Fixed parameters take part in graphs but receive no gradient.
	Fixed bool
}

// NewParam returns a parameter of the given shape whose constrained value is
// value everywhere (for Exp, value must be positive).
func NewParam(name string, shape tensor.Shape, value float64, tr Transform) *Param {
	p := &Param{Name: name, Shape: shape.Clone(), Data: make([]float64, max(1, shape.TotalSize())), Transform: tr}
	p.Fill(value)
	return p
}

// Fill sets every element's constrained value.
func (p *Param) Fill(value float64) {
	u := value
	if p.Transform == Exp {
		u = math.Log(value)
	}
	for i := range p.Data {
		p.Data[i] = u
	}
}

// Value returns the constrained value of element i.
func (p *Param) Value(i int) float64 {
	if p.Transform == Exp {
		return math.Exp(p.Data[i])
	}
	return p.Data[i]
}

// Set stores the constrained value v at element i.
func (p *Param) Set(i int, v float64) {
	if p.Transform == Exp {
		v = math.Log(v)
	}
	p.Data[i] = v
}

// Scope binds parameters to the nodes of one graph. Gorgonia merges input
// nodes that share a name, type and shape, so a Scope also refuses two
// different parameters with one name.
type Scope struct {
	G     *G.ExprGraph
	raw   map[*Param]*G.Node
	val   map[*Param]*G.Node
	names map[string]*Param
	order []*Param
}

// NewScope starts binding parameters into g.
func NewScope(g *G.ExprGraph) *Scope {
	return &Scope{G: g, raw: map[*Param]*G.Node{}, val: map[*Param]*G.Node{}, names: map[string]*Param{}}
}

// Raw returns the input node holding p's unconstrained storage (the node to
// differentiate with respect to).
func (s *Scope) Raw(p *Param) (*G.Node, error) {
	if n, ok := s.raw[p]; ok {
		return n, nil
	}
	if q, ok := s.names[p.Name]; ok && q != p {
		return nil, fmt.Errorf("layers: two parameters are named %q", p.Name)
	}
	// Tensors share p.Data with the node; a scalar's value is a copy, which
	// Sync refreshes before each run.
	n := graph.Input(s.G, p.Name, p.Shape, p.Data)
	s.raw[p], s.names[p.Name] = n, p
	s.order = append(s.order, p)
	return n, nil
}

// Node returns p's constrained value as a node (exp of the storage for Exp).
func (s *Scope) Node(p *Param) (*G.Node, error) {
	if n, ok := s.val[p]; ok {
		return n, nil
	}
	r, err := s.Raw(p)
	if err != nil {
		return nil, err
	}
	n := r
	if p.Transform == Exp {
		if n, err = G.Exp(r); err != nil {
			return nil, err
		}
	}
	s.val[p] = n
	return n, nil
}

// Params returns the parameters bound so far, in binding order.
func (s *Scope) Params() []*Param { return append([]*Param(nil), s.order...) }

// Trainable returns the bound parameters that are not Fixed, with their raw nodes.
func (s *Scope) Trainable() ([]*Param, G.Nodes) {
	var ps []*Param
	var ns G.Nodes
	for _, p := range s.order {
		if !p.Fixed {
			ps = append(ps, p)
			ns = append(ns, s.raw[p])
		}
	}
	return ps, ns
}

// TrainableAmong returns, in binding order, the bound parameters that are
// not Fixed and are among ps, with their raw nodes: the parameters an
// objective differentiates, restricted to those its engine trains.
func (s *Scope) TrainableAmong(ps []*Param) ([]*Param, G.Nodes) {
	want := make(map[*Param]bool, len(ps))
	for _, p := range ps {
		want[p] = true
	}
	var out []*Param
	var ns G.Nodes
	for _, p := range s.order {
		if !p.Fixed && want[p] {
			out = append(out, p)
			ns = append(ns, s.raw[p])
		}
	}
	return out, ns
}

// Sync refreshes scalar parameters' node values from their storage (tensor
// parameters share storage and need nothing). Call it before each run.
func (s *Scope) Sync() error {
	for p, n := range s.raw {
		if p.Shape.IsScalar() {
			// Rewriting the bound *F64 in place saves G.Let's allocations
			// (a new value and a shape clone) on every training step; the
			// value is ours, bound by an earlier Sync.
			if v, ok := n.Value().(*G.F64); ok && v != nil {
				*v = G.F64(p.Data[0])
				continue
			}
			if err := G.Let(n, G.NewF64(p.Data[0])); err != nil {
				return err
			}
		}
	}
	return nil
}
