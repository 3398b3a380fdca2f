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

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// matMulSumOp computes Σ_i op(A_i)·op(B_i) with every product accumulated
// into one output by Gemm (beta = 1). Backprop builds it when a node's
// gradient contributions are matrix products, as when a batch of inputs
// feeds every class's kernel: ten products summed this way need one
// output buffer instead of ten and no separate addition pass.
type matMulSumOp struct {
	pureOp
	terms []matMulOp
}

// sumOfProducts replaces the MatMul nodes among ns by one matMulSumOp
// node; ns must have one shape. It returns the remaining nodes with the
// new one first, or ns unchanged when fewer than two are products.
func sumOfProducts(ns G.Nodes) (G.Nodes, error) {
	var terms []matMulOp
	var args, rest G.Nodes
	for _, n := range ns {
		if op, ok := n.Op().(matMulOp); ok {
			terms = append(terms, op)
			args = append(args, children(n)...)
			continue
		}
		rest = append(rest, n)
	}
	if len(terms) < 2 {
		return ns, nil
	}
	s, err := applyOp(matMulSumOp{terms: terms}, args...)
	if err != nil {
		return nil, err
	}
	return append(G.Nodes{s}, rest...), nil
}

func (op matMulSumOp) Arity() int { return 2 * len(op.terms) }
func (op matMulSumOp) Type() hm.Type {
	ins := make([]int, 2*len(op.terms))
	for i := range ins {
		ins[i] = 2
	}
	return fnType(2, ins...)
}
func (op matMulSumOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.terms[0].m, op.terms[0].n}, nil
}
func (op matMulSumOp) String() string {
	parts := make([]string, len(op.terms))
	for i, t := range op.terms {
		parts[i] = t.String()
	}
	return "Sum(" + strings.Join(parts, "+") + ")"
}
func (op matMulSumOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op matMulSumOp) Hashcode() uint32      { return hashOf(op) }
func (op matMulSumOp) DiffWRT(int) []bool {
	return allDiff(op.Arity())
}

func (op matMulSumOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	m, n := op.terms[0].m, op.terms[0].n
	c := op.buf.take(m * n)
	terms := op.buf.termsOf(len(op.terms))
	r := 0 // outer products (k = 1)
	for i, t := range op.terms {
		if t.m != m || t.n != n {
			return nil, fmt.Errorf("graph: sum of products of shapes %d×%d and %d×%d", m, n, t.m, t.n)
		}
		if t.k == 1 {
			r++
			continue
		}
		multiplyAdds.Add(int64(t.m) * int64(t.n) * int64(t.k))
		terms = append(terms, gemm.Term{TA: t.ta, TB: t.tb, K: t.k, Alpha: 1, A: in[2*i], LDA: t.ac, B: in[2*i+1], LDB: t.bc})
	}
	if r > 0 {
		// Outer products a_t b_tᵀ (k = 1; either transpose stores a vector
		// contiguously) summed one at a time are rank-1 updates,
		// memory-bound passes over C; side by side they are one product
		// [a_1 … a_T][b_1 … b_T]ᵀ.
		ab := op.buf.scratchOf(m*r + r*n)
		as, bs := ab[:m*r], ab[m*r:]
		q := 0
		for i, t := range op.terms {
			if t.k != 1 {
				continue
			}
			for row, v := range in[2*i][:m] {
				as[row*r+q] = v
			}
			copy(bs[q*n:(q+1)*n], in[2*i+1][:n])
			q++
		}
		multiplyAdds.Add(int64(m) * int64(n) * int64(r))
		terms = append(terms, gemm.Term{K: r, Alpha: 1, A: as, LDA: r, B: bs, LDB: n})
	}
	sumProducts(m, n, terms, c)
	clear(terms) // let go of the inputs' data
	return op.buf.owned(tensor.Shape{m, n}, c), nil
}

// sumProducts sets the m×n matrix c to the sum of the terms' products: in
// one gemm.DgemmSum, which keeps each block of c in cache across terms,
// when gpc's kernel is in use and the product is not a matrix-vector one;
// otherwise one Gemm per term through the installed BLAS.
func sumProducts(m, n int, terms []gemm.Term, c []float64) {
	if fusedSums && gemm.KernelName != "go" && m > 1 && n > 1 {
		gemm.DgemmSum(m, n, terms, 0, c, n)
		return
	}
	beta := 0.0 // the first product stores, later ones accumulate
	for _, t := range terms {
		ta, tb := blas.NoTrans, blas.NoTrans
		ar, ac, br, bc := m, t.K, t.K, n
		if t.TA {
			ta, ar, ac = blas.Trans, t.K, m
		}
		if t.TB {
			tb, br, bc = blas.Trans, n, t.K
		}
		blas64.Gemm(ta, tb, t.Alpha,
			blas64.General{Rows: ar, Cols: ac, Stride: t.LDA, Data: t.A},
			blas64.General{Rows: br, Cols: bc, Stride: t.LDB, Data: t.B},
			beta, blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
		beta = 1
	}
}

// SymDiff: each term's adjoints, as for a single MatMul.
func (op matMulSumOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	grads := make(G.Nodes, 0, len(in))
	for i, t := range op.terms {
		gr, err := t.SymDiff(in[2*i:2*i+2], out, g)
		if err != nil {
			return nil, err
		}
		grads = append(grads, gr...)
	}
	return grads, nil
}

func (op matMulSumOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
