package graph

import (
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// powTerm is one term c·g ⊙ (x + shift)^p of a powSumOp.
type powTerm struct {
	p     int
	scale float64
}

// powSumOp is v·Σ_t c_t·g_t ⊙ (x + shift)^p_t, of the arguments x, v and
// g_1 … g_T, the terms in increasing power: the sum of the adjoints that a
// node entering several PowAffines gets from them (x̄ of a polynomial
// kernel's κ(x) and of its derivative κ'(x), NIMGP_FO's closed form).
// Separately they were a power pass each and an AddN pass; here the
// lowest power is raised once and the others follow from it by products.
type powSumOp struct {
	pureOp
	shift float64
	terms []powTerm
	shape tensor.Shape
}

// sumOfPowers replaces the contributions among ns that are PowAffines
// with a factor g (adjoints) of one x, v and shift, when there are two or
// more, by one powSumOp, and returns the new list.
func sumOfPowers(ns G.Nodes) (G.Nodes, error) {
	type key struct {
		x, v  *G.Node
		shift float64
	}
	groups := map[key][]int{}
	var order []key
	for i, n := range ns {
		op, ok := n.Op().(powAffineOp)
		if !ok || !op.withG {
			continue
		}
		in := Inputs(n)
		k := key{in[0], in[1], op.shift}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	drop := map[int]bool{}
	var sums G.Nodes
	for _, k := range order {
		idx := groups[k]
		if len(idx) < 2 {
			continue
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			return ns[a].Op().(powAffineOp).p - ns[b].Op().(powAffineOp).p
		})
		op := powSumOp{shift: k.shift, shape: k.x.Shape().Clone()}
		args := G.Nodes{k.x, k.v}
		for _, i := range idx {
			t := ns[i].Op().(powAffineOp)
			op.terms = append(op.terms, powTerm{p: t.p, scale: t.scale})
			args = append(args, Inputs(ns[i])[2])
			drop[i] = true
		}
		s, err := applyOp(op, args...)
		if err != nil {
			return nil, err
		}
		sums = append(sums, s)
	}
	if len(sums) == 0 {
		return ns, nil
	}
	out := sums
	for i, n := range ns {
		if !drop[i] {
			out = append(out, n)
		}
	}
	return out, nil
}

func (op powSumOp) Arity() int { return 2 + len(op.terms) }
func (op powSumOp) Type() hm.Type {
	d := op.shape.Dims()
	ins := []int{d, 0}
	for range op.terms {
		ins = append(ins, d)
	}
	return fnType(d, ins...)
}
func (op powSumOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op powSumOp) String() string {
	var b strings.Builder
	for i, t := range op.terms {
		if i > 0 {
			b.WriteString("+")
		}
		fmt.Fprintf(&b, "%g^%d", t.scale, t.p)
	}
	return fmt.Sprintf("PowSum(%g,%s,%v)", op.shift, b.String(), op.shape)
}
func (op powSumOp) WriteHash(h hash.Hash)  { writeHash(h, op) }
func (op powSumOp) Hashcode() uint32       { return hashOf(op) }
func (op powSumOp) DiffWRT(n int) []bool   { return allDiff(n) }
func (op powSumOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

func (op powSumOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	x, v := in[0], in[1]
	if len(v) != 1 {
		return nil, fmt.Errorf("graph: %v got a factor of %d values", op, len(v))
	}
	gs := in[2:]
	for _, g := range gs {
		if len(g) != len(x) {
			return nil, fmt.Errorf("graph: %v got %d and %d values", op, len(x), len(g))
		}
	}
	out := op.buf.take(len(x))
	cost := powAffineCost + float64(len(gs))
	if !splits(len(x), intPowBlock, cost) {
		op.block(out, x, gs, v[0], 0, len(x))
	} else {
		parallelFor(len(x), intPowBlock, cost, func(lo, hi int) { op.block(out, x, gs, v[0], lo, hi) })
	}
	return op.buf.owned(op.shape, out), nil
}

// block computes elements [lo, hi): (x+shift)^p of the lowest power as
// PowAffine raises it, times x+shift once per unit step up to each next
// power, each term added with its factor c_t·v.
func (op powSumOp) block(out, x []float64, gs [][]float64, v float64, lo, hi int) {
	if len(op.terms) == 2 { // κ and κ': AVX-512 takes the leading multiple of eight
		t0, t1 := op.terms[0], op.terms[1]
		lo += gemm.PowSum2(out[lo:hi], x[lo:hi], gs[0][lo:hi], gs[1][lo:hi], t0.p, t1.p-t0.p, op.shift, t0.scale*v, t1.scale*v)
	}
	var r, b [intPowBlock]float64
	for s := lo; s < hi; s += intPowBlock {
		e := min(s+intPowBlock, hi)
		n := e - s
		rs, bs := r[:n], b[:n]
		intPowShift(rs, x[s:e], nil, op.terms[0].p, op.shift, 1)
		for i, xv := range x[s:e] {
			bs[i] = xv + op.shift
		}
		os := out[s:e]
		p := op.terms[0].p
		for t, term := range op.terms {
			for ; p < term.p; p++ {
				for i := range rs {
					rs[i] *= bs[i]
				}
			}
			c, g := term.scale*v, gs[t][s:e]
			if t == 0 {
				for i := range os {
					os[i] = rs[i] * g[i] * c
				}
				continue
			}
			for i := range os {
				os[i] += rs[i] * g[i] * c
			}
		}
	}
}

// SymDiff: the terms' own reverse passes (PowAffine's), summed.
func (op powSumOp) SymDiff(in G.Nodes, out, gy *G.Node) (G.Nodes, error) {
	x, v := in[0], in[1]
	grads := make(G.Nodes, len(in))
	var xs, vs G.Nodes
	for t, term := range op.terms {
		y, err := powAffine(x, v, in[2+t], op.shift, term.p, term.scale)
		if err != nil {
			return nil, err
		}
		g, err := y.Op().(powAffineOp).SymDiff(G.Nodes{x, v, in[2+t]}, y, gy)
		if err != nil {
			return nil, err
		}
		xs, vs, grads[2+t] = append(xs, g[0]), append(vs, g[1]), g[2]
	}
	var err error
	if grads[0], err = addAll(xs); err != nil {
		return nil, err
	}
	grads[1], err = addAll(vs)
	return grads, err
}
