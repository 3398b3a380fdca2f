package graph

import (
	"errors"
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// ErrNotPositiveDefinite is returned (wrapped) when a Cholesky factorisation
// fails; training loops react to it by raising the jitter.
var ErrNotPositiveDefinite = errors.New("matrix is not positive definite")

func squareOf(x *G.Node, who string) (int, error) {
	s := x.Shape()
	if len(s) != 2 || s[0] != s[1] {
		return 0, fmt.Errorf("graph.%s: want a square matrix, got shape %v", who, s)
	}
	return s[0], nil
}

// ---- Cholesky ---------------------------------------------------------------

type choleskyOp struct {
	pureOp
	n int
}

// Cholesky returns the lower-triangular L with L Lᵀ = (A + Aᵀ)/2. Using the
// symmetric part makes the gradient with respect to every element of A well
// defined, so finite differences on single elements agree with it.
func Cholesky(a *G.Node) (*G.Node, error) {
	n, err := squareOf(a, "Cholesky")
	if err != nil {
		return nil, err
	}
	return applyOp(choleskyOp{n: n}, a)
}

func (op choleskyOp) Arity() int    { return 1 }
func (op choleskyOp) Type() hm.Type { return fnType(2, 2) }
func (op choleskyOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.n}, nil
}
func (op choleskyOp) String() string        { return fmt.Sprintf("Cholesky%d", op.n) }
func (op choleskyOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op choleskyOp) Hashcode() uint32      { return hashOf(op) }
func (op choleskyOp) DiffWRT(int) []bool    { return []bool{true} }

func (op choleskyOp) Do(vs ...G.Value) (G.Value, error) {
	a, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	n := op.n
	// The factorisation mat.Cholesky would do (lapack64.Potrf on the upper
	// triangle, zeros below it), without its matrices, its work arrays and
	// its condition estimate, which nothing here reads.
	u := op.buf.scratchOf(n * n)
	for i := 0; i < n; i++ {
		clear(u[i*n : i*n+i])
		for j := i; j < n; j++ {
			u[i*n+j] = 0.5 * (a[i*n+j] + a[j*n+i])
		}
	}
	if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: u}); !ok {
		return nil, fmt.Errorf("graph.Cholesky of %d×%d matrix: %w", n, n, ErrNotPositiveDefinite)
	}
	out := op.buf.take(n * n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			out[i*n+j] = u[j*n+i] // L = Uᵀ
		}
		clear(out[i*n+i+1 : (i+1)*n])
	}
	return op.buf.owned(tensor.Shape{n, n}, out), nil
}

// SymDiff implements Murray (2016): Ā = sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹), where Φ keeps
// the lower triangle and halves the diagonal, as one op (cholGrad).
func (op choleskyOp) SymDiff(in G.Nodes, L, g *G.Node) (G.Nodes, error) {
	a, err := cholGrad(L, g)
	return G.Nodes{a}, err
}

// ---- triangular solve and product ----------------------------------------------

// triOp is what TriSolve and TriMul share: op(T), T lower- or
// upper-triangular and op(T) = Tᵀ if trans, applied to an n-vector or n×k
// matrix B in a copy of B.
type triOp struct {
	pureOp
	lower, trans bool
	n, k         int
	vec          bool
}

func newTriOp(name string, t, b *G.Node, lower, trans bool) (triOp, error) {
	n, err := squareOf(t, name)
	if err != nil {
		return triOp{}, err
	}
	s := b.Shape()
	op := triOp{lower: lower, trans: trans, n: n}
	switch {
	case len(s) == 1 && s[0] == n:
		op.vec, op.k = true, 1
	case len(s) == 2 && s[0] == n:
		op.k = s[1]
	default:
		return triOp{}, fmt.Errorf("graph.%s: right-hand side of shape %v does not match %d×%d", name, s, n, n)
	}
	return op, nil
}

func (op triOp) Arity() int { return 2 }
func (op triOp) Type() hm.Type {
	if op.vec {
		return fnType(1, 2, 1)
	}
	return fnType(2, 2, 2)
}
func (op triOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape(), nil }
func (op triOp) shape() tensor.Shape {
	if op.vec {
		return tensor.Shape{op.n}
	}
	return tensor.Shape{op.n, op.k}
}
func (op triOp) label(name string) string {
	return fmt.Sprintf("%s(lower=%v,trans=%v,%d,%d,%v)", name, op.lower, op.trans, op.n, op.k, op.vec)
}
func (op triOp) DiffWRT(int) []bool { return []bool{true, true} }

