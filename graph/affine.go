package graph

import (
	"fmt"
	"hash"
	"strings"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Affine returns Σ_k x_k·W_k + 1bᵀ + r, a dense layer as one op: W (P×q)
// is split into row blocks W_k, one per input part x_k (n×p_k, Σ p_k = P),
// b is a q-vector and r an n×q residual; b and r may be nil.
//
// Why: written as MatMul, BroadcastTo and Add, a layer allocates and
// passes over its n×q output three times and its bias gradient goes
// through a broadcast's adjoint; here the bias (and residual) fill the
// output and the product accumulates onto them. Taking the parts apart
// lets a network read concat(x̃, one-hot y) without building it, and W's
// gradient, the stacked blocks x_kᵀ·ḡ, is one op instead of a Scatter and
// a sum per block.
func Affine(parts []*G.Node, w, b, r *G.Node) (*G.Node, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("graph.Affine: no input parts")
	}
	ws := w.Shape()
	if len(ws) != 2 {
		return nil, fmt.Errorf("graph.Affine: weights have shape %v, want a matrix", ws)
	}
	op := affineOp{q: ws[1], bias: b != nil, residual: r != nil}
	rows := 0
	for k, x := range parts {
		xs := x.Shape()
		if len(xs) != 2 || (k > 0 && xs[0] != op.n) {
			return nil, fmt.Errorf("graph.Affine: input part %d has shape %v, want a matrix with %d rows", k, xs, op.n)
		}
		op.n = xs[0]
		op.widths = append(op.widths, xs[1])
		rows += xs[1]
	}
	if rows != ws[0] {
		return nil, fmt.Errorf("graph.Affine: the input parts have %d columns in all, the weights %v have %d rows", rows, ws, ws[0])
	}
	args := append(G.Nodes(nil), parts...)
	args = append(args, w)
	if b != nil {
		if bs := b.Shape(); len(bs) != 1 || bs[0] != op.q {
			return nil, fmt.Errorf("graph.Affine: bias has shape %v, want (%d)", bs, op.q)
		}
		args = append(args, b)
	}
	if r != nil {
		if rs := r.Shape(); len(rs) != 2 || rs[0] != op.n || rs[1] != op.q {
			return nil, fmt.Errorf("graph.Affine: residual has shape %v, want (%d, %d)", rs, op.n, op.q)
		}
		args = append(args, r)
	}
	return applyOp(op, args...)
}

// affineOp's inputs are the parts, W, then b and r when present.
type affineOp struct {
	pureOp
	n, q           int
	widths         []int
	bias, residual bool
}

func (op affineOp) Arity() int {
	a := len(op.widths) + 1
	if op.bias {
		a++
	}
	if op.residual {
		a++
	}
	return a
}

func (op affineOp) Type() hm.Type {
	ins := make([]int, 0, op.Arity())
	for range op.widths {
		ins = append(ins, 2)
	}
	ins = append(ins, 2)
	if op.bias {
		ins = append(ins, 1)
	}
	if op.residual {
		ins = append(ins, 2)
	}
	return fnType(2, ins...)
}

func (op affineOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.q}, nil
}
func (op affineOp) String() string {
	return fmt.Sprintf("Affine(%d,%v,%d,b=%v,r=%v)", op.n, op.widths, op.q, op.bias, op.residual)
}
func (op affineOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op affineOp) Hashcode() uint32      { return hashOf(op) }
func (op affineOp) DiffWRT(int) []bool    { return allDiff(op.Arity()) }

func (op affineOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	k := len(op.widths)
	w := in[k]
	out := op.buf.take(op.n * op.q)
	next := k + 1
	var b []float64
	if op.bias {
		b = in[next][:op.q]
		next++
	}
	switch {
	case op.residual:
		copy(out, in[next][:len(out)])
		for i := 0; i < op.n && b != nil; i++ {
			row := out[i*op.q : (i+1)*op.q]
			for j, v := range b {
				row[j] += v
			}
		}
	case b != nil:
		for i := 0; i < op.n; i++ {
			copy(out[i*op.q:(i+1)*op.q], b)
		}
	}
	beta := 1.0 // accumulate onto the bias and residual
	if b == nil && !op.residual {
		beta = 0 // nothing there: the first product stores
	}
	// W_k is rows [off, off+p) of W: a contiguous stretch of its data.
	off := 0
	for part, p := range op.widths {
		multiplyAdds.Add(int64(op.n) * int64(op.q) * int64(p))
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: op.n, Cols: p, Stride: p, Data: in[part]},
			blas64.General{Rows: p, Cols: op.q, Stride: op.q, Data: w[off*op.q : (off+p)*op.q]},
			beta, blas64.General{Rows: op.n, Cols: op.q, Stride: op.q, Data: out})
		beta = 1
		off += p
	}
	return op.buf.owned(tensor.Shape{op.n, op.q}, out), nil
}

