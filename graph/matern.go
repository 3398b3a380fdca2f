package graph

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// maternOffset keeps r = √(d + maternOffset) away from 0, where r's
// derivative is infinite while the kernel's is finite; it changes k by
// about 1e-12 of σ².
const maternOffset = 1e-12

// Matern returns the n×m Matérn kernel matrix K_ij = v·f(r_ij) for ν = 3/2
// or 5/2, from the weighted cross products c (n×m), the weighted squared
// norms xx (n) and zz (m) and the variance v (a scalar), as ExpQuad does
// for the squared exponential: the scaled squared distance is
// d_ij = max(0, xx_i + zz_j − 2c_ij), r = √(d + 1e-12), t = √(2ν)·r and
//
//	f = (1 + t)·e^(−t)          (ν = 3/2)
//	f = (1 + t + t²/3)·e^(−t)    (ν = 5/2).
//
// xx and zz may be the same node (K(Z, Z)).
//
// Why one op: built from Gorgonia's elementwise ops (the offset, a square
// root, two scalings, two additions, a negation, an exponential and two
// products), the kernel was ten passes over n×m forward and about twenty
// back; at the UCI shape of Table V (M = 300, batches of 1024, Matérn-5/2
// + RBF) they were a third of a binary step. Here the forward is one pass
// and the reverse four: D̄ = v·ḡ ⊙ f′(d) (again a Matern, of the
// derivative, so it can be differentiated again, up to the third
// derivative), its row and column sums, and v̄ = Σ ḡ ⊙ K / v. v̄ divides
// by v, so v must be nonzero (a kernel variance is positive).
func Matern(nu float64, c, xx, zz, v *G.Node) (*G.Node, error) {
	if nu != 1.5 && nu != 2.5 {
		return nil, fmt.Errorf("graph.Matern: ν = %g; only 3/2 and 5/2 are supported", nu)
	}
	if err := checkQuadArgs("Matern", c, xx, zz, v); err != nil {
		return nil, err
	}
	cs := c.Shape()
	return applyOp(maternOp{nu: nu, scale: 1, n: cs[0], m: cs[1]}, c, xx, zz, v)
}

// maternOp is scale·v·g ⊙ f⁽ᵒʳᵈᵉʳ⁾(d), the order-th derivative of the
// Matérn function with respect to the squared distance d, the factor g an
// argument when withG (the adjoints' form).
type maternOp struct {
	pureOp
	nu    float64
	order int
	scale float64
	withG bool
	n, m  int
}

// maternMaxOrder is the highest derivative with respect to d the op
// evaluates: the third, which a second-order check of a model that
// differentiates its kernel once (NIMGP_FO) reaches.
const maternMaxOrder = 3

