package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func randMat(rng *rand.Rand, r, c int) []float64 {
	v := make([]float64, r*c)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// spd returns B Bᵀ + n·I, well conditioned and symmetric.
func spd(rng *rand.Rand, n int) []float64 {
	b := randMat(rng, n, n)
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			for k := 0; k < n; k++ {
				a[i*n+j] += b[i*n+k] * b[j*n+k]
			}
		}
		a[i*n+i] += float64(n)
	}
	return a
}

// lowerTri returns a well-conditioned lower-triangular matrix (upper if !lower).
func tri(rng *rand.Rand, n int, lower bool) []float64 {
	t := randMat(rng, n, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if (j > i && lower) || (j < i && !lower) {
				t[i*n+j] = 0
			}
		}
		t[i*n+i] = 2 + math.Abs(t[i*n+i])
	}
	return t
}

// nonlinearCost returns Σ W ⊙ exp(0.3·y) so that second derivatives are non-trivial.
func nonlinearCost(t *testing.T, rng *rand.Rand, y *G.Node) *G.Node {
	t.Helper()
	s := y.Shape()
	w := G.NewTensor(y.Graph(), G.Float64, s.Dims(), G.WithShape(s...), G.WithName("W"),
		G.WithValue(tensor.New(tensor.WithShape(s...), tensor.WithBacking(randMat(rng, s.TotalSize(), 1)))))
	if s.IsScalar() {
		return must(G.Exp(must(G.HadamardProd(y, G.NewConstant(0.3)))))
	}
	e := must(G.Exp(must(G.HadamardProd(y, G.NewConstant(0.3)))))
	return must(G.Sum(must(G.HadamardProd(e, w))))
}

// checkBoth asserts first- and second-order finite-difference agreement.
func checkBoth(t *testing.T, build func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes)) {
	t.Helper()
	for order := 1; order <= 2; order++ {
		checkOrder(t, build, order)
	}
}

// checkOrder asserts finite-difference agreement at one order (1 or 2).
func checkOrder(t *testing.T, build func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes), order int) {
	t.Helper()
	g := G.NewGraph()
	rng := rand.New(rand.NewPCG(7, 11))
	cost, params := build(g, rng)
	check := CheckGrad
	if order == 2 {
		check = CheckGrad2
	}
	rep, err := check(cost, params, CheckOptions{Seed: 3})
	if err != nil {
		t.Fatalf("order %d: %v", order, err)
	}
	if !(rep.MaxRelErr <= 1e-6) {
		t.Errorf("order %d: worst %s", order, rep.Worst())
	}
	t.Logf("order %d: max relative error %.2e", order, rep.MaxRelErr)
}

func TestCholeskyForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 5
	a := spd(rng, n)
	g := G.NewGraph()
	A := matrix(g, "A", n, n, a...)
	L := must(Cholesky(A))
	p := run(t, g, L)
	l, _ := p.Float64s(L)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for k := 0; k < n; k++ {
				s += l[i*n+k] * l[j*n+k]
			}
			if math.Abs(s-a[i*n+j]) > 1e-10 {
				t.Fatalf("(LLᵀ)[%d,%d] = %v, want %v", i, j, s, a[i*n+j])
			}
			if j > i && l[i*n+j] != 0 {
				t.Fatalf("L[%d,%d] = %v above the diagonal", i, j, l[i*n+j])
			}
		}
	}
}

func TestCholeskyNotPD(t *testing.T) {
	g := G.NewGraph()
	A := matrix(g, "A", 2, 2, 1, 2, 2, 1)
	L := must(Cholesky(A))
	p, _ := Compile(g, L)
	err := p.Run()
	if err == nil || !errorsIs(err, ErrNotPositiveDefinite) {
		t.Fatalf("got %v, want ErrNotPositiveDefinite", err)
	}
}

func TestCholeskyGrad(t *testing.T) {
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		A := matrix(g, "A", 4, 4, spd(rng, 4)...)
		return nonlinearCost(t, rng, must(Cholesky(A))), G.Nodes{A}
	})
}

