package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// testElem is a(b²) + exp(a)·c − c/b: every argument enters nonlinearly and
// the partials differ, so a swapped or missing term shows.
var testElem = &ElemFunc{
	Name: "testElem",
	F: func(x []float64) float64 {
		a, b, c := x[0], x[1], x[2]
		return a*b*b + math.Exp(a)*c - c/b
	},
	DF: func(x, d []float64) {
		a, b, c := x[0], x[1], x[2]
		d[0] = b*b + math.Exp(a)*c
		d[1] = 2*a*b + c/(b*b)
		d[2] = math.Exp(a) - 1/b
	},
	Stock: func(in G.Nodes) (*G.Node, error) {
		a, b, c := in[0], in[1], in[2]
		e := &Chain{}
		t1 := e.Do(G.HadamardProd(a, e.Do(G.Square(b))))
		t2 := e.Do(G.HadamardProd(e.Do(G.Exp(a)), c))
		t3 := e.Do(G.HadamardDiv(c, b))
		return e.Do(G.Sub(e.Do(G.Add(t1, t2)), t3)), e.Err
	},
}

func TestFusedElemFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	// b away from zero: −c/b.
	pos := func(rng *rand.Rand, n, d int) []float64 {
		v := randMat(rng, n, d)
		for i := range v {
			v[i] = 1 + math.Abs(v[i])
		}
		return v
	}
	av, bv, cv := randMat(rng, 3, 4), pos(rng, 3, 4), randMat(rng, 3, 4)
	g := G.NewGraph()
	a, b, c := matrix(g, "a", 3, 4, av...), matrix(g, "b", 3, 4, bv...), matrix(g, "c", 3, 4, cv...)
	m := must(Map(testElem, a, b, c))
	r := must(RowReduce(testElem, a, b, c))
	p := run(t, g, m, r)
	mg, _ := p.Float64s(m)
	rg, _ := p.Float64s(r)
	for i := 0; i < 3; i++ {
		var sum float64
		for j := 0; j < 4; j++ {
			k := 4*i + j
			want := testElem.F([]float64{av[k], bv[k], cv[k]})
			sum += want
			if math.Abs(mg[k]-want) > 1e-13*(1+math.Abs(want)) {
				t.Fatalf("Map[%d,%d] = %v, want %v", i, j, mg[k], want)
			}
		}
		if math.Abs(rg[i]-sum) > 1e-12*(1+math.Abs(sum)) {
			t.Fatalf("RowReduce[%d] = %v, want %v", i, rg[i], sum)
		}
	}
	// First order through the fused adjoints, second order through their
	// Stock-built adjoints.
	for _, reduce := range []bool{false, true} {
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			a, b, c := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, pos(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
			f := Map
			if reduce {
				f = RowReduce
			}
			return nonlinearCost(t, rng, must(f(testElem, a, b, c))), G.Nodes{a, b, c}
		})
	}
	// One node as two arguments.
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, b := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, pos(rng, 3, 4)...)
		return nonlinearCost(t, rng, must(RowReduce(testElem, b, b, a))), G.Nodes{a, b}
	})
	if _, err := Map(testElem, a, b, must(Diag(must(MatMul(a, a, false, true))))); err == nil {
		t.Fatal("Map with a 3-vector among 3×4 matrices: want a shape error")
	}
	v := vec(g, "v", 1, 2, 3, 4)
	if _, err := Map(testElem, v, v, v); err == nil {
		t.Fatal("Map of vectors only: want a shape error")
	}
}

// testElemBatch is testElem with slice forms.
func testElemBatch() ElemFunc {
	batch := *testElem
	batch.Name = "testElemBatch"
	batch.FB = func(args [][]float64, out []float64) {
		x := make([]float64, 3)
		for e := range out {
			x[0], x[1], x[2] = args[0][e], args[1][e], args[2][e]
			out[e] = testElem.F(x)
		}
	}
	batch.DFB = func(args [][]float64, k int, out []float64) {
		x, d := make([]float64, 3), make([]float64, 3)
		for e := range out {
			x[0], x[1], x[2] = args[0][e], args[1][e], args[2][e]
			testElem.DF(x, d)
			out[e] = d[k]
		}
	}
	return batch
}

// The slice forms give the same values and gradients as the per-element
// forms, and the derivatives check out through them.
func TestFusedBatchForms(t *testing.T) {
	batch := testElemBatch()
	for _, reduce := range []bool{false, true} {
		var vals [2][]float64
		for i, f := range []*ElemFunc{testElem, &batch} {
			g := G.NewGraph()
			rng := rand.New(rand.NewPCG(51, 52))
			a, b, c := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, randMat(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
			apply := Map
			if reduce {
				apply = RowReduce
			}
			y := must(apply(f, a, b, c))
			cost := nonlinearCost(t, rng, y)
			gr, err := Grad(cost, a, b, c)
			if err != nil {
				t.Fatal(err)
			}
			p := run(t, g, append(G.Nodes{y}, gr...)...)
			for _, n := range append(G.Nodes{y}, gr...) {
				v, _ := p.Float64s(n)
				vals[i] = append(vals[i], v...)
			}
		}
		for e := range vals[0] {
			if math.Abs(vals[0][e]-vals[1][e]) > 1e-13*(1+math.Abs(vals[0][e])) {
				t.Fatalf("reduce=%v: value %d: per-element %v, slice form %v", reduce, e, vals[0][e], vals[1][e])
			}
		}
		checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			a, b, c := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, randMat(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
			for i := range b.Value().Data().([]float64) {
				b.Value().Data().([]float64)[i] = 1 + math.Abs(b.Value().Data().([]float64)[i])
			}
			apply := Map
			if reduce {
				apply = RowReduce
			}
			return nonlinearCost(t, rng, must(apply(&batch, a, b, c))), G.Nodes{a, b, c}
		})
	}
}

// On a batch large enough to be split across cores, values and adjoints
// (cost Σ W ⊙ y, so ȳ = W) are the element-by-element definition, for both
// forms of the function, Map and RowReduce.
func TestFusedParallelChunks(t *testing.T) {
	const n, d = 301, 257 // an odd split: chunks hold whole rows
	rng := rand.New(rand.NewPCG(61, 62))
	av, bv, cv := randMat(rng, n, d), randMat(rng, n, d), randMat(rng, n, d)
	for i := range bv {
		bv[i] = 1 + math.Abs(bv[i])
	}
	batch := testElemBatch()
	for _, f := range []*ElemFunc{testElem, &batch} {
		for _, reduce := range []bool{false, true} {
			g := G.NewGraph()
			a, b, c := matrix(g, "a", n, d, av...), matrix(g, "b", n, d, bv...), matrix(g, "c", n, d, cv...)
			var y, w *G.Node
			var wv []float64
			if reduce {
				y, wv = must(RowReduce(f, a, b, c)), randMat(rng, n, 1)
				w = vec(g, "w", wv...)
			} else {
				y, wv = must(Map(f, a, b, c)), randMat(rng, n, d)
				w = matrix(g, "w", n, d, wv...)
			}
			cost := must(G.Sum(must(G.HadamardProd(y, w))))
			gr, err := Grad(cost, a, b, c)
			if err != nil {
				t.Fatal(err)
			}
			p := run(t, g, append(G.Nodes{y}, gr...)...)
			yv, _ := p.Float64s(y)
			var grads [3][]float64
			for k := range grads {
				grads[k], _ = p.Float64s(gr[k])
			}
			x, dx := make([]float64, 3), make([]float64, 3)
			for i := 0; i < n; i++ {
				var sum float64
				for j := 0; j < d; j++ {
					e := i*d + j
					x[0], x[1], x[2] = av[e], bv[e], cv[e]
					v := testElem.F(x)
					sum += v
					if !reduce && math.Abs(yv[e]-v) > 1e-13*(1+math.Abs(v)) {
						t.Fatalf("%s Map[%d,%d] = %v, want %v", f.Name, i, j, yv[e], v)
					}
					testElem.DF(x, dx)
					we := wv[i]
					if !reduce {
						we = wv[e]
					}
					for k := range grads {
						if want := we * dx[k]; math.Abs(grads[k][e]-want) > 1e-12*(1+math.Abs(want)) {
							t.Fatalf("%s reduce=%v: adjoint %d at [%d,%d] = %v, want %v", f.Name, reduce, k, i, j, grads[k][e], want)
						}
					}
				}
				if reduce && math.Abs(yv[i]-sum) > 1e-11*(1+math.Abs(sum)) {
					t.Fatalf("%s RowReduce[%d] = %v, want %v", f.Name, i, yv[i], sum)
				}
			}
		}
	}
}