func (op maternOp) Arity() int {
	if op.withG {
		return 5
	}
	return 4
}
func (op maternOp) Type() hm.Type {
	if op.withG {
		return fnType(2, 2, 1, 1, 0, 2)
	}
	return fnType(2, 2, 1, 1, 0)
}
func (op maternOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.m}, nil
}
func (op maternOp) String() string {
	g := ""
	if op.withG {
		g = ",g"
	}
	return fmt.Sprintf("Matern(%g,d%d,%g%s,%d,%d)", op.nu, op.order, op.scale, g, op.n, op.m)
}
func (op maternOp) WriteHash(h hash.Hash)  { writeHash(h, op) }
func (op maternOp) Hashcode() uint32       { return hashOf(op) }
func (op maternOp) DiffWRT(n int) []bool   { return allDiff(n) }
func (op maternOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// The constants of f″ and f‴ (scaleRow), computed once rather than per
// element: math.Sqrt of a constant is an instruction, not a constant.
var (
	matern32d2 = 3 * math.Sqrt(3) / 4
	matern32d3 = -3 * math.Sqrt(3) / 8
	matern52d3 = -25 * math.Sqrt(5) / 24
)

// maternCost is the time of one element in nanoseconds (a square root, an
// exponential four at a time, three passes over the row).
const maternCost = 4.0

func (op maternOp) Do(vs ...G.Value) (G.Value, error) {
	in, err := op.buf.inputs(vs)
	if err != nil {
		return nil, err
	}
	n, m := op.n, op.m
	if len(in[0]) != n*m || len(in[1]) != n || len(in[2]) != m || len(in[3]) != 1 || (op.withG && len(in[4]) != n*m) {
		return nil, fmt.Errorf("graph: %v got %d, %d, %d and %d values", op, len(in[0]), len(in[1]), len(in[2]), len(in[3]))
	}
	out := op.buf.take(n * m)
	if splits(n*m, m, maternCost) {
		parallelFor(n*m, m, maternCost, func(lo, hi int) { op.rows(in, out, lo/m, hi/m, make([]float64, m)) })
	} else {
		op.rows(in, out, 0, n, op.buf.scratchOf(m))
	}
	return op.buf.owned(tensor.Shape{n, m}, out), nil
}

// rows fills rows [lo, hi) of the output (r holds a row of distances).
func (op maternOp) rows(in [][]float64, out []float64, lo, hi int, r []float64) {
	c, xx, zz := in[0], in[1], in[2]
	s := op.scale * in[3][0]
	var g []float64
	if op.withG {
		g = in[4]
	}
	m := op.m
	a := math.Sqrt(2 * op.nu)
	for i := lo; i < hi; i++ {
		row, ci := out[i*m:(i+1)*m], c[i*m:(i+1)*m]
		xi := xx[i]
		for j := gemm.RootDist(r, row, ci, zz, xi, a); j < len(row); j++ {
			d := max(0, (xi+zz[j])-ci[j]*2) // bit for bit RootDist's lanes
			r[j] = math.Sqrt(d + maternOffset)
			row[j] = -a * r[j]
		}
		expSlice(row, row)
		op.scaleRow(row, r[:len(row)], a, s)
		if g != nil {
			for j, gj := range g[i*m : (i+1)*m] {
				row[j] *= gj
			}
		}
	}
}

// scaleRow turns e^(−t) into s·f⁽ᵒʳᵈᵉʳ⁾: with φ = e^(−t), t = a·r,
//
//	ν = 3/2: f = (1+t)φ,  f′ = −(3/2)φ,  f″ = (3√3/4)φ/r,  f‴ = −(3√3/8)(1+t)φ/r³
//	ν = 5/2: f = (1+t+t²/3)φ,  f′ = −(5/6)(1+t)φ,  f″ = (25/12)φ,  f‴ = −(25√5/24)φ/r
//
// (derivatives with respect to d = r² − 1e-12, dr/dd = 1/(2r)).
func (op maternOp) scaleRow(row, r []float64, a, s float64) {
	switch {
	case op.nu == 1.5 && op.order == 0:
		for j, phi := range row {
			row[j] = s * ((1 + a*r[j]) * phi)
		}
	case op.nu == 1.5 && op.order == 1:
		for j, phi := range row {
			row[j] = s * (-1.5 * phi)
		}
	case op.nu == 1.5 && op.order == 2:
		for j, phi := range row {
			row[j] = s * (matern32d2 * phi / r[j])
		}
	case op.nu == 1.5:
		for j, phi := range row {
			rj := r[j]
			row[j] = s * (matern32d3 * (1 + a*rj) * phi / (rj * rj * rj))
		}
	case op.order == 0:
		for j, phi := range row {
			t := a * r[j]
			row[j] = s * ((1 + t + t*t/3) * phi)
		}
	case op.order == 1:
		for j, phi := range row {
			row[j] = s * (-5.0 / 6 * (1 + a*r[j]) * phi)
		}
	case op.order == 2:
		for j, phi := range row {
			row[j] = s * (25.0 / 12 * phi)
		}
	default:
		for j, phi := range row {
			row[j] = s * (matern52d3 * phi / r[j])
		}
	}
}

// SymDiff of y = s·v·g ⊙ f⁽ᵏ⁾(d), d = xx_i + zz_j − 2c_ij (g = 1 when
// absent): W = −2s·v·(g ⊙ ȳ) ⊙ f⁽ᵏ⁺¹⁾(d) is c̄, x̄x and z̄z are −½ of its
// row and column sums, v̄ = Σ ȳ ⊙ y / v and ḡ = s·v·ȳ ⊙ f⁽ᵏ⁾(d).
func (op maternOp) SymDiff(in G.Nodes, out, gy *G.Node) (G.Nodes, error) {
	if op.order >= maternMaxOrder {
		return nil, fmt.Errorf("graph.Matern: the kernel is differentiable here to order %d only", maternMaxOrder)
	}
	c, xx, zz, v := in[0], in[1], in[2], in[3]
	e := &Chain{}
	f := gy
	if op.withG {
		f = e.Do(G.HadamardProd(in[4], gy))
	}
	if e.Err != nil {
		return nil, e.Err
	}
	next := maternOp{nu: op.nu, order: op.order + 1, scale: -2 * op.scale, withG: true, n: op.n, m: op.m}
	w := e.Do(applyOp(next, c, xx, zz, v, f))
	half := G.NewConstant(-0.5)
	gxx := e.Do(G.HadamardProd(e.Do(G.Sum(w, 1)), half))
	gzz := e.Do(G.HadamardProd(e.Do(G.Sum(w, 0)), half))
	gv := e.Do(G.Div(e.Do(Inner(gy, out)), v))
	grads := G.Nodes{w, gxx, gzz, gv}
	if op.withG {
		same := maternOp{nu: op.nu, order: op.order, scale: op.scale, withG: true, n: op.n, m: op.m}
		grads = append(grads, e.Do(applyOp(same, c, xx, zz, v, gy)))
	}
	return grads, e.Err
}
