package graph

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// knownSymmetric reports whether n's value is an exactly symmetric square
// matrix by construction: the output of an op that mirrors (a weighted Gram
// matrix, Sym, the Cholesky reverse pass), or an elementwise op whose
// matrix arguments are all such and whose others are scalars (the same
// operations on equal values give equal results, to the bit). A reverse
// pass that would symmetrise its adjoint can then skip the pass. False
// means unknown.
func knownSymmetric(n *G.Node) bool { return symmetricAt(n, 12) }

func symmetricAt(n *G.Node, depth int) bool {
	s := n.Shape()
	if depth == 0 || len(s) != 2 || s[0] != s[1] || n.Op() == nil {
		return false
	}
	switch op := n.Op().(type) {
	case weightedGramOp, symOp, cholGradOp:
		return true
	case diagOp:
		return !op.toVec
	case scaleSymOp:
		return !op.grad && symmetricAt(children(n)[0], depth-1)
	case matMulOp:
		// An outer product a·aᵀ (Outer(a, a)): a_i·a_j either way round.
		ch := children(n)
		return op.k == 1 && vectorOf(ch[0]) == vectorOf(ch[1])
	case elemOp:
		if op.reduce || op.rowArgs != 0 {
			return false
		}
	case powAffineOp, powSumOp, addNOp:
	default:
		// Gorgonia's elementwise binary ops (⊙, +, −, ÷), their types
		// unexported.
		if fmt.Sprintf("%T", op) != "gorgonia.elemBinOp" {
			return false
		}
	}
	for _, c := range children(n) {
		cs := c.Shape()
		if cs.IsScalar() || (len(cs) == 1 && cs[0] == 1) {
			continue
		}
		if len(cs) != 2 || cs[0] != s[0] || cs[1] != s[1] || !symmetricAt(c, depth-1) {
			return false
		}
	}
	return true
}

// vectorOf sees through a reshape to the node reshaped.
func vectorOf(n *G.Node) *G.Node {
	if _, ok := n.Op().(reshapeOp); ok {
		return children(n)[0]
	}
	return n
}