// A d-vector argument stands for the matrix with it in every row: values
// and gradients equal those with an explicit BroadcastTo, for both forms
// of the function, Map and RowReduce, small and split across cores; the
// derivatives check out at both orders.
func TestFusedRowVectorArguments(t *testing.T) {
	batch := testElemBatch()
	for _, sz := range [][2]int{{3, 4}, {301, 257}} {
		n, d := sz[0], sz[1]
		for _, f := range []*ElemFunc{testElem, &batch} {
			for _, reduce := range []bool{false, true} {
				var vals [2][]float64
				for i, explicit := range []bool{true, false} {
					g := G.NewGraph()
					rng := rand.New(rand.NewPCG(55, 56))
					a, c := matrix(g, "a", n, d, randMat(rng, n, d)...), matrix(g, "c", n, d, randMat(rng, n, d)...)
					bv := randMat(rng, d, 1)
					for j := range bv {
						bv[j] = 1 + math.Abs(bv[j])
					}
					b := vec(g, "b", bv...)
					arg := b
					if explicit {
						arg = must(BroadcastTo(b, tensor.Shape{n, d}, []int{0}))
					}
					apply := Map
					if reduce {
						apply = RowReduce
					}
					y := must(apply(f, a, arg, c))
					cost := nonlinearCost(t, rng, y)
					gr, err := Grad(cost, a, b, c)
					if err != nil {
						t.Fatal(err)
					}
					if !explicit && !sameShape(gr[1].Shape(), tensor.Shape{d}) {
						t.Fatalf("gradient of the row vector has shape %v", gr[1].Shape())
					}
					p := run(t, g, append(G.Nodes{y}, gr...)...)
					for _, nd := range append(G.Nodes{y}, gr...) {
						v, _ := p.Float64s(nd)
						vals[i] = append(vals[i], v...)
					}
				}
				for e := range vals[0] {
					if math.Abs(vals[0][e]-vals[1][e]) > 1e-12*(1+math.Abs(vals[0][e])) {
						t.Fatalf("%dx%d %s reduce=%v: value %d: broadcast %v, row vector %v", n, d, f.Name, reduce, e, vals[0][e], vals[1][e])
					}
				}
				if n > 3 {
					continue
				}
				checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
					a, c := matrix(g, "a", n, d, randMat(rng, n, d)...), matrix(g, "c", n, d, randMat(rng, n, d)...)
					bv := randMat(rng, d, 1)
					for j := range bv {
						bv[j] = 1 + math.Abs(bv[j])
					}
					b := vec(g, "b", bv...)
					apply := Map
					if reduce {
						apply = RowReduce
					}
					return nonlinearCost(t, rng, must(apply(f, a, b, c))), G.Nodes{a, b, c}
				})
			}
		}
	}
}

// An argument with gradient contributions besides the fused function's gets
// them added inside the adjoint op (no AddN): the same values as a sum, and
// the derivatives check out at both orders.
func TestFusedAdjointAddend(t *testing.T) {
	batch := testElemBatch()
	build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, b, c := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, randMat(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
		for i := range b.Value().Data().([]float64) {
			b.Value().Data().([]float64)[i] = 1 + math.Abs(b.Value().Data().([]float64)[i])
		}
		y := must(Map(&batch, a, b, c))
		other := nonlinearCost(t, rng, must(G.HadamardProd(a, c))) // more paths to a and c
		return must(G.Add(nonlinearCost(t, rng, y), other)), G.Nodes{a, b, c}
	}
	g := G.NewGraph()
	cost, params := build(g, rand.New(rand.NewPCG(57, 58)))
	gr, err := Grad(cost, params...)
	if err != nil {
		t.Fatal(err)
	}
	if op, ok := gr[0].Op().(elemOp); !ok || op.addends == 0 {
		t.Fatalf("∂cost/∂a is %v, want a fused adjoint with an addend", gr[0].Op())
	}
	checkBoth(t, build)
}

