package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// ExpQuad returns the n×m matrix K_ij = v·exp(−½(xx_i + zz_j − 2c_ij)):
// the squared-exponential kernel from the weighted cross products c
// (n×m), the weighted squared norms xx (n) and zz (m) and the variance v
// (a scalar). xx and zz may be the same node (K(Z, Z)).
//
// Why one op: built from broadcasts, a sum, a difference, two scalings, an
// exponential and the variance's product, the kernel was eight passes over
// n×m forward and about as many back; at the UCI shape (300 inducing
// points, batches of 1024) those passes were a sixth of a binary step. Here
// the forward is one pass, and the reverse W = ḡ ⊙ K, c̄ = W,
// x̄x = −½ Σ_j W_ij, z̄z = −½ Σ_i W_ij and v̄ = Σ_ij W_ij / v is three,
// built from differentiable ops so that it can be differentiated again
// (NIMGP_FO's gradient of the predictive mean). The forward rounds exactly
// as the unfused chain did: v·exp(((xx_i + zz_j) − 2c_ij)·(−½)). v̄ divides
// by v, so v must be nonzero (a kernel variance is positive).
func ExpQuad(c, xx, zz, v *G.Node) (*G.Node, error) {
	if err := checkQuadArgs("ExpQuad", c, xx, zz, v); err != nil {
		return nil, err
	}
	cs := c.Shape()
	return applyOp(expQuadOp{n: cs[0], m: cs[1]}, c, xx, zz, v)
}

// checkQuadArgs checks what a fused stationary kernel (ExpQuad, Matern)
// takes: an n×m matrix of weighted cross products, the n- and m-vectors of
// weighted squared norms and a scalar variance, all float64.
func checkQuadArgs(op string, c, xx, zz, v *G.Node) error {
	cs, xs, zs := c.Shape(), xx.Shape(), zz.Shape()
	if len(cs) != 2 || len(xs) != 1 || len(zs) != 1 || xs[0] != cs[0] || zs[0] != cs[1] || !v.Shape().IsScalar() {
		return fmt.Errorf("graph.%s: want an n×m matrix, an n-vector, an m-vector and a scalar, got %v, %v, %v and %v", op, cs, xs, zs, v.Shape())
	}
	for _, a := range []*G.Node{c, xx, zz, v} {
		if a.Dtype() != tensor.Float64 {
			return fmt.Errorf("graph.%s: %v has dtype %v, want float64", op, a.Name(), a.Dtype())
		}
	}
	return nil
}

type expQuadOp struct {
	pureOp
	n, m int
}

func (op expQuadOp) Arity() int    { return 4 }
func (op expQuadOp) Type() hm.Type { return fnType(2, 2, 1, 1, 0) }
func (op expQuadOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.m}, nil
}
func (op expQuadOp) String() string        { return fmt.Sprintf("ExpQuad(%d,%d)", op.n, op.m) }
func (op expQuadOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op expQuadOp) Hashcode() uint32      { return hashOf(op) }
func (op expQuadOp) DiffWRT(int) []bool    { return []bool{true, true, true, true} }

// expQuadCost is the time of one element in nanoseconds (an exponential,
// four at a time by expSlice, and two passes over the row).
const expQuadCost = 2.5

func (op expQuadOp) Do(vs ...G.Value) (G.Value, error) {
	var in [4][]float64
	for i, v := range vs {
		f, err := Float64s(v)
		if err != nil {
			return nil, err
		}
		in[i] = f
	}
	n, m := op.n, op.m
	if len(in[0]) != n*m || len(in[1]) != n || len(in[2]) != m || len(in[3]) != 1 {
		return nil, fmt.Errorf("graph: %v got %d, %d, %d and %d values", op, len(in[0]), len(in[1]), len(in[2]), len(in[3]))
	}
	out := op.buf.take(n * m)
	if splits(n*m, m, expQuadCost) {
		parallelFor(n*m, m, expQuadCost, func(lo, hi int) { expQuadRows(in, out, m, lo/m, hi/m) })
	} else {
		expQuadRows(in, out, m, 0, n)
	}
	return op.buf.owned(tensor.Shape{n, m}, out), nil
}

// expQuadRows fills rows [lo, hi) of K.
func expQuadRows(in [4][]float64, out []float64, m, lo, hi int) {
	c, xx, zz, v := in[0], in[1], in[2], in[3][0]
	for i := lo; i < hi; i++ {
		// The exponent's and the variance's loops eight lanes at a time,
		// each lane rounding as the element-by-element loops did (those
		// were as long as the exponentials themselves).
		row := out[i*m : (i+1)*m]
		gemm.QuadArg(row, zz, c[i*m:(i+1)*m], xx[i])
		expSlice(row, row)
		gemm.Scale(row, v)
	}
}

func (op expQuadOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	e := &Chain{}
	w := e.Do(Map(product, g, out))
	rows := e.Do(G.Sum(w, 1))
	cols := e.Do(G.Sum(w, 0))
	half := G.NewConstant(-0.5)
	gxx := e.Do(G.HadamardProd(rows, half))
	gzz := e.Do(G.HadamardProd(cols, half))
	gv := e.Do(G.Div(e.Do(G.Sum(rows)), in[3]))
	return G.Nodes{w, gxx, gzz, gv}, e.Err
}

func (op expQuadOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }
