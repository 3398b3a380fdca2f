package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// PowAffine returns v·(x + shift)^p elementwise, for an integer p ≥ 0 and
// a scalar node v: the polynomial kernel σ²(x·diag(w)·zᵀ + 1)^p from its
// weighted inner products.
//
// Why one op: built from an addition, an IntPow and the variance's
// product, the kernel was three passes over the matrix forward and five
// back (the variance's product with ḡ, ḡ ⊙ (x+1)^p and its sum, the
// power's adjoint); on MNIST (ten 100×200 and 100×100 kernels a step)
// those passes were a tenth of an MGP step. Here the forward is one pass
// and the reverse two: x̄ = v·p·ḡ ⊙ (x+shift)^(p−1), again a PowAffine
// (with ḡ as a factor), so it can be differentiated again, and
// v̄ = Σ ḡ ⊙ y / v. The forward rounds as the chain did: the power of
// x + shift by binary exponentiation, then times v. v̄ divides by v, so v
// must be nonzero (a kernel variance is positive).
func PowAffine(x, v *G.Node, shift float64, p int) (*G.Node, error) {
	return PowAffineScaled(x, v, shift, p, 1)
}

// PowAffineScaled returns c·v·(x + shift)^p, PowAffine with a constant
// factor: a polynomial kernel's derivative σ²p(x + 1)^(p−1) with its
// variance node itself as v, so that its adjoint and the kernel's own
// (both PowAffines of x and v) are summed in one pass (see Backprop).
func PowAffineScaled(x, v *G.Node, shift float64, p int, c float64) (*G.Node, error) {
	if p < 0 {
		return nil, fmt.Errorf("graph.PowAffine: negative power %d", p)
	}
	if !v.Shape().IsScalar() {
		return nil, fmt.Errorf("graph.PowAffine: want a scalar factor, got shape %v", v.Shape())
	}
	for _, a := range []*G.Node{x, v} {
		if a.Dtype() != tensor.Float64 {
			return nil, fmt.Errorf("graph.PowAffine: %v has dtype %v, want float64", a.Name(), a.Dtype())
		}
	}
	return applyOp(powAffineOp{p: p, shift: shift, scale: c, shape: x.Shape().Clone()}, x, v)
}

// powAffineOp is scale·v·g ⊙ (x + shift)^p, the factor g an argument
// when withG (the adjoints' form).
type powAffineOp struct {
	pureOp
	p            int
	shift, scale float64
	withG        bool
	shape        tensor.Shape
}

// powAffine applies the op to x and v, and to g if it is not nil.
func powAffine(x, v, g *G.Node, shift float64, p int, scale float64) (*G.Node, error) {
	op := powAffineOp{p: p, shift: shift, scale: scale, shape: x.Shape().Clone()}
	if g == nil {
		return applyOp(op, x, v)
	}
	if !g.Shape().Eq(x.Shape()) {
		return nil, fmt.Errorf("graph.PowAffine: factor of shape %v for input %v", g.Shape(), x.Shape())
	}
	op.withG = true
	return applyOp(op, x, v, g)
}