// A Map argument with a unit partial gets ḡ itself as its adjoint, and the
// gradients still check out at both orders, for both forms.
func TestFusedLinearMapArgument(t *testing.T) {
	affine := &ElemFunc{
		Name:   "a+b·c",
		Linear: map[int]float64{0: 1},
		F:      func(x []float64) float64 { return x[0] + x[1]*x[2] },
		DF:     func(x, d []float64) { d[0], d[1], d[2] = 1, x[2], x[1] },
		Stock: func(in G.Nodes) (*G.Node, error) {
			return G.Add(in[0], must(G.HadamardProd(in[1], in[2])))
		},
	}
	batch := *affine
	batch.Name = "a+b·c/batch"
	batch.FB = func(a [][]float64, out []float64) {
		for e := range out {
			out[e] = a[0][e] + a[1][e]*a[2][e]
		}
	}
	batch.DFB = func(a [][]float64, k int, out []float64) {
		for e := range out {
			switch k {
			case 0:
				out[e] = 1
			case 1:
				out[e] = a[2][e]
			default:
				out[e] = a[1][e]
			}
		}
	}
	for _, f := range []*ElemFunc{affine, &batch} {
		build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
			a, b, c := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), matrix(g, "b", 3, 4, randMat(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
			y := must(Map(f, a, b, c))
			return nonlinearCost(t, rng, y), G.Nodes{a, b, c}
		}
		checkBoth(t, build)
		g := G.NewGraph()
		rng := rand.New(rand.NewPCG(59, 60))
		a := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...)
		b, c := matrix(g, "b", 3, 4, randMat(rng, 3, 4)...), matrix(g, "c", 3, 4, randMat(rng, 3, 4)...)
		y := must(Map(f, a, b, c))
		s := must(G.Sum(must(G.Square(y))))
		gr, err := Grad(s, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, isElem := gr[0].Op().(elemOp); isElem {
			t.Fatalf("%s: ∂/∂a is a fused adjoint op, want ḡ passed through", f.Name)
		}
	}
}

// A RowReduce's d-vector argument with a constant partial gets c·Σ_i ḡ_i
// without a pass over the matrix: the same gradient as through the
// partial, and correct at both orders.
func TestFusedLinearRowArgument(t *testing.T) {
	plain := &ElemFunc{
		Name: "a²/2+c·v",
		F:    func(x []float64) float64 { return x[0]*x[0]/2 + 3*x[1] },
		DF:   func(x, d []float64) { d[0], d[1] = x[0], 3 },
		FB: func(a [][]float64, out []float64) {
			for e := range out {
				out[e] = a[0][e]*a[0][e]/2 + 3*a[1][e]
			}
		},
		DFB: func(a [][]float64, k int, out []float64) {
			for e := range out {
				if k == 0 {
					out[e] = a[0][e]
				} else {
					out[e] = 3
				}
			}
		},
		Stock: func(in G.Nodes) (*G.Node, error) {
			e := &Chain{}
			sq := e.Do(G.HadamardProd(e.Do(G.Square(in[0])), G.NewConstant(0.5)))
			return e.Do(G.Add(sq, e.Do(G.HadamardProd(in[1], G.NewConstant(3.0))))), e.Err
		},
	}
	linear := *plain
	linear.Name = "a²/2+c·v/linear"
	linear.Linear = map[int]float64{1: 3}
	var grads [2][]float64
	for i, f := range []*ElemFunc{plain, &linear} {
		g := G.NewGraph()
		rng := rand.New(rand.NewPCG(61, 62))
		a, v := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), vec(g, "v", randMat(rng, 4, 1)...)
		gr, err := Grad(nonlinearCost(t, rng, must(RowReduce(f, a, v))), v)
		if err != nil {
			t.Fatal(err)
		}
		if _, fused := gr[0].Op().(elemOp); fused == (i == 1) {
			t.Fatalf("%s: ∂/∂v is %v", f.Name, gr[0].Op())
		}
		grads[i], _ = run(t, g, gr[0]).Float64s(gr[0])
	}
	for j := range grads[0] {
		if math.Abs(grads[0][j]-grads[1][j]) > 1e-12*(1+math.Abs(grads[0][j])) {
			t.Fatalf("∂/∂v[%d]: %v through the partial, %v from Linear", j, grads[0][j], grads[1][j])
		}
	}
	checkBoth(t, func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		a, v := matrix(g, "a", 3, 4, randMat(rng, 3, 4)...), vec(g, "v", randMat(rng, 4, 1)...)
		return nonlinearCost(t, rng, must(RowReduce(&linear, a, v))), G.Nodes{a, v}
	})
}