// apply copies B (vs[1]) into the op's output buffer and runs routine
// (blas64.Trsm or blas64.Trmm, left side) on it with T (vs[0]).
func (op triOp) apply(vs []G.Value, routine func(blas.Side, blas.Transpose, float64, blas64.Triangular, blas64.General),
	to func(blas.Uplo, blas.Transpose, blas.Diag, int, int, float64, []float64, int, []float64, int, []float64, int) bool) (G.Value, error) {
	t, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	b, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	x := op.buf.take(len(b))
	uplo, tr := blas.Upper, blas.NoTrans
	if op.lower {
		uplo = blas.Lower
	}
	if op.trans {
		tr = blas.Trans
	}
	if ownTriangular && to(uplo, tr, blas.NonUnit, op.n, op.k, 1, t, op.n, b, op.k, x, op.k) {
		return op.buf.owned(op.shape(), x), nil
	}
	copy(x, b)
	routine(blas.Left, tr, 1,
		blas64.Triangular{Uplo: uplo, Diag: blas.NonUnit, N: op.n, Stride: op.n, Data: t},
		blas64.General{Rows: op.n, Cols: op.k, Stride: op.k, Data: x})
	return op.buf.owned(op.shape(), x), nil
}

type triSolveOp struct{ triOp }

// TriSolve returns X solving op(T) X = B, where T is lower- (lower) or
// upper-triangular, op(T) = Tᵀ if trans, and B is an n-vector or n×k matrix.
// Only T's triangle is read, and the gradient with respect to T is confined to it.
func TriSolve(t, b *G.Node, lower, trans bool) (*G.Node, error) {
	op, err := newTriOp("TriSolve", t, b, lower, trans)
	if err != nil {
		return nil, err
	}
	return applyOp(triSolveOp{op}, t, b)
}

func (op triSolveOp) String() string        { return op.label("TriSolve") }
func (op triSolveOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op triSolveOp) Hashcode() uint32      { return hashOf(op) }

func (op triSolveOp) Do(vs ...G.Value) (G.Value, error) {
	return op.apply(vs, blas64.Trsm, gemm.TrsmTo)
}

// SymDiff: with A = op(T), B̄ = A⁻ᵀ X̄ and Ā = −B̄ Xᵀ, restricted to T's triangle.
func (op triSolveOp) SymDiff(in G.Nodes, x, g *G.Node) (G.Nodes, error) {
	t := in[0]
	gb, err := TriSolve(t, g, op.lower, !op.trans)
	if err != nil {
		return nil, err
	}
	u, v := gb, x // T̄ = −tri(B̄ Xᵀ), or −tri(X B̄ᵀ) when trans
	if op.trans {
		u, v = x, gb
	}
	if !op.vec { // the sign in the product's alpha, exact, not in a pass of its own
		gt, err := triProdScaled(u, v, op.lower, -1)
		return G.Nodes{gt, gb}, err
	}
	gt, err := triOuter(u, v, op.lower, op.vec)
	if err != nil {
		return nil, err
	}
	if gt, err = G.Neg(gt); err != nil {
		return nil, err
	}
	return G.Nodes{gt, gb}, nil
}

// triSolveLowerOp is TriSolve of a lower-triangular T and a square B whose
// lower triangle alone is read, the result's lower triangle alone kept.
type triSolveLowerOp struct{ triOp }

// TriSolveLower returns tril(op(L)⁻¹·tril(B)) for a lower-triangular n×n L
// (op(L) = Lᵀ if trans) and an n×n B: B's strict upper triangle is not
// read, and the result is zero above its diagonal. Without trans it is
// L⁻¹B for a lower-triangular B, the whitened factor L⁻¹L_q of an
// unwhitened variational family. Column j of the result depends on rows
// j… of B alone, so it costs a third of TriSolve on the same shapes, and
// so does its gradient, an instance of the same op.
func TriSolveLower(l, b *G.Node, trans bool) (*G.Node, error) {
	op, err := newTriOp("TriSolveLower", l, b, true, trans)
	if err != nil {
		return nil, err
	}
	if op.vec || op.k != op.n {
		return nil, fmt.Errorf("graph.TriSolveLower: right-hand side of shape %v is not %d×%d", b.Shape(), op.n, op.n)
	}
	return applyOp(triSolveLowerOp{op}, l, b)
}

func (op triSolveLowerOp) String() string        { return op.label("TriSolveLower") }
func (op triSolveLowerOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op triSolveLowerOp) Hashcode() uint32      { return hashOf(op) }

func (op triSolveLowerOp) Do(vs ...G.Value) (G.Value, error) {
	t, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	b, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	n := op.n
	x := op.buf.take(n * n)
	tr := blas.NoTrans
	if op.trans {
		tr = blas.Trans
	}
	if ownTriangular && gemm.TrsmLowerTo(tr, blas.NonUnit, n, 1, t, n, b, n, x, n) {
		return op.buf.owned(tensor.Shape{n, n}, x), nil
	}
	for i := range n {
		copy(x[i*n:i*n+i+1], b[i*n:i*n+i+1])
		clear(x[i*n+i+1 : (i+1)*n])
	}
	blas64.Trsm(blas.Left, tr, 1,
		blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: n, Data: t},
		blas64.General{Rows: n, Cols: n, Stride: n, Data: x})
	for i := range n {
		clear(x[i*n+i+1 : (i+1)*n])
	}
	return op.buf.owned(tensor.Shape{n, n}, x), nil
}

// SymDiff: with A = op(L) and P the projection on the lower triangle,
// X = P A⁻¹ P B gives B̄ = P A⁻ᵀ P X̄ (this op, transposed) and
// L̄ = −tril(B̄ Xᵀ), or −tril(X B̄ᵀ) when trans: the parts of A⁻ᵀ P X̄ and
// A⁻¹ P B that P discards meet only zeros of X or B̄ in those products.
func (op triSolveLowerOp) SymDiff(in G.Nodes, x, g *G.Node) (G.Nodes, error) {
	gb, err := TriSolveLower(in[0], g, !op.trans)
	if err != nil {
		return nil, err
	}
	u, v := gb, x
	if op.trans {
		u, v = x, gb
	}
	gt, err := triProdScaled(u, v, true, -1)
	return G.Nodes{gt, gb}, err
}

