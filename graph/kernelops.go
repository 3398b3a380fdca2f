package graph

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sqDistOp computes D_ij = ‖x_i − z_j‖² via ‖x‖² + ‖z‖² − 2xᵀz (one Gemm),
// clamped at zero so that square roots of it (Matérn kernels) stay real.
type sqDistOp struct {
	pureOp
	n, m, d int
}

// SqDist returns the n×m matrix of squared Euclidean distances between the
// rows of x (n×d) and z (m×d). Its gradient is built from MatMul and
// broadcasts, so it can be differentiated again (the first-order model needs
// ∂²k/∂x∂θ).
func SqDist(x, z *G.Node) (*G.Node, error) {
	xs, zs := x.Shape(), z.Shape()
	if len(xs) != 2 || len(zs) != 2 || xs[1] != zs[1] {
		return nil, fmt.Errorf("graph.SqDist: want n×d and m×d matrices, got %v and %v", xs, zs)
	}
	if x == z {
		return applyOp(sqDistSelfOp{n: xs[0], d: xs[1]}, x)
	}
	return applyOp(sqDistOp{n: xs[0], m: zs[0], d: xs[1]}, x, z)
}

func (op sqDistOp) Arity() int    { return 2 }
func (op sqDistOp) Type() hm.Type { return fnType(2, 2, 2) }
func (op sqDistOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.m}, nil
}
func (op sqDistOp) String() string        { return fmt.Sprintf("SqDist(%d,%d,%d)", op.n, op.m, op.d) }
func (op sqDistOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op sqDistOp) Hashcode() uint32      { return hashOf(op) }
func (op sqDistOp) DiffWRT(int) []bool    { return []bool{true, true} }

func (op sqDistOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	z, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	n, m, d := op.n, op.m, op.d
	out := op.buf.take(n * m)
	multiplyAdds.Add(int64(n) * int64(m) * int64(d))
	blas64.Gemm(blas.NoTrans, blas.Trans, -2,
		blas64.General{Rows: n, Cols: d, Stride: d, Data: x},
		blas64.General{Rows: m, Cols: d, Stride: d, Data: z},
		0, blas64.General{Rows: n, Cols: m, Stride: m, Data: out})
	zz := op.buf.scratchOf(m)
	for j := range zz {
		zz[j] = blas64.Dot(blas64.Vector{N: d, Inc: 1, Data: z[j*d : (j+1)*d]}, blas64.Vector{N: d, Inc: 1, Data: z[j*d : (j+1)*d]})
	}
	for i := 0; i < n; i++ {
		xi := x[i*d : (i+1)*d]
		xx := blas64.Dot(blas64.Vector{N: d, Inc: 1, Data: xi}, blas64.Vector{N: d, Inc: 1, Data: xi})
		row := out[i*m : (i+1)*m]
		for j := range row {
			row[j] = math.Max(0, row[j]+xx+zz[j])
		}
	}
	return op.buf.owned(tensor.Shape{n, m}, out), nil
}

// SymDiff: X̄ = 2(rowsum(D̄) ⊙ X − D̄ Z), Z̄ = 2(colsum(D̄) ⊙ Z − D̄ᵀ X).
func (op sqDistOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	x, z := in[0], in[1]
	side := func(self, other *G.Node, along int, trans bool, rows int) (*G.Node, error) {
		s, err := G.Sum(g, along)
		if err != nil {
			return nil, err
		}
		b, err := BroadcastTo(s, tensor.Shape{rows, op.d}, []int{1})
		if err != nil {
			return nil, err
		}
		a, err := G.HadamardProd(b, self)
		if err != nil {
			return nil, err
		}
		p, err := MatMul(g, other, trans, false)
		if err != nil {
			return nil, err
		}
		r, err := G.Sub(a, p)
		if err != nil {
			return nil, err
		}
		return G.HadamardProd(r, G.NewConstant(2.0))
	}
	gx, err := side(x, z, 1, false, op.n)
	if err != nil {
		return nil, err
	}
	gz, err := side(z, x, 0, true, op.m)
	return G.Nodes{gx, gz}, err
}

// intPowOp raises elementwise to a fixed non-negative integer power.
type intPowOp struct {
	pureOp
	p     int
	shape tensor.Shape
}

