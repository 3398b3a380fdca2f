package graph

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A variational family's Cholesky factor L_q from its free parameters, and
// the trace term ‖L‖²_F of its KL divergence, each as one op: composed of
// TriMask, Diag, Exp, DiagMatrix, Add, Square and Sum they were eight
// passes over an M×M matrix forward and back, per latent function, where
// these make one each way.

// expDiagLowerOp maps a square X to its strict lower triangle plus
// diag(exp(diag X)).
type expDiagLowerOp struct {
	pureOp
	n int
}

// ExpDiagLower returns the lower-triangular matrix with x's strict lower
// triangle and the exponential of x's diagonal on its own: a Cholesky
// factor with a positive diagonal from unconstrained parameters. x's strict
// upper triangle is not read (its gradient there is zero). It is, to the
// last bit, TriMask(x, true, 0) + DiagMatrix(Exp(Diag(x))).
func ExpDiagLower(x *G.Node) (*G.Node, error) {
	n, err := squareOf(x, "ExpDiagLower")
	if err != nil {
		return nil, err
	}
	return applyOp(expDiagLowerOp{n: n}, x)
}

func (op expDiagLowerOp) Arity() int    { return 1 }
func (op expDiagLowerOp) Type() hm.Type { return fnType(2, 2) }
func (op expDiagLowerOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op expDiagLowerOp) String() string        { return fmt.Sprintf("ExpDiagLower(%d)", op.n) }
func (op expDiagLowerOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op expDiagLowerOp) Hashcode() uint32      { return hashOf(op) }
func (op expDiagLowerOp) DiffWRT(int) []bool    { return []bool{true} }
func (op expDiagLowerOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	n := op.n
	out := op.buf.take(n * n)
	lowerExpDiag(out, x, x, nil, n)
	return op.buf.owned(tensor.Shape{n, n}, out), nil
}

// lowerExpDiag sets out (n×n) to src's strict lower triangle, with
// s_ii·exp(x_ii) on the diagonal (exp(x_ii) when s is nil) and zeros above:
// ExpDiagLower's value (src = x) and its adjoint (src = s = g).
func lowerExpDiag(out, src, x, s []float64, n int) {
	for i := range n {
		row := out[i*n : (i+1)*n]
		copy(row[:i], src[i*n:i*n+i])
		d := math.Exp(x[i*n+i]) // as Gorgonia's Exp, which the composition used
		if s != nil {
			d = s[i*n+i] * d
		}
		row[i] = d
		clear(row[i+1:])
	}
}

// SymDiff: the Jacobian is diagonal, 1 on the strict lower triangle and
// exp(x_ii) on the diagonal.
func (op expDiagLowerOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	r, err := applyOp(expDiagLowerGradOp(op), in[0], g)
	return G.Nodes{r}, err
}

func (op expDiagLowerOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// expDiagLowerGradOp is ExpDiagLower's adjoint: (x, g) ↦ g's strict lower
// triangle plus diag(g_ii·exp(x_ii)).
type expDiagLowerGradOp expDiagLowerOp

func (op expDiagLowerGradOp) Arity() int    { return 2 }
func (op expDiagLowerGradOp) Type() hm.Type { return fnType(2, 2, 2) }
func (op expDiagLowerGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op expDiagLowerGradOp) String() string        { return fmt.Sprintf("ExpDiagLowerGrad(%d)", op.n) }
func (op expDiagLowerGradOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op expDiagLowerGradOp) Hashcode() uint32      { return hashOf(op) }
func (op expDiagLowerGradOp) DiffWRT(int) []bool    { return []bool{true, true} }
func (op expDiagLowerGradOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	g, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	n := op.n
	out := op.buf.take(n * n)
	lowerExpDiag(out, g, x, g, n)
	return op.buf.owned(tensor.Shape{n, n}, out), nil
}

// SymDiff of y = D(x) ⊙ g (D the Jacobian above): linear in g with the
// same map, so ḡ = this op applied to ȳ; x enters through the diagonal
// alone, x̄_ii = ȳ_ii·g_ii·exp(x_ii). Second order only, so composed.
func (op expDiagLowerGradOp) SymDiff(in G.Nodes, out, gy *G.Node) (G.Nodes, error) {
	x, g := in[0], in[1]
	e := &Chain{}
	gg := e.Do(applyOp(op, x, gy))
	d := e.Do(G.HadamardProd(e.Do(Diag(gy)), e.Do(Diag(g))))
	gx := e.Do(DiagMatrix(e.Do(G.HadamardProd(d, e.Do(G.Exp(e.Do(Diag(x))))))))
	return G.Nodes{gx, gg}, e.Err
}

func (op expDiagLowerGradOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// sumSquaresOp is Σ x_i² over every element.
type sumSquaresOp struct {
	pureOp
	shape tensor.Shape
}

// SumSquares returns the sum of the squares of x's elements (‖x‖², or the
// squared Frobenius norm of a matrix) in one pass, to the last bit
// Sum(Square(x)); its gradient 2·g·x is one pass too.
func SumSquares(x *G.Node) (*G.Node, error) {
	if x.Shape().IsScalar() {
		return nil, fmt.Errorf("graph.SumSquares: want a vector or matrix, got a scalar")
	}
	return applyOp(sumSquaresOp{shape: x.Shape().Clone()}, x)
}

func (op sumSquaresOp) Arity() int    { return 1 }
func (op sumSquaresOp) Type() hm.Type { return fnType(0, op.shape.Dims()) }
func (op sumSquaresOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}
func (op sumSquaresOp) String() string        { return fmt.Sprintf("SumSquares%v", op.shape) }
func (op sumSquaresOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op sumSquaresOp) Hashcode() uint32      { return hashOf(op) }
func (op sumSquaresOp) DiffWRT(int) []bool    { return []bool{true} }
func (op sumSquaresOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	var s float64
	for _, v := range x {
		s += float64(v * v) // rounded before the sum, as Square then Sum; never fused
	}
	out := op.buf.take(1)
	out[0] = s
	return op.buf.owned(tensor.ScalarShape(), out), nil
}

// SymDiff: x̄ = x ⊙ (2ḡ), one pass (2ḡ is a scalar; doubling is exact).
func (op sumSquaresOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	e := &Chain{}
	r := e.Do(G.HadamardProd(in[0], e.Do(G.HadamardProd(g, G.NewConstant(2.0)))))
	return G.Nodes{r}, e.Err
}

func (op sumSquaresOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