func (op triSolveLowerOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

type triMulOp struct{ triOp }

// TriMul returns op(T)·B, where T is lower- (lower) or upper-triangular,
// op(T) = Tᵀ if trans, and B is an n-vector or n×k matrix. Only T's
// triangle is read, and the gradient with respect to T is confined to it.
// It costs half of MatMul on the same shapes.
func TriMul(t, b *G.Node, lower, trans bool) (*G.Node, error) {
	op, err := newTriOp("TriMul", t, b, lower, trans)
	if err != nil {
		return nil, err
	}
	return applyOp(triMulOp{op}, t, b)
}

func (op triMulOp) String() string        { return op.label("TriMul") }
func (op triMulOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op triMulOp) Hashcode() uint32      { return hashOf(op) }

func (op triMulOp) Do(vs ...G.Value) (G.Value, error) {
	multiplyAdds.Add(int64(op.n) * int64(op.n+1) / 2 * int64(op.k))
	return op.apply(vs, blas64.Trmm, gemm.TrmmTo)
}

// SymDiff: with Y = op(T) B, B̄ = op(T)ᵀ Ȳ and T̄ = tri(Ȳ Bᵀ), or tri(B Ȳᵀ)
// when trans.
func (op triMulOp) SymDiff(in G.Nodes, x, g *G.Node) (G.Nodes, error) {
	t, b := in[0], in[1]
	gb, err := TriMul(t, g, op.lower, !op.trans)
	if err != nil {
		return nil, err
	}
	u, v := g, b
	if op.trans {
		u, v = b, g
	}
	gt, err := triOuter(u, v, op.lower, op.vec)
	if err != nil {
		return nil, err
	}
	return G.Nodes{gt, gb}, nil
}

func (op triMulOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// ---- one triangle of a product ------------------------------------------------

type triProdOp struct {
	pureOp
	lower bool
	m, k  int
	alpha float64 // the product's scale: 1, or −1 in TriSolve's adjoint
}

// TriProd returns the lower (or upper) triangle, diagonal included, of
// U·Vᵀ for m×k matrices U and V, zero elsewhere: TriMask(MatMul(U, V, false,
// true), lower, 1) computing only the register tiles that reach the
// triangle (gemm.DgemmTri; without the assembly kernel, the row panels
// that do, 55–65% of the full product's multiply-adds). The gradients with respect to
// triangular factors (TriSolve's and TriMul's) are such triangles.
func TriProd(u, v *G.Node, lower bool) (*G.Node, error) { return triProdScaled(u, v, lower, 1) }

// triProdScaled is alpha·TriProd(u, v, lower), the scale taken by the
// product itself.
func triProdScaled(u, v *G.Node, lower bool, alpha float64) (*G.Node, error) {
	us, vs := u.Shape(), v.Shape()
	if len(us) != 2 || len(vs) != 2 || us[0] != vs[0] || us[1] != vs[1] {
		return nil, fmt.Errorf("graph.TriProd: want two m×k matrices, got shapes %v and %v", us, vs)
	}
	return applyOp(triProdOp{lower: lower, m: us[0], k: us[1], alpha: alpha}, u, v)
}

func (op triProdOp) Arity() int    { return 2 }
func (op triProdOp) Type() hm.Type { return fnType(2, 2, 2) }
func (op triProdOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.m, op.m}, nil
}
func (op triProdOp) String() string {
	if op.alpha != 1 {
		return fmt.Sprintf("TriProd(lower=%v,%dx%d,alpha=%g)", op.lower, op.m, op.k, op.alpha)
	}
	return fmt.Sprintf("TriProd(lower=%v,%dx%d)", op.lower, op.m, op.k)
}
func (op triProdOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op triProdOp) Hashcode() uint32      { return hashOf(op) }
func (op triProdOp) DiffWRT(int) []bool    { return []bool{true, true} }

// triProdPanel is the row-panel height of the portable path: small enough that the wasted
// half of each diagonal block is a small share, large enough that each
// panel is an efficient product.
const triProdPanel = 48

func (op triProdOp) Do(vs ...G.Value) (G.Value, error) {
	u, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	v, err := Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	m, k := op.m, op.k
	c := op.buf.take(m * m)
	if gemm.KernelName != "go" {
		multiplyAdds.Add(int64(m) * int64(m+1) / 2 * int64(k))
		gemm.DgemmTri(op.lower, false, true, m, k, op.alpha, u, k, v, k, c, m)
		return op.buf.owned(tensor.Shape{m, m}, c), nil
	}
	op.into(u, v, c)
	return op.buf.owned(tensor.Shape{m, m}, c), nil
}

// into computes the product into c (m×m) through the installed BLAS, one
// row panel at a time: the path without gpc's kernel.
func (op triProdOp) into(u, v, c []float64) {
	m, k := op.m, op.k
	clear(c)
	h := triProdPanel
	if m < 2*h {
		h = m
	}
	for r0 := 0; r0 < m; r0 += h {
		r1 := min(r0+h, m)
		c0, c1 := 0, r1 // lower: columns up to the diagonal block's end
		if !op.lower {
			c0, c1 = r0, m
		}
		multiplyAdds.Add(int64(r1-r0) * int64(c1-c0) * int64(k))
		blas64.Gemm(blas.NoTrans, blas.Trans, op.alpha,
			blas64.General{Rows: r1 - r0, Cols: k, Stride: k, Data: u[r0*k:]},
			blas64.General{Rows: c1 - c0, Cols: k, Stride: k, Data: v[c0*k:]},
			0, blas64.General{Rows: r1 - r0, Cols: c1 - c0, Stride: m, Data: c[r0*m+c0:]})
		for i := r0; i < r1; i++ { // the diagonal block's other triangle
			if op.lower {
				clear(c[i*m+i+1 : i*m+r1])
			} else {
				clear(c[i*m+r0 : i*m+i])
			}
		}
	}
}

// SymDiff: with C = α·tri(U Vᵀ), Ū = α·tri(C̄)·V and V̄ = α·tri(C̄)ᵀ·U, products
// with a triangular factor that TriMul reads from C̄'s triangle alone.
func (op triProdOp) SymDiff(in G.Nodes, x, g *G.Node) (G.Nodes, error) {
	if op.alpha != 1 { // on the m×m side
		var err error
		if g, err = G.HadamardProd(g, G.NewConstant(op.alpha)); err != nil {
			return nil, err
		}
	}
	gu, err := TriMul(g, in[1], op.lower, false)
	if err != nil {
		return nil, err
	}
	gv, err := TriMul(g, in[0], op.lower, true)
	if err != nil {
		return nil, err
	}
	return G.Nodes{gu, gv}, nil
}

func (op triProdOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// triOuter is the triangle of u·vᵀ, for vectors or matrices.
func triOuter(u, v *G.Node, lower, vec bool) (*G.Node, error) {
	if !vec {
		return TriProd(u, v, lower)
	}
	prod, err := Outer(u, v)
	if err != nil {
		return nil, err
	}
	return TriMask(prod, lower, 1)
}

// Outer returns the outer product a bᵀ of two vectors. gorgonia.OuterProd's
// gradient is wrong; this is a matrix product of an n×1 and a 1×m matrix.
func Outer(a, b *G.Node) (*G.Node, error) {
	if a.Dims() != 1 || b.Dims() != 1 {
		return nil, fmt.Errorf("graph.Outer: want vectors, got shapes %v and %v", a.Shape(), b.Shape())
	}
	ac, err := Reshape(a, tensor.Shape{a.Shape()[0], 1})
	if err != nil {
		return nil, err
	}
	br, err := Reshape(b, tensor.Shape{1, b.Shape()[0]})
	if err != nil {
		return nil, err
	}
	return MatMul(ac, br, false, false)
}

func (op choleskyOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op triSolveOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