// An argument with three gradient contributions, one of them a fused
// adjoint, gets the other two added inside that op (no AddN), and the
// derivatives check out at both orders: the inducing inputs of NIMGP_FO
// have three (cross-covariances, K_ZZ and the first-order Gram matrix).
func TestFusedAdjointTakesSeveralAddends(t *testing.T) {
	build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		z := matrix(g, "z", 3, 4, randMat(rng, 3, 4)...)
		w := vector(g, "w", randMat(rng, 1, 4))
		x := matrix(g, "x", 5, 4, randMat(rng, 5, 4)...)
		y := must(ScaleColumns(z, w)) // z's adjoint through it is a fused Map adjoint
		c := nonlinearCost(t, rng, must(MatMul(y, x, false, true)))
		c = must(G.Add(c, nonlinearCost(t, rng, must(MatMul(z, z, false, true)))))
		c = must(G.Add(c, must(G.Sum(must(G.Tanh(z))))))
		return c, G.Nodes{z, w, x}
	}
	g := G.NewGraph()
	cost, params := build(g, rand.New(rand.NewPCG(61, 62)))
	gr, err := Grad(cost, params...)
	if err != nil {
		t.Fatal(err)
	}
	op, ok := gr[0].Op().(elemOp)
	if !ok || op.addends < 2 {
		t.Fatalf("∂cost/∂z is %v, want a fused adjoint with two or more addends", gr[0].Op())
	}
	for _, n := range g.AllNodes() {
		if _, sum := n.Op().(addNOp); sum && slices.Contains(Inputs(gr[0]), n) {
			t.Errorf("∂cost/∂z still sums contributions with %v before the adjoint", n.Op())
		}
	}
	checkBoth(t, build)
}

// Two or more contributions ḡ_i ⊙ v_i (ScaleColumns' adjoints: z enters
// K_Zx, K_ZZ and a Gram matrix with weights) are summed by one Map, the
// other contributions added in it, and the derivatives check out at both
// orders.
func TestScaledColumnAdjointsSummedOnce(t *testing.T) {
	build := func(g *G.ExprGraph, rng *rand.Rand) (*G.Node, G.Nodes) {
		z := matrix(g, "z", 3, 4, randMat(rng, 3, 4)...)
		w := vector(g, "w", randMat(rng, 1, 4))
		u := vector(g, "u", randMat(rng, 1, 4))
		c := nonlinearCost(t, rng, must(ScaleColumns(z, w)))
		c = must(G.Add(c, nonlinearCost(t, rng, must(ScaleColumns(z, u)))))
		c = must(G.Add(c, must(G.Sum(must(G.Tanh(z))))))
		return c, G.Nodes{z, w, u}
	}
	g := G.NewGraph()
	cost, params := build(g, rand.New(rand.NewPCG(63, 64)))
	gr, err := Grad(cost, params...)
	if err != nil {
		t.Fatal(err)
	}
	op, ok := gr[0].Op().(elemOp)
	if !ok || op.f.Name != "pairProducts2" || op.addends != 1 {
		t.Fatalf("∂cost/∂z is %v, want one sum of two scaled adjoints with the third added", gr[0].Op())
	}
	checkBoth(t, build)
}