func TestTriSolveForward(t *testing.T) {
	for _, lower := range []bool{true, false} {
		for _, trans := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(5, 6))
			n, k := 4, 3
			tv, bv := tri(rng, n, lower), randMat(rng, n, k)
			g := G.NewGraph()
			T, B := matrix(g, "T", n, n, tv...), matrix(g, "B", n, k, bv...)
			X := must(TriSolve(T, B, lower, trans))
			p := run(t, g, X)
			x, _ := p.Float64s(X)
			for i := 0; i < n; i++ {
				for c := 0; c < k; c++ {
					var s float64
					for j := 0; j < n; j++ {
						a := tv[i*n+j]
						if trans {
							a = tv[j*n+i]
						}
						s += a * x[j*k+c]
					}
					if math.Abs(s-bv[i*k+c]) > 1e-10 {
						t.Fatalf("lower=%v trans=%v: residual at (%d,%d): %v vs %v", lower, trans, i, c, s, bv[i*k+c])
					}
				}
			}
		}
	}
}

// checkTriGrad checks op's gradients (a TriSolve-like op(T)·B form) at
// first and second order for both triangles, both transposes, and vector
// and matrix right-hand sides.
func checkTriGrad(t *testing.T, op func(t, b *G.Node, lower, trans bool) (*G.Node, error)) {
	for _, lower := range []bool{true, false} {
		for _, trans := range []bool{true, false} {
			for _, vec := range []bool{true, false} {
				t.Run("", func(t *testing.T) {
					checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
						T := matrix(g, "T", 4, 4, tri(rng, 4, lower)...)
						var B *G.Node
						if vec {
							B = vec4(g, "b", randMat(rng, 4, 1)...)
						} else {
							B = matrix(g, "B", 4, 2, randMat(rng, 4, 2)...)
						}
						return nonlinearCost(t, rng, must(op(T, B, lower, trans))), G.Nodes{T, B}
					})
				})
			}
		}
	}
}

func TestTriSolveGrad(t *testing.T) { checkTriGrad(t, TriSolve) }

// TriMul is op(T)·B reading T's triangle only: the other triangle holds
// values that must not enter.
func TestTriMulForward(t *testing.T) {
	for _, lower := range []bool{true, false} {
		for _, trans := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(15, 16))
			n, k := 5, 3
			tv, bv := randMat(rng, n, n), randMat(rng, n, k)
			g := G.NewGraph()
			T, B := matrix(g, "T", n, n, tv...), matrix(g, "B", n, k, bv...)
			X := must(TriMul(T, B, lower, trans))
			p := run(t, g, X)
			x, _ := p.Float64s(X)
			for i := 0; i < n; i++ {
				for c := 0; c < k; c++ {
					var s float64
					for j := 0; j < n; j++ {
						r, col := i, j
						if trans {
							r, col = j, i
						}
						if (lower && col > r) || (!lower && col < r) {
							continue
						}
						s += tv[r*n+col] * bv[j*k+c]
					}
					if math.Abs(s-x[i*k+c]) > 1e-12 {
						t.Fatalf("lower=%v trans=%v: (%d,%d) = %v, want %v", lower, trans, i, c, x[i*k+c], s)
					}
				}
			}
		}
	}
}

func TestTriMulGrad(t *testing.T) { checkTriGrad(t, TriMul) }

// TriProd equals TriMask of the full product, at sizes with one panel and
// with several (panel edges inside and outside the matrix).
func TestTriProdForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, m := range []int{3, 95, 96, 150} {
		for _, lower := range []bool{true, false} {
			k := 7
			if m == 150 {
				k = 1 // an outer product: the direct path
			}
			uv, vv := randMat(rng, m, k), randMat(rng, m, k)
			g := G.NewGraph()
			U, V := matrix(g, "U", m, k, uv...), matrix(g, "V", m, k, vv...)
			C := must(TriProd(U, V, lower))
			W := must(TriMask(must(MatMul(U, V, false, true)), lower, 1))
			p := run(t, g, C, W)
			c, _ := p.Float64s(C)
			w, _ := p.Float64s(W)
			for i := range w {
				if math.Abs(c[i]-w[i]) > 1e-12 {
					t.Fatalf("m=%d lower=%v: entry (%d,%d) = %v, want %v", m, lower, i/m, i%m, c[i], w[i])
				}
			}
		}
	}
}

// TriMask keeps one triangle and scales the diagonal, against its
// definition entry by entry.
func TestTriMaskForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	n := 7
	xv := randMat(rng, n, n)
	for _, lower := range []bool{true, false} {
		g := G.NewGraph()
		X := matrix(g, "X", n, n, xv...)
		M := must(TriMask(X, lower, 0.5))
		p := run(t, g, M)
		got, _ := p.Float64s(M)
		for i := range n {
			for j := range n {
				want := 0.0
				switch {
				case i == j:
					want = 0.5 * xv[i*n+j]
				case (i > j) == lower:
					want = xv[i*n+j]
				}
				if got[i*n+j] != want {
					t.Fatalf("lower=%v: entry (%d,%d) = %v, want %v", lower, i, j, got[i*n+j], want)
				}
			}
		}
	}
}

