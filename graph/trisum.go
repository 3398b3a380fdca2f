package graph

import (
	"fmt"
	"hash"
	"strings"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// triProdSumOp is Σ_t TriProd_t + Σ_j diag(d_j): a triangular factor's
// gradient contributions as one op. A Cholesky factor shared by C latent
// functions collects three triangles from each (the batch's solve, the
// whitened factor's, the mean's) and a diagonal from its log-determinant:
// written out and summed by an AddN they were 3C+2 passes over an M×M
// matrix; here each block of the sum stays in cache across the terms and
// the diagonals are added to it in place.
type triProdSumOp struct {
	pureOp
	terms []triProdOp
	diags int // vectors added to the diagonal, after the terms' arguments
}

// sumOfTriangles replaces the TriProd nodes among ns (one shape) and, when
// there is one, the DiagMatrix ones by one triProdSumOp node, first in the
// returned nodes; ns is returned unchanged when there is nothing to merge
// (fewer than two such nodes, or no TriProd).
func sumOfTriangles(ns G.Nodes) (G.Nodes, error) {
	var terms []triProdOp
	var prods, diags, rest G.Nodes
	for _, n := range ns {
		switch op := n.Op().(type) {
		case triProdOp:
			if len(terms) == 0 || (op.lower == terms[0].lower && op.m == terms[0].m) {
				terms = append(terms, op)
				prods = append(prods, children(n)...)
				continue
			}
		case diagOp:
			if !op.toVec {
				diags = append(diags, children(n)...)
				continue
			}
		}
		rest = append(rest, n)
	}
	if len(terms) == 0 || len(terms)+len(diags) < 2 {
		return ns, nil
	}
	s, err := applyOp(triProdSumOp{terms: terms, diags: len(diags)}, append(prods, diags...)...)
	if err != nil {
		return nil, err
	}
	return append(G.Nodes{s}, rest...), nil
}

func (op triProdSumOp) Arity() int { return 2*len(op.terms) + op.diags }
func (op triProdSumOp) Type() hm.Type {
	ins := make([]int, op.Arity())
	for i := range ins {
		ins[i] = 2
		if i >= 2*len(op.terms) {
			ins[i] = 1
		}
	}
	return fnType(2, ins...)
}
func (op triProdSumOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.terms[0].m, op.terms[0].m}, nil
}
func (op triProdSumOp) String() string {
	parts := make([]string, len(op.terms))
	for i, t := range op.terms {
		parts[i] = t.String()
	}
	return fmt.Sprintf("Sum(%s+%d diagonals)", strings.Join(parts, "+"), op.diags)
}
func (op triProdSumOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op triProdSumOp) Hashcode() uint32      { return hashOf(op) }
func (op triProdSumOp) DiffWRT(int) []bool    { return allDiff(op.Arity()) }

func (op triProdSumOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	m, lower := op.terms[0].m, op.terms[0].lower
	c := op.buf.take(m * m)
	if gemm.KernelName == "go" {
		clear(c)
		tmp := op.buf.scratchOf(m * m)
		for i, t := range op.terms {
			t.into(in[2*i], in[2*i+1], tmp)
			for j, v := range tmp {
				c[j] += v
			}
		}
	} else {
		terms := op.buf.termsOf(len(op.terms))
		r := 0 // outer products with alpha ±1, stacked into one term
		for i, t := range op.terms {
			multiplyAdds.Add(int64(m) * int64(m+1) / 2 * int64(t.k))
			if t.k == 1 && (t.alpha == 1 || t.alpha == -1) {
				r++
				continue
			}
			terms = append(terms, gemm.Term{TB: true, K: t.k, Alpha: t.alpha, A: in[2*i], LDA: t.k, B: in[2*i+1], LDB: t.k})
		}
		if r > 0 {
			// [alpha_1·u_1 … alpha_r·u_r]·[v_1 … v_r]ᵀ: the sign is exact.
			ab := op.buf.scratchOf(2 * m * r)
			as, bs := ab[:m*r], ab[m*r:]
			q := 0
			for i, t := range op.terms {
				if t.k != 1 || (t.alpha != 1 && t.alpha != -1) {
					continue
				}
				for row, u := range in[2*i][:m] {
					as[row*r+q] = t.alpha * u
				}
				for row, v := range in[2*i+1][:m] {
					bs[row*r+q] = v
				}
				q++
			}
			terms = append(terms, gemm.Term{TB: true, K: r, Alpha: 1, A: as, LDA: r, B: bs, LDB: r})
		}
		gemm.DgemmTriSum(lower, m, terms, c, m)
		clear(terms) // let go of the inputs' data
	}
	for _, d := range in[2*len(op.terms):] {
		for i, v := range d[:m] {
			c[i*m+i] += v
		}
	}
	return op.buf.owned(tensor.Shape{m, m}, c), nil
}

// SymDiff: each term's adjoints, as for a single TriProd, and each
// diagonal's, the gradient's diagonal.
func (op triProdSumOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	grads := make(G.Nodes, 0, len(in))
	for i, t := range op.terms {
		gr, err := t.SymDiff(in[2*i:2*i+2], out, g)
		if err != nil {
			return nil, err
		}
		grads = append(grads, gr...)
	}
	if op.diags > 0 {
		d, err := Diag(g)
		if err != nil {
			return nil, err
		}
		for range op.diags {
			grads = append(grads, d)
		}
	}
	return grads, nil
}

func (op triProdSumOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