// IntPow returns x^p elementwise for an integer p ≥ 0 (the polynomial kernel's
// degree). Unlike gorgonia.Pow it is exact for negative bases and its
// gradient p·x^(p−1) is again an IntPow.
func IntPow(x *G.Node, p int) (*G.Node, error) {
	if p < 0 {
		return nil, fmt.Errorf("graph.IntPow: negative power %d", p)
	}
	return applyOp(intPowOp{p: p, shape: x.Shape()}, x)
}

func (op intPowOp) Arity() int                                     { return 1 }
func (op intPowOp) Type() hm.Type                                  { return fnType(op.shape.Dims(), op.shape.Dims()) }
func (op intPowOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op intPowOp) String() string                                 { return fmt.Sprintf("IntPow(%d,%v)", op.p, op.shape) }
func (op intPowOp) WriteHash(h hash.Hash)                          { writeHash(h, op) }
func (op intPowOp) Hashcode() uint32                               { return hashOf(op) }
func (op intPowOp) DiffWRT(int) []bool                             { return []bool{true} }
func (op intPowOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	out := op.buf.take(len(x))
	intPow(out, x, nil, op.p, 1)
	return op.buf.owned(op.shape, out), nil
}

// SymDiff: the adjoint p·x^(p−1)·ḡ is one op (IntPowGrad), one pass where
// a power, a product with ḡ and a scaling were three.
func (op intPowOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	d, err := intPowGrad(in[0], g, op.p)
	return G.Nodes{d}, err
}

// intPowBlock is the block of elements intPow works on at a time: each
// squaring or product then runs over a block, independent multiplies
// the processor overlaps, where the exponent's bits looped per element
// (3 ns an element at p = 9).
const intPowBlock = 64

// intPow sets out = scale·x^p (times g elementwise when g is not nil),
// multiplying in the order of binary exponentiation, so that the value
// is the per-element loop's bit for bit.
func intPow(out, x, g []float64, p int, scale float64) { intPowShift(out, x, g, p, 0, scale) }

// intPowGradOp computes p·x^(p−1)·g, IntPow's adjoint.
type intPowGradOp struct {
	pureOp
	p     int
	shape tensor.Shape
}

func intPowGrad(x, g *G.Node, p int) (*G.Node, error) {
	if !x.Shape().Eq(g.Shape()) {
		return nil, fmt.Errorf("graph.IntPow: gradient of shape %v for input %v", g.Shape(), x.Shape())
	}
	return applyOp(intPowGradOp{p: p, shape: x.Shape()}, x, g)
}

func (op intPowGradOp) Arity() int { return 2 }
func (op intPowGradOp) Type() hm.Type {
	return fnType(op.shape.Dims(), op.shape.Dims(), op.shape.Dims())
}
func (op intPowGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op intPowGradOp) String() string        { return fmt.Sprintf("IntPowGrad(%d,%v)", op.p, op.shape) }
func (op intPowGradOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op intPowGradOp) Hashcode() uint32      { return hashOf(op) }
func (op intPowGradOp) DiffWRT(int) []bool    { return []bool{true, true} }
func (op intPowGradOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	g, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	out := op.buf.take(len(x))
	if op.p == 0 {
		clear(out)
	} else {
		intPow(out, x, g, op.p-1, float64(op.p))
	}
	return op.buf.owned(op.shape, out), nil
}

// SymDiff of y = p·x^(p−1)·g: x̄ = p·(p−1)·x^(p−2)·g·ȳ = p·IntPowGrad_{p−1}(x, g·ȳ),
// ḡ = p·x^(p−1)·ȳ = IntPowGrad_p(x, ȳ).
func (op intPowGradOp) SymDiff(in G.Nodes, out, gy *G.Node) (G.Nodes, error) {
	x, g := in[0], in[1]
	e := &Chain{}
	gx := e.Do(G.HadamardProd(e.Do(intPowGrad(x, e.Do(G.HadamardProd(g, gy)), max(op.p-1, 0))), G.NewConstant(float64(op.p))))
	gg := e.Do(intPowGrad(x, gy, op.p))
	return G.Nodes{gx, gg}, e.Err
}

func (op intPowGradOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op sqDistOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op intPowOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