func TestTriProdGrad(t *testing.T) {
	for _, lower := range []bool{true, false} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			U, V := matrix(g, "U", 4, 3, randMat(rng, 4, 3)...), matrix(g, "V", 4, 3, randMat(rng, 4, 3)...)
			return nonlinearCost(t, rng, must(TriProd(U, V, lower))), G.Nodes{U, V}
		})
	}
}

func vec4(g *G.ExprGraph, name string, v ...float64) *G.Node { return vec(g, name, v...) }

func TestLogDetChol(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	n := 5
	a := spd(rng, n)
	g := G.NewGraph()
	A := matrix(g, "A", n, n, a...)
	ld := must(LogDetChol(must(Cholesky(A))))
	p := run(t, g, ld)
	got, _ := p.Scalar(ld)
	want := logDetLU(a, n)
	if math.Abs(got-want) > 1e-10 {
		t.Fatalf("logdet = %v, want %v", got, want)
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		A := matrix(g, "A", 4, 4, spd(rng, 4)...)
		return nonlinearCost(t, rng, must(LogDetChol(must(Cholesky(A))))), G.Nodes{A}
	})
}

// logDetLU is an independent reference: Gaussian elimination with partial pivoting.
func logDetLU(a []float64, n int) float64 {
	m := append([]float64(nil), a...)
	var ld float64
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r*n+c]) > math.Abs(m[p*n+c]) {
				p = r
			}
		}
		for k := 0; k < n; k++ {
			m[c*n+k], m[p*n+k] = m[p*n+k], m[c*n+k]
		}
		ld += math.Log(math.Abs(m[c*n+c]))
		for r := c + 1; r < n; r++ {
			f := m[r*n+c] / m[c*n+c]
			for k := c; k < n; k++ {
				m[r*n+k] -= f * m[c*n+k]
			}
		}
	}
	return ld
}

func TestMaskOpsGrad(t *testing.T) {
	ops := map[string]func(*G.Node) (*G.Node, error){
		"tril":  func(x *G.Node) (*G.Node, error) { return TriMask(x, true, 0.5) },
		"triu":  func(x *G.Node) (*G.Node, error) { return TriMask(x, false, 2) },
		"sym":   Sym,
		"diag":  Diag,
		"diagm": func(x *G.Node) (*G.Node, error) { return DiagMatrix(must(Diag(x))) },
	}
	for name, f := range ops {
		t.Run(name, func(t *testing.T) {
			checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
				X := matrix(g, "X", 3, 3, randMat(rng, 3, 3)...)
				return nonlinearCost(t, rng, must(f(X))), G.Nodes{X}
			})
		})
	}
}

func TestMatMulGrad(t *testing.T) {
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			t.Run("", func(t *testing.T) {
				checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
					ar, ac := 3, 2
					if ta {
						ar, ac = 2, 3
					}
					br, bc := 2, 4
					if tb {
						br, bc = 4, 2
					}
					A := matrix(g, "A", ar, ac, randMat(rng, ar, ac)...)
					B := matrix(g, "B", br, bc, randMat(rng, br, bc)...)
					return nonlinearCost(t, rng, must(MatMul(A, B, ta, tb))), G.Nodes{A, B}
				})
			})
		}
	}
	// Column times row: Gorgonia's Mul would take this for a dot product.
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, b := vec(g, "a", randMat(rng, 3, 1)...), vec(g, "b", randMat(rng, 4, 1)...)
		return nonlinearCost(t, rng, must(Outer(a, b))), G.Nodes{a, b}
	})
}

// MatMul(A, A, false, true) becomes the unary Gram op, whose reverse pass
// folds both sides into one product: value and gradients at both orders.
func TestGramGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	av := randMat(rng, 4, 3)
	g := G.NewGraph()
	A := matrix(g, "A", 4, 3, av...)
	K := must(MatMul(A, A, false, true))
	if _, ok := K.Op().(gramOp); !ok {
		t.Fatalf("MatMul(A, A, false, true) built %T, want gramOp", K.Op())
	}
	p := run(t, g, K)
	k, _ := p.Float64s(K)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			var want float64
			for q := 0; q < 3; q++ {
				want += av[3*i+q] * av[3*j+q]
			}
			if math.Abs(k[4*i+j]-want) > 1e-12 {
				t.Fatalf("K[%d,%d] = %v, want %v", i, j, k[4*i+j], want)
			}
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		A := matrix(g, "A", 4, 3, randMat(rng, 4, 3)...)
		return nonlinearCost(t, rng, must(MatMul(A, A, false, true))), G.Nodes{A}
	})
}

