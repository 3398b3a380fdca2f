package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

func input(s *layers.Scope, name string, r, c int, rng *rand.Rand) (*layers.Param, *G.Node) {
	p := layers.NewParam(name, tensor.Shape{r, c}, 0, layers.Identity)
	for i := range p.Data {
		p.Data[i] = rng.NormFloat64()
	}
	n, err := s.Raw(p)
	if err != nil {
		panic(err)
	}
	return p, n
}

type refKernel func(x, z []float64) float64

func cases(d int) map[string]struct {
	k   Kernel
	ref refKernel
} {
	ell := []float64{0.7, 1.9, 1.3}[:d]
	se := NewSE("se", d, 1, 1.7, 0.01)
	m32, _ := NewMatern("m32", 1.5, d, 1, 0.8, 0)
	m52, _ := NewMatern("m52", 2.5, d, 1, 1.2, 0)
	poly := NewPolynomial("poly", 3, d, 1, 0.5, 0.02)
	lin := NewLinear("lin", d, 1)
	for _, a := range []*layers.Param{se.Lengthscales, m32.Lengthscales, m52.Lengthscales, poly.Lengthscales, lin.Lengthscales} {
		for j := range ell {
			a.Set(j, ell[j])
		}
	}
	sq := func(x, z []float64) float64 {
		var s float64
		for j := range x {
			s += (x[j] - z[j]) * (x[j] - z[j]) / ell[j]
		}
		return s
	}
	dot := func(x, z []float64) float64 {
		var s float64
		for j := range x {
			s += x[j] * z[j] / ell[j]
		}
		return s
	}
	return map[string]struct {
		k   Kernel
		ref refKernel
	}{
		"se": {se, func(x, z []float64) float64 { return 1.7 * math.Exp(-0.5*sq(x, z)) }},
		"matern32": {m32, func(x, z []float64) float64 {
			r := math.Sqrt(3 * sq(x, z))
			return 0.8 * (1 + r) * math.Exp(-r)
		}},
		"matern52": {m52, func(x, z []float64) float64 {
			r := math.Sqrt(5 * sq(x, z))
			return 1.2 * (1 + r + r*r/3) * math.Exp(-r)
		}},
		"poly3":  {poly, func(x, z []float64) float64 { return 0.5 * math.Pow(dot(x, z)+1, 3) }},
		"linear": {lin, dot},
		"sum": {Sum{se, lin}, func(x, z []float64) float64 {
			return 1.7*math.Exp(-0.5*sq(x, z)) + dot(x, z)
		}},
		"product": {Product{se, poly}, func(x, z []float64) float64 {
			return 1.7 * math.Exp(-0.5*sq(x, z)) * 0.5 * math.Pow(dot(x, z)+1, 3)
		}},
	}
}

func TestKernelValues(t *testing.T) {
	const d = 3
	for name, c := range cases(d) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			g := G.NewGraph()
			s := layers.NewScope(g)
			xp, x := input(s, "X", 4, d, rng)
			zp, z := input(s, "Z", 3, d, rng)
			K, err := c.k.K(s, x, z)
			if err != nil {
				t.Fatal(err)
			}
			D, err := c.k.Diag(s, x)
			if err != nil {
				t.Fatal(err)
			}
			p, err := graph.Compile(g, K, D)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(); err != nil {
				t.Fatal(err)
			}
			kv, _ := p.Float64s(K)
			dv, _ := p.Float64s(D)
			for i := 0; i < 4; i++ {
				xi := xp.Data[i*d : (i+1)*d]
				for j := 0; j < 3; j++ {
					want := c.ref(xi, zp.Data[j*d:(j+1)*d])
					if math.Abs(kv[i*3+j]-want) > 1e-9*math.Max(1, math.Abs(want)) {
						t.Fatalf("K[%d,%d] = %v, want %v", i, j, kv[i*3+j], want)
					}
				}
				if want := c.ref(xi, xi); math.Abs(dv[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("diag[%d] = %v, want %v", i, dv[i], want)
				}
			}
		})
	}
}

// Gradients with respect to hyper-parameters and both inputs, first and
// second order (the first-order noisy-input model differentiates ∂k/∂x again).
func TestKernelGradients(t *testing.T) {
	const d = 2
	for name, c := range cases(d) {
		t.Run(name, func(t *testing.T) {
			for order := 1; order <= 2; order++ {
				rng := rand.New(rand.NewPCG(2, 2))
				g := G.NewGraph()
				s := layers.NewScope(g)
				_, x := input(s, "X", 4, d, rng)
				_, z := input(s, "Z", 3, d, rng)
				jit, _ := s.Node(Jitter("jitter", 1e-6))
				K, err := KZZ(c.k, s, z, jit)
				if err != nil {
					t.Fatal(err)
				}
				Kx, err := c.k.K(s, x, z)
				if err != nil {
					t.Fatal(err)
				}
				Kd, err := KDiag(c.k, s, x, jit)
				if err != nil {
					t.Fatal(err)
				}
				cost := sumTanh(t, K, Kx, Kd)
				var params G.Nodes
				for _, p := range c.k.Params() {
					if _, isProd := c.k.(Product); isProd && strings.HasSuffix(p.Name, "/white") {
						continue // a bare Product ignores its factors' white noise
					}
					n, _ := s.Raw(p)
					params = append(params, n)
				}
				params = append(params, x, z)
				check := graph.CheckGrad
				if order == 2 {
					check = graph.CheckGrad2
				}
				rep, err := check(cost, params, graph.CheckOptions{Seed: 5})
				if err != nil {
					t.Fatal(err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					t.Errorf("order %d: %s", order, rep.Worst())
				}
			}
		})
	}
}

// sumTanh returns Σ tanh(0.3·n) over all nodes, a cost with non-zero second derivatives.
func sumTanh(t *testing.T, ns ...*G.Node) *G.Node {
	var acc *G.Node
	for i, n := range ns {
		w := G.NewConstant(0.3 + 0.1*float64(i))
		a, err := G.HadamardProd(n, w)
		if err != nil {
			t.Fatal(err)
		}
		if a, err = G.Tanh(a); err != nil {
			t.Fatal(err)
		}
		if a, err = G.Sum(a); err != nil {
			t.Fatal(err)
		}
		if acc == nil {
			acc = a
		} else if acc, err = G.Add(acc, a); err != nil {
			t.Fatal(err)
		}
	}
	return acc
}

func TestKZZPositiveDefinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	g := G.NewGraph()
	s := layers.NewScope(g)
	_, z := input(s, "Z", 6, 3, rng)
	k := NewSE("se", 3, 1, 1, 0.1)
	jit, _ := s.Node(Jitter("jitter", 1e-3))
	K, _ := KZZ(k, s, z, jit)
	L, err := graph.Cholesky(K)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := graph.Compile(g, K, L)
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	kv, _ := p.Float64s(K)
	for i := 0; i < 6; i++ {
		if math.Abs(kv[i*6+i]-(1+0.1+1e-3)) > 1e-12 {
			t.Fatalf("K(Z,Z)[%d,%d] = %v, want σ²+σ₀²+jitter = 1.101", i, i, kv[i*6+i])
		}
	}
}

func TestInputWidthMismatch(t *testing.T) {
	g := G.NewGraph()
	s := layers.NewScope(g)
	_, x := input(s, "X", 4, 3, rand.New(rand.NewPCG(1, 1)))
	if _, err := NewSE("se", 2, 1, 1, 0).K(s, x, x); err == nil {
		t.Fatal("a 3-column input to a 2-dimensional kernel was accepted")
	}
}
