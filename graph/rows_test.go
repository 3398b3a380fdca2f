package graph

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// expDot is a RowFunc of two arguments with its VJP:
// out = (Σ_j e^{x_j}·s_0, x_0·x_1·s_1).
var expDot = &RowFunc{
	Name: "expDot", Out: 2,
	F: func(in [][]float64, out, _ []float64) {
		x, s := in[0], in[1]
		sum := 0.0
		for _, v := range x {
			sum += math.Exp(v)
		}
		out[0], out[1] = sum*s[0], x[0]*x[1]*s[1]
	},
	VJP: func(in [][]float64, g []float64, grad [][]float64, _ []float64) {
		x, s := in[0], in[1]
		for j, v := range x {
			grad[0][j] += g[0] * math.Exp(v) * s[0]
			grad[1][0] += g[0] * math.Exp(v)
		}
		grad[0][0] += g[1] * x[1] * s[1]
		grad[0][1] += g[1] * x[0] * s[1]
		grad[1][1] += g[1] * x[0] * x[1]
	},
	Cost: 1, VJPCost: 1,
	Graph: func(args []*G.Node) (*G.Node, error) {
		x, s := args[0], args[1]
		n := x.Shape()[0]
		e := &Chain{}
		sum := e.Do(G.Sum(e.Do(G.Exp(x)), 1))
		s0 := e.Do(Reshape(e.Do(Take(s, 1, 0, 1)), tensor.Shape{n}))
		s1 := e.Do(Reshape(e.Do(Take(s, 1, 1, 2)), tensor.Shape{n}))
		x0 := e.Do(Reshape(e.Do(Take(x, 1, 0, 1)), tensor.Shape{n}))
		x1 := e.Do(Reshape(e.Do(Take(x, 1, 1, 2)), tensor.Shape{n}))
		o0 := e.Do(G.HadamardProd(sum, s0))
		o1 := e.Do(G.HadamardProd(e.Do(G.HadamardProd(x0, x1)), s1))
		return e.Do(Stack(o0, o1)), e.Err
	},
}

// expDotSaved is expDot keeping e^{x_j} for its VJP.
var expDotSaved = func() *RowFunc {
	f := *expDot
	f.Name, f.Saved = "expDotSaved", 3
	f.F = func(in [][]float64, out, _ []float64) {
		x, s := in[0], in[1]
		sum := 0.0
		for j, v := range x {
			out[2+j] = math.Exp(v)
			sum += out[2+j]
		}
		out[0], out[1] = sum*s[0], x[0]*x[1]*s[1]
	}
	f.VJP = func(in [][]float64, g []float64, grad [][]float64, _ []float64) {
		x, s, kept := in[0], in[1], in[2]
		if len(g) != 2 || len(kept) != 3 {
			panic("expDotSaved: wrong row widths")
		}
		for j, e := range kept {
			grad[0][j] += g[0] * e * s[0]
			grad[1][0] += g[0] * e
		}
		grad[0][0] += g[1] * x[1] * s[1]
		grad[0][1] += g[1] * x[0] * s[1]
		grad[1][1] += g[1] * x[0] * x[1]
	}
	return &f
}()

