package graph

import (
	"errors"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func vec(g *G.ExprGraph, name string, v ...float64) *G.Node {
	return G.NewVector(g, G.Float64, G.WithShape(len(v)), G.WithName(name), G.WithValue(tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(append([]float64(nil), v...)))))
}

func matrix(g *G.ExprGraph, name string, r, c int, v ...float64) *G.Node {
	return G.NewMatrix(g, G.Float64, G.WithShape(r, c), G.WithName(name), G.WithValue(tensor.New(tensor.WithShape(r, c), tensor.WithBacking(append([]float64(nil), v...)))))
}

func must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(err)
	}
	return n
}

func run(t *testing.T, g *G.ExprGraph, outs ...*G.Node) *Program {
	t.Helper()
	p, err := Compile(g, outs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	return p
}

// The documented failure of stock Grad: y = x⊙w, f = Σy², g = ∂f/∂x,
// L = Σg², so ∂L/∂w = 16x²w³ (stock gorgonia.Grad returns half of it).
func TestGradOfGradProduct(t *testing.T) {
	xs, ws := []float64{0.3, -0.2, 0.5}, []float64{0.7, 1.2, -0.9}
	g := G.NewGraph()
	x, w := vec(g, "x", xs...), vec(g, "w", ws...)
	f := must(G.Sum(must(G.Square(must(G.HadamardProd(x, w))))))
	gx, err := Grad(f, x)
	if err != nil {
		t.Fatal(err)
	}
	L := must(G.Sum(must(G.Square(gx[0]))))
	gw, err := Grad(L, w)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, gw[0])
	got, _ := p.Float64s(gw[0])
	for i := range xs {
		want := 16 * xs[i] * xs[i] * math.Pow(ws[i], 3)
		if math.Abs(got[i]-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("∂L/∂w[%d] = %v, want 16x²w³ = %v", i, got[i], want)
		}
	}
}

// f = Σexp(x⊙w), L = Σ(∂f/∂x)², so ∂L/∂w = 2w e^{2xw}(1+xw).
func TestGradOfGradExp(t *testing.T) {
	xs, ws := []float64{0.2, -0.4}, []float64{0.7, 0.3}
	g := G.NewGraph()
	x, w := vec(g, "x", xs...), vec(g, "w", ws...)
	f := must(G.Sum(must(G.Exp(must(G.HadamardProd(x, w))))))
	gx, err := Grad(f, x)
	if err != nil {
		t.Fatal(err)
	}
	L := must(G.Sum(must(G.Square(gx[0]))))
	gw, err := Grad(L, w)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, gw[0])
	got, _ := p.Float64s(gw[0])
	for i := range xs {
		xw := xs[i] * ws[i]
		want := 2 * ws[i] * math.Exp(2*xw) * (1 + xw)
		if math.Abs(got[i]-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("∂L/∂w[%d] = %v, want %v", i, got[i], want)
		}
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
