package graph_test

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// A gradient of a gradient: for f = Σ (x⊙w)², g = ∂f/∂x and L = Σ g², the
// project's Grad gives ∂L/∂w = 16x²w³ (gorgonia.Grad returns half of it).
func ExampleGrad() {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2}))))
	w := G.NewVector(g, G.Float64, G.WithShape(2), G.WithName("w"), G.WithValue(tensor.New(tensor.WithBacking([]float64{3, 0.5}))))
	y, _ := G.HadamardProd(x, w)
	sq, _ := G.Square(y)
	f, _ := G.Sum(sq)
	gx, _ := graph.Grad(f, x)
	gsq, _ := G.Square(gx[0])
	L, _ := G.Sum(gsq)
	gw, _ := graph.Grad(L, w)
	prog, _ := graph.Compile(g, gw[0])
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := prog.Float64s(gw[0])
	fmt.Println(v)
	// Output: [432 8]
}

// Checking a user-written cost against finite differences, first and second order.
func ExampleCheckGrad() {
	g := G.NewGraph()
	a := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("A"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{2, 0.3, 0.3, 1}))))
	l, _ := graph.Cholesky(a)
	cost, _ := graph.LogDetChol(l)
	r1, _ := graph.CheckGrad(cost, G.Nodes{a}, graph.CheckOptions{})
	r2, _ := graph.CheckGrad2(cost, G.Nodes{a}, graph.CheckOptions{})
	fmt.Println(r1.MaxRelErr < 1e-6, r2.MaxRelErr < 1e-6)
	// Output: true true
}

// A user-defined elementwise function fused into one op: row sums of the
// Gaussian negative log density ½(x−μ)²/v + ½ log 2πv. F, DF and the same
// function as stock nodes (used only for derivatives beyond the first) are
// all it needs; first and second derivatives then check out.
func ExampleRowReduce() {
	nll := &graph.ElemFunc{
		Name: "gaussNLL",
		F: func(a []float64) float64 {
			r := a[0] - a[1]
			return 0.5*r*r/a[2] + 0.5*math.Log(2*math.Pi*a[2])
		},
		DF: func(a, d []float64) {
			r := a[0] - a[1]
			d[0], d[1], d[2] = r/a[2], -r/a[2], -0.5*r*r/(a[2]*a[2])+0.5/a[2]
		},
		Stock: func(in G.Nodes) (*G.Node, error) {
			r, _ := G.Sub(in[0], in[1])
			r2, _ := G.Square(r)
			q, _ := G.HadamardDiv(r2, in[2])
			l, _ := G.Log(in[2])
			s, _ := G.Add(q, l)
			s, _ = G.HadamardProd(s, G.NewConstant(0.5))
			return G.Add(s, G.NewConstant(0.5*math.Log(2*math.Pi)))
		},
	}
	g := G.NewGraph()
	x := graph.Input(g, "x", tensor.Shape{2, 2}, []float64{0.5, -1, 2, 0})
	mu := graph.Input(g, "mu", tensor.Shape{2, 2}, []float64{0, 0, 1, 1})
	v := graph.Input(g, "v", tensor.Shape{2, 2}, []float64{1, 2, 0.5, 1})
	rows, _ := graph.RowReduce(nll, x, mu, v)
	cost, _ := G.Sum(rows)
	r1, _ := graph.CheckGrad(cost, G.Nodes{mu, v}, graph.CheckOptions{})
	r2, _ := graph.CheckGrad2(cost, G.Nodes{mu, v}, graph.CheckOptions{})
	fmt.Println(r1.MaxRelErr < 1e-6, r2.MaxRelErr < 1e-6)
	// Output: true true
}

// The squared-exponential kernel between two points x = (1, 0) and
// z = (0, 0) with unit length-scales and variance 2, from its parts: the
// cross product c = x·z, the squared norms and the variance. K = 2·e^(−½).
func ExampleExpQuad() {
	g := G.NewGraph()
	c := G.NewMatrix(g, G.Float64, G.WithShape(1, 1), G.WithName("c"), G.WithValue(tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{0}))))
	xx := G.NewVector(g, G.Float64, G.WithShape(1), G.WithName("xx"), G.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1}))))
	zz := G.NewVector(g, G.Float64, G.WithShape(1), G.WithName("zz"), G.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0}))))
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(2.0))
	k, err := graph.ExpQuad(c, xx, zz, v)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, _ := graph.Compile(g, k)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	got, _ := prog.Float64s(k)
	fmt.Printf("%.6f %.6f\n", got[0], 2*math.Exp(-0.5))
	// Output: 1.213061 1.213061
}

