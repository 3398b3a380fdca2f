package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ScaleSym returns diag(a)·S·diag(a) for an n×n S and an n-vector a, each
// element (a_i·a_j)·S_ij: S ⊙ Outer(a, a) to the bit (NIMGP_FO's
// inducing-input Gram matrix weighted by ααᵀ).
//
// Why not composed: the outer product, the Hadamard product and their
// reverse passes (two Hadamards, two matrix-vector products, reshapes and
// a sum) were eight ops per class for a 100×100 matrix. Here the forward
// pass is one; the reverse pass two: S̄ = ScaleSym(Ḡ, a), and ā with
// ā_i = Σ_j a_j·(Ḡ_ij·S_ij + Ḡ_ji·S_ji), one pass over Ḡ and S.
func ScaleSym(s, a *G.Node) (*G.Node, error) {
	ss, as := s.Shape(), a.Shape()
	if len(ss) != 2 || ss[0] != ss[1] || len(as) != 1 || as[0] != ss[0] {
		return nil, fmt.Errorf("graph.ScaleSym: want an n×n matrix and an n-vector, got shapes %v and %v", ss, as)
	}
	return applyOp(scaleSymOp{n: ss[0]}, s, a)
}

// scaleSymOp is diag(a) S diag(a) of arguments S and a; with grad, the
// adjoint of a for arguments Ḡ, S and a.
type scaleSymOp struct {
	pureOp
	n    int
	grad bool
}

func (op scaleSymOp) Arity() int {
	if op.grad {
		return 3
	}
	return 2
}
func (op scaleSymOp) Type() hm.Type {
	if op.grad {
		return fnType(1, 2, 2, 1)
	}
	return fnType(2, 2, 1)
}
func (op scaleSymOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return tensor.Shape{op.n}, nil
	}
	return tensor.Shape{op.n, op.n}, nil
}
func (op scaleSymOp) String() string {
	if op.grad {
		return fmt.Sprintf("ScaleSymGrad(%d)", op.n)
	}
	return fmt.Sprintf("ScaleSym(%d)", op.n)
}
func (op scaleSymOp) WriteHash(h hash.Hash)  { writeHash(h, op) }
func (op scaleSymOp) Hashcode() uint32       { return hashOf(op) }
func (op scaleSymOp) DiffWRT(n int) []bool   { return allDiff(n) }
func (op scaleSymOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op scaleSymOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	n := op.n
	if op.grad {
		g, s, a := in[0], in[1], in[2]
		if len(g) != n*n || len(s) != n*n || len(a) != n {
			return nil, fmt.Errorf("graph: %v got %d, %d and %d values", op, len(g), len(s), len(a))
		}
		// Row by row: h_ij = Ḡ_ij·S_ij goes to ā_i (times a_j) and to ā_j
		// (times a_i), so both matrices are read in order once.
		out := op.buf.take(n)
		clear(out)
		for i := range n {
			grow, srow := g[i*n:(i+1)*n], s[i*n:(i+1)*n]
			ai := a[i]
			var acc float64
			for j, gij := range grow {
				h := gij * srow[j]
				acc += a[j] * h
				out[j] += ai * h
			}
			out[i] += acc
		}
		return op.buf.owned(tensor.Shape{n}, out), nil
	}
	s, a := in[0], in[1]
	if len(s) != n*n || len(a) != n {
		return nil, fmt.Errorf("graph: %v got %d and %d values", op, len(s), len(a))
	}
	out := op.buf.take(n * n)
	for i := range n {
		ai := a[i]
		row, srow := out[i*n:(i+1)*n], s[i*n:(i+1)*n]
		for j, aj := range a {
			row[j] = (ai * aj) * srow[j]
		}
	}
	return op.buf.owned(tensor.Shape{n, n}, out), nil
}

// SymDiff: S̄ = ScaleSym(Ḡ, a) and ā from the grad form. Of the grad form
// ā = (H + Hᵀ)a with H = Ḡ ⊙ S, for the adjoint h of ā: ā's own adjoint
// is (H + Hᵀ)h, and H̄ = h aᵀ + a hᵀ reaches Ḡ and S through the Hadamard
// product (composed ops: second order only).
func (op scaleSymOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	e := &Chain{}
	if !op.grad {
		s, a := in[0], in[1]
		gs := e.Do(ScaleSym(g, a))
		ga := e.Do(applyOp(scaleSymOp{n: op.n, grad: true}, g, s, a))
		return G.Nodes{gs, ga}, e.Err
	}
	gg, s, a := in[0], in[1], in[2]
	n := op.n
	col := func(v *G.Node) *G.Node { return e.Do(Reshape(v, tensor.Shape{n, 1})) }
	h := e.Do(G.HadamardProd(gg, s))
	hs := e.Do(symScaled(h, 1)) // H + Hᵀ
	gaa := e.Do(Reshape(e.Do(MatMul(hs, col(g), false, false)), tensor.Shape{n}))
	hbar := e.Do(G.Add(e.Do(Outer(g, a)), e.Do(Outer(a, g))))
	ggg := e.Do(G.HadamardProd(hbar, s))
	gs := e.Do(G.HadamardProd(hbar, gg))
	return G.Nodes{ggg, gs, gaa}, e.Err
}