func (op powAffineOp) Arity() int {
	if op.withG {
		return 3
	}
	return 2
}
func (op powAffineOp) Type() hm.Type {
	d := op.shape.Dims()
	if op.withG {
		return fnType(d, d, 0, d)
	}
	return fnType(d, d, 0)
}
func (op powAffineOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op powAffineOp) String() string {
	g := ""
	if op.withG {
		g = ",g"
	}
	return fmt.Sprintf("PowAffine(%d,%g,%g%s,%v)", op.p, op.shift, op.scale, g, op.shape)
}
func (op powAffineOp) WriteHash(h hash.Hash)  { writeHash(h, op) }
func (op powAffineOp) Hashcode() uint32       { return hashOf(op) }
func (op powAffineOp) DiffWRT(n int) []bool   { return allDiff(n) }
func (op powAffineOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// powAffineCost is the time of one element in nanoseconds (a squaring or
// product per bit of p, blocked).
const powAffineCost = 2.0

func (op powAffineOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	x, v := in[0], in[1]
	if len(v) != 1 {
		return nil, fmt.Errorf("graph: %v got a factor of %d values", op, len(v))
	}
	var g []float64
	if op.withG {
		if g = in[2]; len(g) != len(x) {
			return nil, fmt.Errorf("graph: %v got %d and %d values", op, len(x), len(g))
		}
	}
	out := op.buf.take(len(x))
	s := op.scale * v[0]
	if !splits(len(x), intPowBlock, powAffineCost) {
		intPowShift(out, x, g, op.p, op.shift, s)
	} else {
		parallelFor(len(x), intPowBlock, powAffineCost, func(lo, hi int) {
			var gs []float64
			if g != nil {
				gs = g[lo:hi]
			}
			intPowShift(out[lo:hi], x[lo:hi], gs, op.p, op.shift, s)
		})
	}
	return op.buf.owned(op.shape, out), nil
}

// SymDiff of y = c·v·g ⊙ (x+s)^p (g = 1 when absent):
// x̄ = c·p·v·(g ⊙ ȳ) ⊙ (x+s)^(p−1), v̄ = Σ ȳ ⊙ y / v and
// ḡ = c·v·ȳ ⊙ (x+s)^p.
func (op powAffineOp) SymDiff(in G.Nodes, out, gy *G.Node) (G.Nodes, error) {
	x, v := in[0], in[1]
	e := &Chain{}
	f := gy
	if op.withG {
		f = e.Do(G.HadamardProd(in[2], gy))
	}
	var gx *G.Node
	if op.p == 0 {
		gx = e.Do(powAffine(x, v, f, op.shift, 0, 0))
	} else {
		gx = e.Do(powAffine(x, v, f, op.shift, op.p-1, op.scale*float64(op.p)))
	}
	gv := e.Do(G.Div(e.Do(Inner(gy, out)), v))
	grads := G.Nodes{gx, gv}
	if op.withG {
		grads = append(grads, e.Do(powAffine(x, v, gy, op.shift, op.p, op.scale)))
	}
	return grads, e.Err
}

// intPowShift sets out = scale·(x+shift)^p, times g elementwise when g is
// not nil, a block of intPowBlock elements at a time: each squaring or
// product then runs over a block, independent multiplies the processor
// overlaps. The multiplications are in the order of binary
// exponentiation, so that the value is the per-element loop's bit for bit.
func intPowShift(out, x, g []float64, p int, shift, scale float64) {
	// AVX-512 takes the leading multiple of eight, bit for bit this loop.
	if done := gemm.PowShift(out, x, g, p, shift, scale); done > 0 {
		out, x = out[done:], x[done:]
		if g != nil {
			g = g[done:]
		}
	}
	var r, b [intPowBlock]float64
	for lo := 0; lo < len(x); lo += intPowBlock {
		xs := x[lo:min(lo+intPowBlock, len(x))]
		n := len(xs)
		rs, bs := r[:n], b[:n]
		if shift == 0 {
			copy(bs, xs)
		} else {
			for i, v := range xs {
				bs[i] = v + shift
			}
		}
		first := true // r is 1 until the first set bit
		for e := p; e > 0; e >>= 1 {
			if e&1 == 1 {
				if first {
					copy(rs, bs)
					first = false
				} else {
					for i := range rs {
						rs[i] *= bs[i]
					}
				}
			}
			if e > 1 {
				for i := range bs {
					bs[i] *= bs[i]
				}
			}
		}
		if first {
			for i := range rs {
				rs[i] = 1
			}
		}
		os := out[lo : lo+n]
		switch {
		case g != nil:
			gs := g[lo : lo+n]
			for i := range os {
				os[i] = rs[i] * gs[i] * scale
			}
		case scale != 1:
			for i := range os {
				os[i] = rs[i] * scale
			}
		default:
			copy(os, rs)
		}
	}
}