// With kept values the node shows only the outputs, the VJP reads what F
// kept, and both orders of derivative agree with finite differences.
func TestRowsVJPSaved(t *testing.T) {
	for order := 1; order <= 2; order++ {
		g := G.NewGraph()
		rng := rand.New(rand.NewPCG(9, 13))
		x := matrix(g, "x", 5, 3, randMat(rng, 5, 3)...)
		s := matrix(g, "s", 5, 2, randMat(rng, 5, 2)...)
		r := must(Rows(expDotSaved, x, s))
		if sh := r.Shape(); sh[0] != 5 || sh[1] != 2 {
			t.Fatalf("shape %v, want (5, 2)", sh)
		}
		check := CheckGrad
		if order == 2 {
			check = CheckGrad2
		}
		rep, err := check(nonlinearCost(t, rng, r), G.Nodes{x, s}, CheckOptions{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !(rep.MaxRelErr <= 1e-6) {
			t.Errorf("order %d: worst %s", order, rep.Worst())
		}
	}
}

// A RowFunc with a VJP is differentiable once, to finite-difference
// accuracy for every argument, and twice through its Graph form; without
// that form its gradient refuses a second derivative with an error naming
// the function.
func TestRowsVJP(t *testing.T) {
	build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		x := matrix(g, "x", 5, 3, randMat(rng, 5, 3)...)
		s := matrix(g, "s", 5, 2, randMat(rng, 5, 2)...)
		return nonlinearCost(t, rng, must(Rows(expDot, x, s))), G.Nodes{x, s}
	}
	g := G.NewGraph()
	cost, params := build(g, rand.New(rand.NewPCG(7, 11)))
	rep, err := CheckGrad(cost, params, CheckOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.MaxRelErr <= 1e-6) {
		t.Errorf("worst %s", rep.Worst())
	}
	g = G.NewGraph()
	cost, params = build(g, rand.New(rand.NewPCG(7, 11)))
	if rep, err = CheckGrad2(cost, params, CheckOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if !(rep.MaxRelErr <= 1e-6) {
		t.Errorf("second order: worst %s", rep.Worst())
	}
	noGraph := *expDot
	noGraph.Name, noGraph.Graph = "firstOnly", nil
	g = G.NewGraph()
	x := matrix(g, "x", 5, 3, randMat(rand.New(rand.NewPCG(1, 2)), 5, 3)...)
	s := matrix(g, "s", 5, 2, randMat(rand.New(rand.NewPCG(3, 4)), 5, 2)...)
	cost = nonlinearCost(t, rand.New(rand.NewPCG(5, 6)), must(Rows(&noGraph, x, s)))
	if _, err := CheckGrad2(cost, G.Nodes{x, s}, CheckOptions{Seed: 3}); err == nil || !strings.Contains(err.Error(), "firstOnly") {
		t.Errorf("second order without Graph: err = %v, want one naming the function", err)
	}
	noVJP := *expDot
	noVJP.Name, noVJP.VJP = "plain", nil
	g = G.NewGraph()
	x = matrix(g, "x", 2, 3, make([]float64, 6)...)
	s = matrix(g, "s", 2, 2, make([]float64, 4)...)
	if _, err := Grad(must(G.Sum(must(Rows(&noVJP, x, s)))), x); err == nil || !strings.Contains(err.Error(), "plain") {
		t.Errorf("without VJP: err = %v, want one naming the function", err)
	}
}

// Saved without a VJP is refused (F would be handed rows too narrow), and
// a second derivative through a node passed twice is refused rather than
// counted twice.
func TestRowsRefusals(t *testing.T) {
	g := G.NewGraph()
	x := matrix(g, "x", 2, 3, make([]float64, 6)...)
	bad := *expDotSaved
	bad.Name, bad.VJP = "savedOnly", nil
	if _, err := Rows(&bad, x, x); err == nil || !strings.Contains(err.Error(), "savedOnly") {
		t.Errorf("Saved without VJP: err = %v", err)
	}
	g = G.NewGraph()
	x = matrix(g, "x", 2, 2, randMat(rand.New(rand.NewPCG(1, 1)), 2, 2)...)
	cost := nonlinearCost(t, rand.New(rand.NewPCG(2, 2)), must(Rows(expDot, matrix(g, "x3", 2, 3, randMat(rand.New(rand.NewPCG(3, 3)), 2, 3)...), x)))
	if _, err := CheckGrad2(cost, G.Nodes{x}, CheckOptions{Seed: 1}); err != nil {
		t.Fatalf("distinct arguments: %v", err)
	}
	g = G.NewGraph()
	y := matrix(g, "y", 2, 2, randMat(rand.New(rand.NewPCG(4, 4)), 2, 2)...)
	twice := &RowFunc{Name: "twice", Out: 1,
		F: func(in [][]float64, out, _ []float64) { out[0] = in[0][0] * in[1][1] },
		VJP: func(in [][]float64, g []float64, grad [][]float64, _ []float64) {
			grad[0][0] += g[0] * in[1][1]
			grad[1][1] += g[0] * in[0][0]
		},
		Graph: func(args []*G.Node) (*G.Node, error) {
			a := must(Take(args[0], 1, 0, 1))
			b := must(Take(args[1], 1, 1, 2))
			return G.HadamardProd(a, b)
		},
	}
	cost = must(G.Sum(must(Rows(twice, y, y))))
	if _, err := CheckGrad2(cost, G.Nodes{y}, CheckOptions{Seed: 1}); err == nil || !strings.Contains(err.Error(), "distinct") {
		t.Errorf("one node twice, second order: err = %v", err)
	}
}