// The Matérn-5/2 kernel between x = (1, 0) and z = (0, 0) with unit
// length-scales and variance 2: r = 1, K = 2(1 + √5 + 5/3)e^(−√5) (to the
// 1e-12 offset under the square root).
func ExampleMatern() {
	g := G.NewGraph()
	c := G.NewMatrix(g, G.Float64, G.WithShape(1, 1), G.WithName("c"), G.WithValue(tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{0}))))
	xx := G.NewVector(g, G.Float64, G.WithShape(1), G.WithName("xx"), G.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1}))))
	zz := G.NewVector(g, G.Float64, G.WithShape(1), G.WithName("zz"), G.WithValue(tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0}))))
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(2.0))
	k, err := graph.Matern(2.5, c, xx, zz, v)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, _ := graph.Compile(g, k)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	got, _ := prog.Float64s(k)
	s5 := math.Sqrt(5)
	fmt.Printf("%.9f %.9f\n", got[0], 2*(1+s5+5.0/3)*math.Exp(-s5))
	// Output: 1.047988218 1.047988218
}

// The polynomial kernel's σ²(q + 1)^p from inner products q: with σ² = 0.5,
// p = 3 and q = (1, −1, 0.5), K = (4, 0, 1.6875).
func ExamplePowAffine() {
	g := G.NewGraph()
	q := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("q"), G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, -1, 0.5}))))
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(0.5))
	k, err := graph.PowAffine(q, v, 1, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, _ := graph.Compile(g, k)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	got, _ := prog.Float64s(k)
	fmt.Println(got)
	// Output: [4 0 1.6875]
}

// A per-row function as one op: each row's softmax, for values that are
// not differentiated (a predictive distribution, say).
func ExampleRows() {
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float64, G.WithShape(2, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0, 0, 0, 1, 2, 3}))))
	softmax := &graph.RowFunc{Name: "softmax", Out: 3, F: func(in [][]float64, out, _ []float64) {
		sum := 0.0
		for j, v := range in[0] {
			out[j] = math.Exp(v)
			sum += out[j]
		}
		for j := range out {
			out[j] /= sum
		}
	}}
	p, err := graph.Rows(softmax, x)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, _ := graph.Compile(g, p)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	got, _ := prog.Float64s(p)
	fmt.Printf("%.3f\n", got)
	// Output: [0.333 0.333 0.333 0.090 0.245 0.665]
}

// A per-row term with its own gradient: each row's log-sum-exp, whose
// vector-Jacobian product is the row's softmax times the output's
// gradient. graph.Grad then differentiates through the op.
func ExampleRowFunc_vjp() {
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float64, G.WithShape(2, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0, 0, 0, 1, 2, 3}))))
	lse := &graph.RowFunc{Name: "logsumexp", Out: 1,
		F: func(in [][]float64, out, _ []float64) {
			sum := 0.0
			for _, v := range in[0] {
				sum += math.Exp(v)
			}
			out[0] = math.Log(sum)
		},
		VJP: func(in [][]float64, gOut []float64, grad [][]float64, _ []float64) {
			sum := 0.0
			for _, v := range in[0] {
				sum += math.Exp(v)
			}
			for j, v := range in[0] {
				grad[0][j] += gOut[0] * math.Exp(v) / sum
			}
		},
	}
	l, err := graph.Rows(lse, x)
	if err != nil {
		fmt.Println(err)
		return
	}
	cost, _ := G.Sum(l)
	grads, err := graph.Grad(cost, x)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, _ := graph.Compile(g, cost, grads[0])
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	gx, _ := prog.Float64s(grads[0])
	fmt.Printf("%.3f\n", gx)
	// Output: [0.333 0.333 0.333 0.090 0.245 0.665]
}

// An ARD linear kernel X·diag(w)·Zᵀ and its Gram matrix Z·diag(w)·Zᵀ, the
// weights applied inside the products; both differentiate to any order.
func ExampleWeightedDot() {
	g := G.NewGraph()
	x := graph.Input(g, "x", tensor.Shape{1, 2}, []float64{1, 2})
	z := graph.Input(g, "z", tensor.Shape{2, 2}, []float64{1, 0, 1, 1})
	w := graph.Input(g, "w", tensor.Shape{2}, []float64{0.5, 2})
	kxz, _ := graph.WeightedDot(x, z, w)
	kzz, _ := graph.WeightedDot(z, z, w)
	prog, _ := graph.Compile(g, kxz, kzz)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	a, _ := prog.Float64s(kxz)
	b, _ := prog.Float64s(kzz)
	fmt.Println(a, b)
	// Output: [0.5 4.5] [0.5 0.5 0.5 2.5]
}