// A node feeding several products gets its gradient as one accumulated
// sum of products (plus the other contributions): values and derivatives
// at both orders.
func TestGradSumOfProducts(t *testing.T) {
	build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		X := matrix(g, "X", 4, 3, randMat(rng, 4, 3)...)
		Z1, Z2 := matrix(g, "Z1", 2, 3, randMat(rng, 2, 3)...), matrix(g, "Z2", 5, 3, randMat(rng, 5, 3)...)
		k1 := must(MatMul(X, Z1, false, true))
		k2 := must(MatMul(Z2, X, false, true))
		sq := must(G.Square(X))
		c1, c2, c3 := nonlinearCost(t, rng, k1), nonlinearCost(t, rng, k2), nonlinearCost(t, rng, sq)
		return must(G.Add(must(G.Add(c1, c2)), c3)), G.Nodes{X, Z1, Z2}
	}
	g := G.NewGraph()
	cost, params := build(g, rand.New(rand.NewPCG(71, 72)))
	gr, err := Grad(cost, params[0])
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range children(gr[0]) {
		_, ok := c.Op().(matMulSumOp)
		found = found || ok
	}
	if _, ok := gr[0].Op().(matMulSumOp); ok || found {
		found = true
	}
	if !found {
		t.Fatalf("∂cost/∂X is %v, want a sum of products in it", gr[0].Op())
	}
	checkBoth(t, build)
}

// A sum of products evaluates to the sum of its terms' values, whatever
// mix of outer products (k = 1, merged into one product) and full products,
// and of transposes, it holds.
func TestSumOfProductsValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	const m, n = 7, 5
	term := func(k int, ta, tb bool) matMulOp {
		op := matMulOp{ta: ta, tb: tb, m: m, n: n, k: k, ar: m, ac: k, br: k, bc: n}
		if ta {
			op.ar, op.ac = k, m
		}
		if tb {
			op.br, op.bc = n, k
		}
		return op
	}
	for trial, ks := range [][]int{{1, 1, 1}, {3, 1, 4, 1}, {1}, {2, 6}, {1, 2}} {
		var op matMulSumOp
		var vs []G.Value
		want := make([]float64, m*n)
		for i, k := range ks {
			tr := term(k, (trial+i)%2 == 1, (trial+i)/2%2 == 1)
			op.terms = append(op.terms, tr)
			a := tensor.New(tensor.WithShape(tr.ar, tr.ac), tensor.WithBacking(randMat(rng, tr.ar, tr.ac)))
			b := tensor.New(tensor.WithShape(tr.br, tr.bc), tensor.WithBacking(randMat(rng, tr.br, tr.bc)))
			vs = append(vs, a, b)
			one, err := tr.Do(a, b)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := Float64s(one)
			for e := range want {
				want[e] += f[e]
			}
		}
		got, err := op.Do(vs...)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := Float64s(got)
		for e := range want {
			if math.Abs(f[e]-want[e]) > 1e-12*(1+math.Abs(want[e])) {
				t.Fatalf("terms with k = %v: element %d = %v, want %v", ks, e, f[e], want[e])
			}
		}
	}
}

// From the blocked kernel's size on, Gram computes one triangle and
// mirrors it: bit for bit the full product of two nodes holding A, and
// exactly symmetric.
func TestGramMatchesProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, s := range [][2]int{{4, 3}, {13, 40}, {100, 784}, {301, 20}} {
		n, d := s[0], s[1]
		av := randMat(rng, n, d)
		g := G.NewGraph()
		A := matrix(g, "A", n, d, av...)
		B := matrix(g, "B", n, d, av...)
		K, P := must(MatMul(A, A, false, true)), must(MatMul(A, B, false, true))
		p := run(t, g, K, P)
		k, _ := p.Float64s(K)
		q, _ := p.Float64s(P)
		for i := range n {
			for j := range n {
				if math.Float64bits(k[i*n+j]) != math.Float64bits(q[i*n+j]) || k[i*n+j] != k[j*n+i] {
					t.Fatalf("%dx%d: K[%d,%d] = %v, K[%d,%d] = %v, product %v", n, d, i, j, k[i*n+j], j, i, k[j*n+i], q[i*n+j])
				}
			}
		}
	}
}

