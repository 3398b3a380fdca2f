package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// QuadForm returns the n-vector of quadratic forms q_j = k_jᵀ A k_j of the
// columns k_j of an m×n matrix K with an m×m matrix A: column sums of
// K ⊙ (A K). NIMGP_FO's first-order variances are such forms, one per
// point, with A the inducing inputs' weighted Gram matrix (see
// variational.Built.InflatedClassMarginals).
//
// Why not composed: as MatMul, ⊙ and a sum over rows, the form was three
// products of A's size times n (the forward and two in the reverse pass)
// and five passes over the m×n intermediates, with K's two adjoint
// contributions summed in another. Here T = ½(A + Aᵀ) K is a node (one
// product; T = A K to the last bit when A is symmetric) and q the column
// sums of K ⊙ T (one pass), whose reverse pass is, for q as a function of
// A and K, Ā = K diag(q̄) Kᵀ, a Gram matrix of which one triangle is
// computed, and K̄ = 2 T diag(q̄), a scaling of T: one product and a half
// in all, where the composed form took three. (The sums node hands no
// adjoint to T itself: it gives A and K theirs through T.) The adjoints
// are nodes of differentiable ops, so the form can be differentiated
// twice; T's own reverse pass serves the second order.
func QuadForm(a, k *G.Node) (*G.Node, error) {
	as, ks := a.Shape(), k.Shape()
	if len(as) != 2 || len(ks) != 2 || as[0] != as[1] || as[0] != ks[0] {
		return nil, fmt.Errorf("graph.QuadForm: want an m×m and an m×n matrix, got shapes %v and %v", as, ks)
	}
	for _, x := range []*G.Node{a, k} {
		if x.Dtype() != tensor.Float64 {
			return nil, fmt.Errorf("graph.QuadForm: %v has dtype %v, want float64", x.Name(), x.Dtype())
		}
	}
	// A symmetric by construction (NIMGP_FO's S ∘ ααᵀ) is its own
	// ½(A + Aᵀ), to the bit: the product reads it without the pass.
	sym := symmetricAdjoints && knownSymmetric(a)
	t, err := applyOp(quadFormOp{m: ks[0], n: ks[1], product: true, symmetric: sym}, a, k)
	if err != nil {
		return nil, err
	}
	return applyOp(quadFormOp{m: ks[0], n: ks[1]}, a, k, t)
}

// quadFormOp is the column sums of K ⊙ T of arguments A, K and
// T = ½(A + Aᵀ) K, differentiated as a function of A and K alone; with
// product it is T itself, of arguments A and K.
type quadFormOp struct {
	pureOp
	m, n    int
	product bool
	// symmetric: A is known to be symmetric (product only).
	symmetric bool
}

func (op quadFormOp) Arity() int {
	if op.product {
		return 2
	}
	return 3
}
func (op quadFormOp) Type() hm.Type {
	if op.product {
		return fnType(2, 2, 2)
	}
	return fnType(1, 2, 2, 2)
}
func (op quadFormOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.product {
		return tensor.Shape{op.m, op.n}, nil
	}
	return tensor.Shape{op.n}, nil
}
func (op quadFormOp) String() string {
	if op.product {
		return fmt.Sprintf("QuadFormT(%dx%d)", op.m, op.n)
	}
	return fmt.Sprintf("QuadForm(%dx%d)", op.m, op.n)
}
func (op quadFormOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op quadFormOp) Hashcode() uint32      { return hashOf(op) }

// DiffWRT: the sums pass no adjoint to T (see QuadForm).
func (op quadFormOp) DiffWRT(n int) []bool {
	d := allDiff(n)
	if !op.product && n == 3 {
		d[2] = false
	}
	return d
}
func (op quadFormOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op quadFormOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	m, n := op.m, op.n
	a, k := in[0], in[1]
	if len(a) != m*m || len(k) != m*n || (!op.product && len(in[2]) != m*n) {
		return nil, fmt.Errorf("graph: %v got %d and %d values", op, len(a), len(k))
	}
	if op.product {
		s := a
		if !op.symmetric {
			s = op.buf.scratchOf(m * m)
			symmetrize(s, a, m, 0.5)
		}
		multiplyAdds.Add(int64(m) * int64(m) * int64(n))
		out := op.buf.take(m * n)
		gemm.Dgemm(false, false, m, n, m, 1, s, m, k, n, 0, out, n)
		return op.buf.owned(tensor.Shape{m, n}, out), nil
	}
	t := in[2]
	out := op.buf.take(n)
	clear(out)
	for i := 0; i < m; i++ {
		gemm.MulAdd(out, k[i*n:(i+1)*n], t[i*n:(i+1)*n])
	}
	return op.buf.owned(tensor.Shape{n}, out), nil
}

// SymDiff of q = colsum(K ⊙ T) as a function of A and K: Ā = K diag(q̄) Kᵀ,
// K̄ = 2 T diag(q̄). Of T = ½(A + Aᵀ) K: Ā = ½(T̄ Kᵀ + K T̄ᵀ),
// K̄ = ½(A + Aᵀ) T̄ (the second order only, where T̄ comes from K̄ above).
func (op quadFormOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	a, k := in[0], in[1]
	e := &Chain{}
	if op.product {
		ga := e.Do(symScaled(e.Do(MatMul(g, k, false, true)), 0.5))
		gk := e.Do(MatMul(e.Do(symScaled(a, 0.5)), g, false, false))
		return G.Nodes{ga, gk}, e.Err
	}
	ga := e.Do(WeightedDot(k, k, g))
	gk := e.Do(ScaleColumns(in[2], e.Do(G.HadamardProd(g, G.NewConstant(2.0)))))
	return G.Nodes{ga, gk, nil}, e.Err
}
