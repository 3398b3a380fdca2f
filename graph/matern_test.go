package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// maternRef is the Matérn function of a squared distance d, written out.
func maternRef(nu, d float64) float64 {
	r := math.Sqrt(max(0, d) + 1e-12)
	if nu == 1.5 {
		t := math.Sqrt(3) * r
		return (1 + t) * math.Exp(-t)
	}
	t := math.Sqrt(5) * r
	return (1 + t + 5.0/3*r*r) * math.Exp(-t)
}

// The fused kernel matches the closed form element by element (including
// distances clamped at zero and kernels that underflow), and its gradients
// match finite differences to second order (which reaches the third
// derivative of f), with xx and zz distinct or one node.
func TestMatern(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const n, m = 7, 5
	cv, xv, zv := randMat(rng, n, m), randMat(rng, n, 1), randMat(rng, m, 1)
	for i := range xv {
		xv[i] = 1 + xv[i]*xv[i]
	}
	xv[0] = 1e6  // e^(−√3·1000): K underflows to zero
	cv[m+1] = 50 // a negative distance, clamped to 0
	for _, nu := range []float64{1.5, 2.5} {
		g := G.NewGraph()
		c, xx, zz := matrix(g, "c", n, m, cv...), vec(g, "xx", xv...), vec(g, "zz", zv...)
		v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(1.7))
		k := must(Matern(nu, c, xx, zz, v))
		p := run(t, g, k)
		got, _ := p.Float64s(k)
		for i := 0; i < n; i++ {
			for j := 0; j < m; j++ {
				want := 1.7 * maternRef(nu, xv[i]+zv[j]-2*cv[i*m+j])
				if d := math.Abs(got[i*m+j] - want); d > 1e-14*math.Abs(want) {
					t.Fatalf("ν = %g: K[%d,%d] = %v, the closed form %v", nu, i, j, got[i*m+j], want)
				}
			}
		}
		if got[0] != 0 {
			t.Fatalf("ν = %g: K[0,0] = %v, want an underflow to 0", nu, got[0])
		}
		if want := 1.7 * maternRef(nu, 0); math.Abs(got[m+1]-want) > 1e-14 {
			t.Fatalf("ν = %g: clamped K[1,1] = %v, want %v", nu, got[m+1], want)
		}
	}
	scalar := func(g *G.ExprGraph, x float64) *G.Node {
		return G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(x))
	}
	for _, nu := range []float64{1.5, 2.5} {
		// Distances between 0.5 and 3, away from the clamp.
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			cv := randMat(rng, 4, 3)
			for i := range cv {
				cv[i] *= 0.2
			}
			c := matrix(g, "c", 4, 3, cv...)
			xx, zz := vec(g, "xx", 0.5, 1.1, 0.6, 0.9), vec(g, "zz", 0.7, 0.3, 1.4)
			return nonlinearCost(t, rng, must(Matern(nu, c, xx, zz, scalar(g, 1.3)))), G.Nodes{c, xx, zz, g.ByName("v")[0]}
		})
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			cv := randMat(rng, 3, 3)
			for i := range cv {
				cv[i] *= 0.2
			}
			c := matrix(g, "c", 3, 3, cv...)
			zz := vec(g, "zz", 0.7, 0.9, 1.4)
			return nonlinearCost(t, rng, must(Matern(nu, c, zz, zz, scalar(g, 0.8)))), G.Nodes{c, zz, g.ByName("v")[0]}
		})
	}
}

// The derivative forms, each the kernel of the next order: the op for f′
// with a factor g checked to second order reaches f‴, and each form's
// first order checks the next derivative's formula.
func TestMaternDerivatives(t *testing.T) {
	for _, nu := range []float64{1.5, 2.5} {
		for order := 1; order <= 2; order++ {
			build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
				cv := randMat(rng, 4, 3)
				for i := range cv {
					cv[i] *= 0.2
				}
				c := matrix(g, "c", 4, 3, cv...)
				xx, zz := vec(g, "xx", 0.5, 1.1, 0.6, 0.9), vec(g, "zz", 0.7, 0.3, 1.4)
				f := matrix(g, "g", 4, 3, randMat(rng, 4, 3)...)
				v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(1.3))
				y := must(applyOp(maternOp{nu: nu, order: order, scale: 0.7, withG: true, n: 4, m: 3}, c, xx, zz, v, f))
				return nonlinearCost(t, rng, y), G.Nodes{c, xx, zz, v, f}
			}
			t.Run(fmt.Sprintf("nu=%g/f%d", nu, order), func(t *testing.T) {
				if order == 1 {
					checkBoth(t, build)
				} else {
					checkOrder(t, build, 1) // its second order would need f⁗
				}
			})
		}
	}
}

// Differentiating past the third derivative is refused with an error,
// not a wrong gradient; a ν other than 3/2 and 5/2 and mismatched shapes
// are refused when the node is built.
func TestMaternLimits(t *testing.T) {
	g := G.NewGraph()
	c := matrix(g, "c", 2, 2, 0.1, 0.2, 0.3, 0.4)
	xx := vec(g, "xx", 1, 2)
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(1.0))
	if _, err := Matern(0.5, c, xx, xx, v); err == nil {
		t.Fatal("ν = 1/2 was accepted")
	}
	if _, err := Matern(2.5, c, vec(g, "x3", 1, 2, 3), xx, v); err == nil {
		t.Fatal("an xx of 3 for 2 rows was accepted")
	}
	op := maternOp{nu: 2.5, order: maternMaxOrder, scale: 1, n: 2, m: 2}
	y := must(applyOp(op, c, xx, xx, v))
	if _, err := op.SymDiff(G.Nodes{c, xx, xx, v}, y, c); err == nil {
		t.Fatal("the fourth derivative was built")
	}
}

// The fused kernels at the UCI shape (M = 300, a batch of 1024), value
// and derivative forms, per op call, against the squared exponential's.
func BenchmarkKernelOps(b *testing.B) {
	const n, m = 300, 1024
	rng := rand.New(rand.NewPCG(61, 62))
	in := [][]float64{randMat(rng, n, m), randMat(rng, n, 1), randMat(rng, m, 1), {1.3}, randMat(rng, n, m)}
	for i := range in[1] {
		in[1][i] = 2 + in[1][i]*in[1][i]
	}
	for i := range in[2] {
		in[2][i] = 2 + in[2][i]*in[2][i]
	}
	out := make([]float64, n*m)
	r := make([]float64, m)
	for _, op := range []maternOp{{nu: 2.5, scale: 1, n: n, m: m}, {nu: 2.5, order: 1, scale: -2, withG: true, n: n, m: m}, {nu: 1.5, scale: 1, n: n, m: m}} {
		b.Run(op.String(), func(b *testing.B) {
			for range b.N {
				op.rows(in, out, 0, n, r)
			}
		})
	}
	b.Run("ExpQuad", func(b *testing.B) {
		eq := [4][]float64{in[0], in[1], in[2], in[3]}
		for range b.N {
			expQuadRows(eq, out, m, 0, n)
		}
	})
}