// An unwhitened variational family's KL trace term ‖L_k⁻¹L_q‖²_F = tr(K⁻¹S):
// L_q from free parameters (strict lower triangle as is, exp on the
// diagonal), the whitened factor by the lower-triangular solve, and the
// squared Frobenius norm in one pass. With K = 4I and S = diag(1, 4) the
// trace is (1 + 4)/4.
func ExampleTriSolveLower() {
	g := G.NewGraph()
	raw := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("raw"),
		G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0, 9, 0, math.Log(2)}))))
	lk := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("Lk"),
		G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{2, 0, 0, 2}))))
	lq, _ := graph.ExpDiagLower(raw) // the 9 above the diagonal is not read
	w, _ := graph.TriSolveLower(lk, lq, false)
	tr, _ := graph.SumSquares(w)
	prog, _ := graph.Compile(g, tr)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := prog.Float64s(tr)
	fmt.Printf("%.4f\n", v[0])
	// Output: 1.2500
}

// One Adam step from zero moments with bias correction (t = 1): every
// element moves by about the learning rate against its gradient's sign;
// with a nil gradient (a per-row parameter outside the minibatch) the
// moments decay and the element keeps moving on its momentum.
func ExampleAdamUpdate() {
	const lr, b1, b2 = 0.1, 0.9, 0.999
	x, m, v := []float64{1, 1, 1, 1, 1}, make([]float64, 5), make([]float64, 5)
	k := graph.AdamConsts{B1: b1, NB1: 1 - b1, B2: b2, NB2: 1 - b2,
		Step: lr / (1 - b1), RC2: 1 / math.Sqrt(1-b2), Eps: 1e-8}
	graph.AdamUpdate(x, m, v, []float64{3, -0.5, 0, 1e-3, 2}, &k)
	fmt.Printf("%.4f\n", x)
	k.Step, k.RC2 = lr/(1-b1*b1), 1/math.Sqrt(1-b2*b2)
	graph.AdamUpdate(x, m, v, nil, &k)
	fmt.Printf("%.4f\n", x)
	// Output:
	// [0.9000 1.1000 1.0000 0.9000 0.9000]
	// [0.8330 1.1670 1.0000 0.8330 0.8330]
}

// A polynomial kernel's value and slope from one factor node: κ(q) =
// v(q+1)³ and κ'(q) = 3v(q+1)², whose adjoints q then receives as one op.
func ExamplePowAffineScaled() {
	g := G.NewGraph()
	q := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("q"), G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, -1, 0.5}))))
	v := G.NewScalar(g, G.Float64, G.WithName("v"), G.WithValue(0.5))
	k, _ := graph.PowAffine(q, v, 1, 3)
	dk, err := graph.PowAffineScaled(q, v, 1, 2, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	prog, _ := graph.Compile(g, k, dk)
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	kv, _ := prog.Float64s(k)
	dv, _ := prog.Float64s(dk)
	fmt.Println(kv, dv)
	// Output: [4 0 1.6875] [6 0 3.375]
}

// The quadratic forms k_jᵀ A k_j of a matrix's columns, and their gradient
// with respect to A: Σ_j k_j k_jᵀ for a cost Σ_j q_j.
func ExampleQuadForm() {
	g := G.NewGraph()
	a := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("A"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{2, 0.5, 0.5, 1}))))
	k := G.NewMatrix(g, G.Float64, G.WithShape(2, 3), G.WithName("K"), G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 0, 1, 0, 1, 1}))))
	q, err := graph.QuadForm(a, k)
	if err != nil {
		fmt.Println(err)
		return
	}
	cost, _ := G.Sum(q)
	ga, _ := graph.Grad(cost, a)
	prog, _ := graph.Compile(g, q, ga[0])
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	qv, _ := prog.Float64s(q)
	gv, _ := prog.Float64s(ga[0])
	fmt.Println(qv, gv)
	// Output: [2 1 4] [2 1 1 2]
}

// ScaleSym weights a symmetric matrix by a vector on both sides, as
// NIMGP_FO weights its inducing inputs' Gram matrix by ααᵀ.
// Σ_ij a_i a_j S_ij has gradient 2Sa.
func ExampleScaleSym() {
	g := G.NewGraph()
	s := G.NewMatrix(g, G.Float64, G.WithShape(2, 2), G.WithName("S"), G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 2, 3}))))
	a := G.NewVector(g, G.Float64, G.WithShape(2), G.WithName("a"), G.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{2, -1}))))
	w, err := graph.ScaleSym(s, a)
	if err != nil {
		fmt.Println(err)
		return
	}
	cost, _ := G.Sum(w)
	ga, _ := graph.Grad(cost, a)
	prog, _ := graph.Compile(g, w, ga[0])
	if err := prog.Run(); err != nil {
		fmt.Println(err)
		return
	}
	wv, _ := prog.Float64s(w)
	gv, _ := prog.Float64s(ga[0])
	fmt.Println(wv, gv)
	// Output: [4 -4 -4 3] [0 2]
}