// Gram's adjoint forms Ḡ + Ḡᵀ before the product: bit for bit the product
// with Sym(Ḡ) doubled afterwards, as it was computed before.
func TestGramAdjointBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const n, d = 37, 50
	g := G.NewGraph()
	A := matrix(g, "A", n, d, randMat(rng, n, d)...)
	W := matrix(g, "W", n, n, randMat(rng, n, n)...)
	cost := must(G.Sum(must(G.HadamardProd(must(MatMul(A, A, false, true)), W))))
	grads, err := Grad(cost, A)
	if err != nil {
		t.Fatal(err)
	}
	want := must(G.HadamardProd(must(MatMul(must(Sym(W)), A, false, false)), G.NewConstant(2.0)))
	p := run(t, g, grads[0], want)
	a, _ := p.Float64s(grads[0])
	b, _ := p.Float64s(want)
	for i := range b {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("Ā[%d] = %v, 2·Sym(Ḡ)·A = %v", i, a[i], b[i])
		}
	}
}

// TriSolve's adjoint for its factor takes the minus sign in the product:
// bit for bit the negated triangle it was (the other triangle +0 where the
// negation gave −0).
func TestTriSolveAdjointSignBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	const n, k = 40, 30
	for _, trans := range []bool{false, true} {
		g := G.NewGraph()
		T := matrix(g, "T", n, n, tri(rng, n, true)...)
		B := matrix(g, "B", n, k, randMat(rng, n, k)...)
		W := matrix(g, "W", n, k, randMat(rng, n, k)...)
		X := must(TriSolve(T, B, true, trans))
		grads, err := Grad(must(G.Sum(must(G.HadamardProd(X, W)))), T)
		if err != nil {
			t.Fatal(err)
		}
		gb := must(TriSolve(T, W, true, !trans))
		u, v := gb, X
		if trans {
			u, v = X, gb
		}
		want := must(G.Neg(must(TriProd(u, v, true))))
		p := run(t, g, grads[0], want)
		a, _ := p.Float64s(grads[0])
		b, _ := p.Float64s(want)
		for i := range b {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(a[i] == 0 && b[i] == 0) {
				t.Fatalf("trans=%v: T̄[%d] = %v, −tri(…) = %v", trans, i, a[i], b[i])
			}
		}
	}
}

// TriSolveLower is tril(op(L)⁻¹·tril(B)): against the composition of
// TriMask and TriSolve, below and above the size the blocked code takes,
// with B's upper triangle filled with values it must not read.
func TestTriSolveLowerForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, n := range []int{4, 13, 40, 97} {
		for _, trans := range []bool{false, true} {
			lv, bv := tri(rng, n, true), randMat(rng, n, n)
			g := G.NewGraph()
			L, B := matrix(g, "L", n, n, lv...), matrix(g, "B", n, n, bv...)
			X := must(TriSolveLower(L, B, trans))
			W := must(TriMask(must(TriSolve(L, must(TriMask(B, true, 1)), true, trans)), true, 1))
			p := run(t, g, X, W)
			x, _ := p.Float64s(X)
			w, _ := p.Float64s(W)
			for i := range x {
				if math.Abs(x[i]-w[i]) > 1e-11*(1+math.Abs(w[i])) || (i%n > i/n && x[i] != 0) {
					t.Fatalf("n=%d trans=%v: entry (%d,%d) = %v, want %v", n, trans, i/n, i%n, x[i], w[i])
				}
			}
		}
	}
	g := G.NewGraph()
	if _, err := TriSolveLower(matrix(g, "L", 3, 3, tri(rng, 3, true)...), matrix(g, "B", 3, 2, randMat(rng, 3, 2)...), false); err == nil {
		t.Error("a 3×2 right-hand side was accepted")
	}
}

// First and second order, for the unblocked (n = 4) and blocked (n = 21)
// paths, with B's upper triangle not zero (its gradient there must be).
func TestTriSolveLowerGrad(t *testing.T) {
	for _, n := range []int{4, 21} {
		for _, trans := range []bool{false, true} {
			t.Run(fmt.Sprintf("n%d-trans%v", n, trans), func(t *testing.T) {
				checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
					L := matrix(g, "L", n, n, tri(rng, n, true)...)
					B := matrix(g, "B", n, n, randMat(rng, n, n)...)
					return nonlinearCost(t, rng, must(TriSolveLower(L, B, trans))), G.Nodes{L, B}
				})
			})
		}
	}
}