// SymDiff: x̄_k = ḡ·W_kᵀ, W̄ = stacked x_kᵀ·ḡ, b̄ = column sums of ḡ, r̄ = ḡ.
func (op affineOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	k := len(op.widths)
	parts, w := in[:k], in[k]
	grads := make(G.Nodes, 0, len(in))
	e := &Chain{}
	for _, blk := range rowBlocks(w, op.widths, e) {
		grads = append(grads, e.Do(MatMul(g, blk, false, true)))
	}
	grads = append(grads, e.Do(stackedProducts(parts, g)))
	if op.bias {
		grads = append(grads, e.Do(G.Sum(g, 0)))
	}
	if op.residual {
		grads = append(grads, g)
	}
	return grads, e.Err
}

// rowBlocks returns the row blocks of m of the given heights (m itself when
// there is one).
func rowBlocks(m *G.Node, heights []int, e *Chain) G.Nodes {
	if len(heights) == 1 {
		return G.Nodes{m}
	}
	bs := make(G.Nodes, len(heights))
	off := 0
	for i, h := range heights {
		bs[i] = e.Do(Take(m, 0, off, off+h))
		off += h
	}
	return bs
}

// stackedProducts returns the row blocks x_kᵀ·g stacked (Σ p_k × q): the
// gradient of W in Affine. One part is a plain MatMul.
func stackedProducts(parts G.Nodes, g *G.Node) (*G.Node, error) {
	if len(parts) == 1 {
		return MatMul(parts[0], g, true, false)
	}
	op := stackedOp{n: g.Shape()[0], q: g.Shape()[1]}
	for _, x := range parts {
		op.widths = append(op.widths, x.Shape()[1])
	}
	return applyOp(op, append(append(G.Nodes(nil), parts...), g)...)
}

// stackedOp's inputs are the parts x_k, then g.
type stackedOp struct {
	pureOp
	n, q   int
	widths []int
}

func (op stackedOp) Arity() int { return len(op.widths) + 1 }
func (op stackedOp) Type() hm.Type {
	ins := make([]int, op.Arity())
	for i := range ins {
		ins[i] = 2
	}
	return fnType(2, ins...)
}
func (op stackedOp) rows() int {
	p := 0
	for _, w := range op.widths {
		p += w
	}
	return p
}
func (op stackedOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.rows(), op.q}, nil
}
func (op stackedOp) String() string {
	ws := make([]string, len(op.widths))
	for i, w := range op.widths {
		ws[i] = fmt.Sprint(w)
	}
	return fmt.Sprintf("StackedXtG(%d,[%s],%d)", op.n, strings.Join(ws, " "), op.q)
}
func (op stackedOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op stackedOp) Hashcode() uint32      { return hashOf(op) }
func (op stackedOp) DiffWRT(int) []bool    { return allDiff(op.Arity()) }

func (op stackedOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	g := in[len(op.widths)]
	out := op.buf.take(op.rows() * op.q)
	off := 0
	for part, p := range op.widths {
		multiplyAdds.Add(int64(op.n) * int64(op.q) * int64(p))
		blas64.Gemm(blas.Trans, blas.NoTrans, 1,
			blas64.General{Rows: op.n, Cols: p, Stride: p, Data: in[part]},
			blas64.General{Rows: op.n, Cols: op.q, Stride: op.q, Data: g},
			0, blas64.General{Rows: p, Cols: op.q, Stride: op.q, Data: out[off*op.q : (off+p)*op.q]})
		off += p
	}
	return op.buf.owned(tensor.Shape{op.rows(), op.q}, out), nil
}

// SymDiff with adjoint H: x̄_k = g·H_kᵀ, ḡ = Σ_k x_k·H_k.
func (op stackedOp) SymDiff(in G.Nodes, out, h *G.Node) (G.Nodes, error) {
	k := len(op.widths)
	parts, g := in[:k], in[k]
	grads := make(G.Nodes, 0, len(in))
	e := &Chain{}
	for _, blk := range rowBlocks(h, op.widths, e) {
		grads = append(grads, e.Do(MatMul(g, blk, false, true)))
	}
	grads = append(grads, e.Do(Affine(parts, h, nil, nil)))
	return grads, e.Err
}

func (op affineOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op stackedOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
