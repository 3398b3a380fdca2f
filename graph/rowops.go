package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RowSum3 and RowScale2 are a pair of fused n×d elementwise-and-reduce ops,
// each the other's adjoint, so that graphs of any order stay within them.
// They exist for NIMGP_FO's Δ_i = Σ_j (∂μ/∂x_ij)² V_ij, which as stock ops
// (Square, HadamardProd, Sum) allocated and copied six n×d intermediates per
// class forward and backward, a tenth of the MNIST step.

// rowSum3Op computes t_i = k·Σ_j a_ij b_ij c_ij.
type rowSum3Op struct {
	pureOp
	n, d int
	k    float64
}

// RowSum3 returns the n-vector k·Σ_j a_ij·b_ij·c_ij of three n×d matrices
// (a node may be passed more than once: RowSum3(g, g, v, 1) is Σ_j g²v).
func RowSum3(a, b, c *G.Node, k float64) (*G.Node, error) {
	n, d, err := sameMatrices("RowSum3", a, b, c)
	if err != nil {
		return nil, err
	}
	return applyOp(rowSum3Op{n: n, d: d, k: k}, a, b, c)
}

func (op rowSum3Op) Arity() int    { return 3 }
func (op rowSum3Op) Type() hm.Type { return fnType(1, 2, 2, 2) }
func (op rowSum3Op) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n}, nil
}
func (op rowSum3Op) String() string        { return fmt.Sprintf("RowSum3(%dx%d,%g)", op.n, op.d, op.k) }
func (op rowSum3Op) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op rowSum3Op) Hashcode() uint32      { return hashOf(op) }
func (op rowSum3Op) DiffWRT(int) []bool    { return []bool{true, true, true} }

func (op rowSum3Op) Do(vs ...G.Value) (G.Value, error) {
	m, err := float64sAll(vs)
	if err != nil {
		return nil, err
	}
	a, b, c := m[0], m[1], m[2]
	out := make([]float64, op.n)
	parallelFor(op.n, 1, 2*op.d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ra, rb, rc := a[i*op.d:(i+1)*op.d], b[i*op.d:(i+1)*op.d], c[i*op.d:(i+1)*op.d]
			var s float64
			for j, x := range ra {
				s += x * rb[j] * rc[j]
			}
			out[i] = op.k * s
		}
	})
	return owned(tensor.Shape{op.n}, out), nil
}

// SymDiff: ā = RowScale2(b, c, t̄, k), and likewise for b and c. When a
// and b are one node (Σ g²v) its whole gradient, 2·RowScale2(g, v, t̄, k),
// goes to the first slot and nothing to the second: one n×d op instead of
// two and their sum.
func (op rowSum3Op) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	e := &Chain{}
	if in[0] == in[1] {
		ga := e.Do(RowScale2(in[0], in[2], g, 2*op.k))
		gc := e.Do(RowScale2(in[0], in[1], g, op.k))
		return G.Nodes{ga, nil, gc}, e.Err
	}
	ga := e.Do(RowScale2(in[1], in[2], g, op.k))
	gb := e.Do(RowScale2(in[0], in[2], g, op.k))
	gc := e.Do(RowScale2(in[0], in[1], g, op.k))
	return G.Nodes{ga, gb, gc}, e.Err
}

// rowScale2Op computes p_ij = k·x_ij y_ij r_i.
type rowScale2Op struct {
	pureOp
	n, d int
	k    float64
}

// RowScale2 returns the n×d matrix k·x_ij·y_ij·r_i of two n×d matrices and
// an n-vector.
func RowScale2(x, y, r *G.Node, k float64) (*G.Node, error) {
	n, d, err := sameMatrices("RowScale2", x, y)
	if err != nil {
		return nil, err
	}
	if rs := r.Shape(); len(rs) != 1 || rs[0] != n {
		return nil, fmt.Errorf("graph.RowScale2: want a %d-vector of row scales, got shape %v", n, rs)
	}
	return applyOp(rowScale2Op{n: n, d: d, k: k}, x, y, r)
}

func (op rowScale2Op) Arity() int    { return 3 }
func (op rowScale2Op) Type() hm.Type { return fnType(2, 2, 2, 1) }
func (op rowScale2Op) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.d}, nil
}
func (op rowScale2Op) String() string        { return fmt.Sprintf("RowScale2(%dx%d,%g)", op.n, op.d, op.k) }
func (op rowScale2Op) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op rowScale2Op) Hashcode() uint32      { return hashOf(op) }
func (op rowScale2Op) DiffWRT(int) []bool    { return []bool{true, true, true} }

func (op rowScale2Op) Do(vs ...G.Value) (G.Value, error) {
	m, err := float64sAll(vs)
	if err != nil {
		return nil, err
	}
	x, y, r := m[0], m[1], m[2]
	out := op.buf.take(op.n * op.d)
	parallelFor(op.n, 1, 2*op.d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := op.k * r[i]
			rx, ry, ro := x[i*op.d:(i+1)*op.d], y[i*op.d:(i+1)*op.d], out[i*op.d:(i+1)*op.d]
			for j, v := range rx {
				ro[j] = s * v * ry[j]
			}
		}
	})
	return owned(tensor.Shape{op.n, op.d}, out), nil
}

// SymDiff: x̄ = RowScale2(p̄, y, r, k), ȳ = RowScale2(p̄, x, r, k),
// r̄ = RowSum3(p̄, x, y, k).
func (op rowScale2Op) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	e := &Chain{}
	gx := e.Do(RowScale2(g, in[1], in[2], op.k))
	gy := e.Do(RowScale2(g, in[0], in[2], op.k))
	gr := e.Do(RowSum3(g, in[0], in[1], op.k))
	return G.Nodes{gx, gy, gr}, e.Err
}

// sameMatrices checks that the nodes are n×d matrices of one shape.
func sameMatrices(name string, ns ...*G.Node) (n, d int, err error) {
	s0 := ns[0].Shape()
	if len(s0) != 2 {
		return 0, 0, fmt.Errorf("graph.%s: want n×d matrices, got shape %v", name, s0)
	}
	for _, x := range ns[1:] {
		if s := x.Shape(); len(s) != 2 || s[0] != s0[0] || s[1] != s0[1] {
			return 0, 0, fmt.Errorf("graph.%s: shapes differ: %v and %v", name, s0, s)
		}
	}
	return s0[0], s0[1], nil
}

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

func (op rowScale2Op) withBuf(b *outBuf) G.Op { op.buf = b; return op }
