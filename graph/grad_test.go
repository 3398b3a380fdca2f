package graph

import (
	"errors"
	"math"
	"math/rand/v2"
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

// Every node of a graph, gradients included, owns its output buffer, and
// outputs that are reused across runs give the same values every run.
func TestOutputBuffersPerNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	g := G.NewGraph()
	x := matrix(g, "x", 4, 3, randMat(rng, 4, 3)...)
	z := matrix(g, "z", 5, 3, randMat(rng, 5, 3)...)
	k := must(MatMul(x, z, false, true))
	k2 := must(MatMul(x, z, false, true)) // the same node: Gorgonia merges equal ops
	cost := must(G.Sum(must(G.HadamardProd(must(AddN(k, k2, must(Exp(k)))), k))))
	gr, err := Grad(cost, x, z)
	if err != nil {
		t.Fatal(err)
	}
	if err := sharedBuffers(g); err != nil {
		t.Fatal(err)
	}
	p := run(t, g, append(G.Nodes{cost}, gr...)...)
	first, _ := p.Float64s(gr[0])
	c1, _ := p.Scalar(cost)
	for range 3 {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		again, _ := p.Float64s(gr[0])
		c2, _ := p.Scalar(cost)
		if c2 != c1 {
			t.Fatalf("cost %v on a later run, %v on the first", c2, c1)
		}
		for i := range first {
			if again[i] != first[i] {
				t.Fatalf("gradient[%d] %v on a later run, %v on the first", i, again[i], first[i])
			}
		}
	}
	// An op value applied twice without applyOp shares its buffer: Compile
	// refuses the graph.
	g2 := G.NewGraph()
	a := matrix(g2, "a", 2, 2, 1, 2, 3, 4)
	op := specialOp{fn: fnExp, d: 2, pureOp: pureOp{buf: &outBuf{}}}
	e1 := must(G.ApplyOp(op, a))
	e2 := must(G.ApplyOp(op, must(G.Neg(a))))
	if _, err := Compile(g2, e1, e2); err == nil {
		t.Fatal("two nodes sharing an output buffer: want a Compile error")
	}
}

// A fused function's adjoint that reaches two nodes (here through AddN,
// which hands its gradient to each input) takes another contribution at
// each, so two addend ops are built from the one adjoint. Building the
// second once overwrote the first one's addend: the first node's
// gradient silently lost a term (or the graph gained a cycle), because the
// two shared the adjoint's argument slice. Checked at first and second order.
func TestFusedAdjointTakesTwoAddends(t *testing.T) {
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x := matrix(g, "x", 3, 2, randMat(rng, 3, 2)...)
		w := matrix(g, "w", 3, 2, randMat(rng, 3, 2)...)
		u := must(G.HadamardProd(x, G.NewConstant(2.0)))
		s := must(AddN(u, x))
		m := must(Map(product, s, w))
		cost := must(G.Add(must(G.Sum(must(G.HadamardProd(m, m)))), must(G.Sum(must(G.HadamardProd(u, u))))))
		cost = must(G.Add(cost, must(G.Sum(must(G.Exp(x))))))
		return must(G.HadamardProd(cost, G.NewConstant(0.1))), G.Nodes{x, w}
	})
}

// A Map computed row by row takes the other gradient contributions of its
// node as an addend (no AddN pass): ColSumSq's adjoint, 2x ⊙ ḡ, is such a
// Map, here joined by a product's adjoint. Exact at orders 1 and 2.
func TestMapTakesAddend(t *testing.T) {
	found := false
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x := matrix(g, "x", 4, 3, randMat(rng, 4, 3)...)
		b := matrix(g, "b", 3, 2, randMat(rng, 3, 2)...)
		c := must(G.Add(must(G.Sum(must(ColumnSumSquares(x)))), must(G.Sum(must(G.Tanh(must(MatMul(x, b, false, false))))))))
		return c, G.Nodes{x, b}
	})
	g := G.NewGraph()
	rng := rand.New(rand.NewPCG(1, 1))
	x := matrix(g, "x", 4, 3, randMat(rng, 4, 3)...)
	b := matrix(g, "b", 3, 2, randMat(rng, 3, 2)...)
	c := must(G.Add(must(G.Sum(must(ColumnSumSquares(x)))), must(G.Sum(must(G.Tanh(must(MatMul(x, b, false, false))))))))
	if _, err := Grad(c, x); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.AllNodes() {
		if op, ok := n.Op().(elemOp); ok && !op.grad && op.addends > 0 {
			found = true
		}
	}
	if !found {
		t.Error("x's gradient has no Map with an addend: the test no longer exercises the path")
	}
}
