package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// special values: zeros of both signs, infinities, a NaN, a negative (for
// Log and Sqrt), a subnormal, huge and tiny magnitudes.
var special = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), -2.5, 1e-310, 1e300, -1e-300, 1}

// fastData returns n random values with special ones mixed in, so that
// the fast loops and Gorgonia's must agree on edge cases too.
func fastData(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64() * math.Exp(rng.NormFloat64())
		if rng.IntN(6) == 0 {
			x[i] = special[rng.IntN(len(special))]
		}
	}
	return x
}

// specialData fills x with special values: with k running over
// [0, len(special)²), the first argument (a = 0) and the second (a = 1)
// meet in every pair of them, element 0 of each at least.
func specialData(x []float64, a, k int) {
	l := len(special)
	for j := range x {
		if a == 0 {
			x[j] = special[(j+k)%l]
		} else {
			x[j] = special[(j+k/l)%l]
		}
	}
}

// sameBits reports whether two values are the same float64, NaNs equal to
// each other (their payloads carry no meaning) and zeros told apart by sign.
func sameBits(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

// sameValue returns an error unless got and want are values of the same
// type and exact shape holding bit-identical data.
func sameValue(got, want G.Value) error {
	if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
		return fmt.Errorf("value of type %T, Gorgonia's %T", got, want)
	}
	if !sameShape(got.Shape(), want.Shape()) {
		return fmt.Errorf("shape %v, Gorgonia's %v", got.Shape(), want.Shape())
	}
	g, err := Float64s(got)
	if err != nil {
		return err
	}
	w, err := Float64s(want)
	if err != nil {
		return err
	}
	if len(g) != len(w) {
		return fmt.Errorf("%d values, Gorgonia's %d", len(g), len(w))
	}
	for i := range g {
		if !sameBits(g[i], w[i]) {
			return fmt.Errorf("element %d is %v (%#x), Gorgonia's %v (%#x)", i, g[i], math.Float64bits(g[i]), w[i], math.Float64bits(w[i]))
		}
	}
	return nil
}

// leaf is an input node of the given shape (a scalar for an empty one)
// holding data.
func leaf(g *G.ExprGraph, name string, s tensor.Shape, data []float64) *G.Node {
	return Input(g, name, s, data)
}

// stepOf returns the executor's step computing n.
func stepOf(t *testing.T, p *Program, n *G.Node) *flatStep {
	t.Helper()
	i, ok := p.f.index[n]
	if !ok {
		t.Fatalf("%v is not scheduled", n.Name())
	}
	return &p.f.steps[i]
}

// needFastOps skips a test of the fast forms when GPC_FASTOPS=off.
func needFastOps(t *testing.T) {
	t.Helper()
	if !fastOpsOn {
		t.Skip("GPC_FASTOPS=off")
	}
}

// fastCase builds one op node from its arguments.
type fastCase struct {
	name   string
	shapes []tensor.Shape
	build  func(args ...*G.Node) (*G.Node, error)
}

func bin(f func(a, b *G.Node) (*G.Node, error)) func(args ...*G.Node) (*G.Node, error) {
	return func(args ...*G.Node) (*G.Node, error) { return f(args[0], args[1]) }
}

func cmp(f func(a, b *G.Node, same bool) (*G.Node, error)) func(args ...*G.Node) (*G.Node, error) {
	return func(args ...*G.Node) (*G.Node, error) { return f(args[0], args[1], true) }
}

func un(f func(a *G.Node) (*G.Node, error)) func(args ...*G.Node) (*G.Node, error) {
	return func(args ...*G.Node) (*G.Node, error) { return f(args[0]) }
}

func sumAlong(axes ...int) func(args ...*G.Node) (*G.Node, error) {
	return func(args ...*G.Node) (*G.Node, error) { return G.Sum(args[0], axes...) }
}

// fastCases covers every recognised kind: the binary ops in all four
// forms (tensor and tensor, tensor and scalar, scalar and tensor, two
// scalars), the unary ops on tensors and scalars, sums over everything and
// along each axis of matrices and 3-tensors, and the matrix transpose.
func fastCases() []fastCase {
	scalar := tensor.ScalarShape()
	tensorShapes := []tensor.Shape{{1}, {7}, {50, 3}, {1, 9}, {6, 1}, {4, 5, 6}}
	var cs []fastCase
	bins := map[string]func(a, b *G.Node) (*G.Node, error){
		"Add": G.Add, "Sub": G.Sub, "HadamardProd": G.HadamardProd, "HadamardDiv": G.HadamardDiv,
	}
	cmps := map[string]func(a, b *G.Node, same bool) (*G.Node, error){
		"Lt": G.Lt, "Gt": G.Gt, "Lte": G.Lte, "Gte": G.Gte, "Eq": G.Eq, "Ne": G.Ne,
	}
	for _, s := range tensorShapes {
		forms := [][]tensor.Shape{{s, s}, {s, scalar}, {scalar, s}}
		for name, f := range bins {
			for _, sh := range forms {
				cs = append(cs, fastCase{name, sh, bin(f)})
			}
		}
		for name, f := range cmps {
			for _, sh := range forms {
				cs = append(cs, fastCase{name, sh, cmp(f)})
			}
		}
	}
	for name, f := range bins {
		cs = append(cs, fastCase{name, []tensor.Shape{scalar, scalar}, bin(f)})
	}
	for name, f := range cmps {
		cs = append(cs, fastCase{name, []tensor.Shape{scalar, scalar}, cmp(f)})
	}
	unaries := map[string]func(a *G.Node) (*G.Node, error){
		"Exp": G.Exp, "Log": G.Log, "Neg": G.Neg, "Square": G.Square, "Sqrt": G.Sqrt,
		"Inverse": G.Inverse, "InverseSqrt": G.InverseSqrt, "Cube": G.Cube, "Tanh": G.Tanh, "Abs": G.Abs,
	}
	for name, f := range unaries {
		for _, s := range append(tensorShapes, scalar) {
			cs = append(cs, fastCase{name, []tensor.Shape{s}, un(f)})
		}
	}
	for _, s := range tensorShapes {
		cs = append(cs, fastCase{"Sum", []tensor.Shape{s}, sumAlong()})
		for ax := range s {
			if len(s) > 1 {
				cs = append(cs, fastCase{fmt.Sprintf("Sum%d", ax), []tensor.Shape{s}, sumAlong(ax)})
			}
		}
		all := make([]int, len(s))
		for i := range all {
			all[i] = i
		}
		cs = append(cs, fastCase{fmt.Sprint("Sum", all), []tensor.Shape{s}, sumAlong(all...)})
		if len(s) == 2 {
			cs = append(cs, fastCase{"Transpose", []tensor.Shape{s}, un(func(a *G.Node) (*G.Node, error) { return G.Transpose(a) })})
		}
	}
	cs = append(cs, fastCase{"Transpose", []tensor.Shape{{50, 50}}, un(func(a *G.Node) (*G.Node, error) { return G.Transpose(a) })})
	return cs
}

// Every recognised op computes what Gorgonia's op computes, bit for bit,
// in value type and shape too, on random inputs with edge values, then on
// every pair of special values, run after run (the outputs are reused).
func TestFastOpsMatchGorgonia(t *testing.T) {
	needFastOps(t)
	rng := rand.New(rand.NewPCG(151, 152))
	for _, c := range fastCases() {
		name := fmt.Sprintf("%s%v", c.name, c.shapes)
		g := G.NewGraph()
		data := make([][]float64, len(c.shapes))
		args := make(G.Nodes, len(c.shapes))
		for i, s := range c.shapes {
			data[i] = fastData(rng, max(1, s.TotalSize()))
			args[i] = leaf(g, fmt.Sprint("x", i), s, data[i])
		}
		y, err := c.build(args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := Compile(g, y)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st := stepOf(t, p, y)
		if st.fast == nil {
			t.Fatalf("%s: %v (%T) is not recognised", name, st.op, st.op)
		}
		for run := range 2 + len(special)*len(special) {
			if run > 0 { // new inputs: a scalar by rebinding, a tensor in place
				for i, s := range c.shapes {
					if run == 1 {
						copy(data[i], fastData(rng, len(data[i])))
					} else {
						specialData(data[i], i, run-2)
					}
					if s.IsScalar() {
						if err := G.Let(args[i], G.NewF64(data[i][0])); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			vals := make([]G.Value, len(args))
			for i, a := range args {
				vals[i] = a.Value()
			}
			want, err := st.op.Do(vals...)
			if err != nil {
				t.Fatalf("%s: Gorgonia's op: %v", name, err)
			}
			if err := p.Run(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, err := p.Value(y)
			if err != nil {
				t.Fatal(err)
			}
			// The executor hands Gorgonia's op its last output when it can:
			// compare with that form, and with Do.
			if pd, ok := st.op.(G.UsePreallocDoer); ok {
				pre := garbage(y.Shape())
				wantPre, err := pd.UsePreallocDo(pre, vals...)
				if err != nil {
					t.Fatalf("%s: Gorgonia's op into a preallocated output: %v", name, err)
				}
				if err := sameValue(got, wantPre); err != nil {
					t.Fatalf("%s, run %d, against UsePreallocDo: %v", name, run, err)
				}
			}
			err = sameValue(got, want)
			if err != nil && c.name == "HadamardDiv" {
				err = onlyAtZeroDivisors(got, want, data[1])
			}
			if err != nil {
				t.Fatalf("%s, run %d, against Do: %v", name, run, err)
			}
		}
	}
}

// garbage is a value of shape s full of NaNs, for an op to overwrite.
func garbage(s tensor.Shape) G.Value {
	if s.IsScalar() {
		return G.NewF64(math.NaN())
	}
	d := make([]float64, s.TotalSize())
	for i := range d {
		d[i] = math.NaN()
	}
	return tensor.New(tensor.WithShape(s...), tensor.WithBacking(d))
}

// onlyAtZeroDivisors accepts a quotient that differs from Gorgonia's Do
// only where the divisor is zero and Do gives +Inf. Gorgonia's division is
// two functions: Do (without a preallocated output) divides two tensors,
// or a tensor filled with a scalar dividend by a tensor, through
// vecf64.Div, which gives +Inf for every zero divisor; into a
// preallocated output, the executor's form from the second run on (the
// first has no output yet) and the fast form's, it divides element by
// element (−Inf, NaN for 0/0).
func onlyAtZeroDivisors(got, want G.Value, divisor []float64) error {
	g, _ := Float64s(got)
	w, _ := Float64s(want)
	for i := range g {
		d := divisor[0]
		if len(divisor) > 1 {
			d = divisor[i]
		}
		if !sameBits(g[i], w[i]) && (d != 0 || !math.IsInf(w[i], 1)) {
			return fmt.Errorf("element %d is %v, Gorgonia's %v, divisor %v", i, g[i], w[i], d)
		}
	}
	return nil
}

// Ops or argument forms without a fast form are left to Gorgonia:
// comparisons returning booleans, Pow, sums over two of three axes,
// transposes of 3-tensors and a Gorgonia broadcast's repeat.
func TestFastOpsNotRecognised(t *testing.T) {
	needFastOps(t)
	rng := rand.New(rand.NewPCG(153, 154))
	g := G.NewGraph()
	a := leaf(g, "a", tensor.Shape{3, 4}, fastData(rng, 12))
	b := leaf(g, "b", tensor.Shape{3, 4}, fastData(rng, 12))
	c := leaf(g, "c", tensor.Shape{2, 3, 4}, fastData(rng, 24))
	gt := must(G.Gt(a, b, false))
	pow := must(G.Pow(a, b))
	sum2 := must(G.Sum(c, 0, 2))
	tr3 := must(G.Transpose(c, 2, 0, 1))
	col := leaf(g, "col", tensor.Shape{3}, fastData(rng, 3))
	bc := must(G.BroadcastAdd(must(G.Neg(col)), must(G.Neg(a)), []byte{1}, nil))
	p, err := Compile(g, gt, pow, sum2, tr3, bc)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range (G.Nodes{gt, pow, sum2, tr3}) {
		if st := stepOf(t, p, n); st.fast != nil {
			t.Errorf("%v (%v) is recognised", n.Name(), st.op)
		}
	}
	// The broadcast's repeat is Gorgonia's; the addition after it is fast.
	if st := stepOf(t, p, bc); st.fast == nil {
		t.Errorf("the addition of a broadcast (%v) is not recognised", st.op)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	checkAgainstTape(t, g, G.Nodes{pow, sum2, tr3, bc}, p)
}

// checkAgainstTape compares every output of p with the same graph run
// through Gorgonia's ops alone (the flat executor with the fast forms off).
func checkAgainstTape(t *testing.T, g *G.ExprGraph, outs G.Nodes, p *Program) {
	t.Helper()
	on := fastOpsOn
	fastOpsOn = false
	ref, err := Compile(g, outs...)
	fastOpsOn = on
	if err != nil {
		t.Fatal(err)
	}
	for i := range ref.f.steps {
		if ref.f.steps[i].fast != nil {
			t.Fatal("fast forms are on in the reference program")
		}
	}
	if err := ref.Run(); err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		got, err := p.Value(o)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Value(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameValue(got, want); err != nil {
			t.Errorf("%v: %v", o.Name(), err)
		}
	}
}

// When an argument at run time is not what the schedule expected (a view,
// a value of another shape, a tensor for a scalar), the fast form declines
// and Gorgonia's op runs; a later run with a plain argument is fast again.
func TestFastOpsFallBack(t *testing.T) {
	needFastOps(t)
	rng := rand.New(rand.NewPCG(155, 156))
	g := G.NewGraph()
	xv, wv := fastData(rng, 6), fastData(rng, 6)
	x := leaf(g, "x", tensor.Shape{2, 3}, xv)
	w := leaf(g, "w", tensor.Shape{2, 3}, wv)
	y := must(G.HadamardProd(x, w))
	e := must(G.Exp(x))
	s := must(G.Sum(x, 1))
	tr := must(G.Transpose(x))
	p, err := Compile(g, y, e, s, tr)
	if err != nil {
		t.Fatal(err)
	}
	outs := G.Nodes{y, e, s, tr}
	for _, n := range outs {
		if stepOf(t, p, n).fast == nil {
			t.Fatalf("%v is not recognised", n.Name())
		}
	}
	plain := x.Value()
	// A transposed view: same shape as x, data in another order.
	view := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking(fastData(rng, 6)))
	if err := view.T(); err != nil {
		t.Fatal(err)
	}
	// The same elements in shape (6): Let accepts it, the schedule does not.
	flat := tensor.New(tensor.WithShape(6), tensor.WithBacking(fastData(rng, 6)))
	for _, v := range []G.Value{view, plain} {
		if err := G.Let(x, v); err != nil {
			t.Fatal(err)
		}
		st := stepOf(t, p, y)
		_, ok := st.fast.do([]G.Value{v, w.Value()})
		if want := v == plain; ok != want {
			t.Fatalf("fast form accepts %v: %v, want %v", v.Shape(), ok, want)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		checkAgainstTape(t, g, outs, p)
	}
	if _, ok := stepOf(t, p, y).fast.do([]G.Value{flat, w.Value()}); ok {
		t.Error("fast form accepts a (6) tensor for a (2, 3) one")
	}
	if _, ok := stepOf(t, p, e).fast.do([]G.Value{G.NewF64(1)}); ok {
		t.Error("fast form accepts a scalar for a tensor")
	}
	if _, ok := stepOf(t, p, s).fast.do([]G.Value{view}); ok {
		t.Error("fast sum accepts a view")
	}
}

// A graph of stock ops and its gradients (second order included) gives
// bit-identical values with the fast forms on and off.
func TestFastOpsWholeGraph(t *testing.T) {
	needFastOps(t)
	rng := rand.New(rand.NewPCG(157, 158))
	g := G.NewGraph()
	x := leaf(g, "x", tensor.Shape{5, 4}, randMat(rng, 5, 4))
	z := leaf(g, "z", tensor.Shape{3, 4}, randMat(rng, 3, 4))
	l := leaf(g, "l", tensor.ScalarShape(), []float64{0.7})
	e := &Chain{}
	d := e.Do(SqDist(x, z))
	k := e.Do(G.Exp(e.Do(G.HadamardProd(d, e.Do(G.Neg(e.Do(G.Square(l))))))))
	r := e.Do(G.HadamardDiv(e.Do(G.Sum(k, 1)), e.Do(G.Add(e.Do(G.Sum(e.Do(G.Square(x)), 1)), G.NewConstant(1.0)))))
	q := e.Do(MatMul(e.Do(G.Transpose(k)), k, false, false))
	cost := e.Do(G.Add(e.Do(G.Sum(e.Do(G.Log(r)))), e.Do(G.Sum(e.Do(G.Sqrt(e.Do(G.Add(q, G.NewConstant(2.0)))))))))
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	gr, err := Grad(cost, x, l)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := Grad(must(G.Sum(gr[0])), l)
	if err != nil {
		t.Fatal(err)
	}
	outs := append(G.Nodes{cost, gg[0]}, gr...)
	p, err := Compile(g, outs...)
	if err != nil {
		t.Fatal(err)
	}
	fast := 0
	for i := range p.f.steps {
		if p.f.steps[i].fast != nil {
			fast++
		}
	}
	if fast < 20 {
		t.Fatalf("only %d steps are fast", fast)
	}
	for range 2 {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		checkAgainstTape(t, g, outs, p)
	}
}

// A step of recognised ops allocates nothing once its outputs exist.
func TestFastOpsDoNotAllocate(t *testing.T) {
	skipUnderRace(t)
	needFastOps(t)
	rng := rand.New(rand.NewPCG(159, 160))
	g := G.NewGraph()
	x := leaf(g, "x", tensor.Shape{20, 3}, randMat(rng, 20, 3))
	s := leaf(g, "s", tensor.ScalarShape(), []float64{0.5})
	y := must(G.Sum(must(G.Exp(must(G.HadamardProd(must(G.Add(x, x)), s)))), 0))
	c := must(G.Sum(must(G.Transpose(must(G.Square(x))))))
	p, err := Compile(g, y, c)
	if err != nil {
		t.Fatal(err)
	}
	p.Sequential() // the in-order executor is what allocates nothing; side by side a run costs a few
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per run, want 0", a)
	}
}

// The tiled transpose is the definition at every shape around the tile's
// edges.
func TestTransposeTiles(t *testing.T) {
	for _, r := range []int{1, 15, 16, 17, 40} {
		for _, c := range []int{1, 16, 33} {
			x := make([]float64, r*c)
			for i := range x {
				x[i] = float64(i)
			}
			out := make([]float64, r*c)
			transpose(out, x, r, c)
			for i := range r {
				for j := range c {
					if out[j*r+i] != x[i*c+j] {
						t.Fatalf("%dx%d: out[%d,%d] = %v, want %v", r, c, j, i, out[j*r+i], x[i*c+j])
					}
				}
			}
		}
	}
}

// BenchmarkTranspose is the Cholesky gradient's 300×300 transpose, from and
// to memory out of cache (as in a step, between its other passes).
func BenchmarkTranspose(b *testing.B) {
	const copies = 24 // 35 MB: more than the caches
	xs, outs := make([][]float64, copies), make([][]float64, copies)
	for i := range xs {
		xs[i], outs[i] = make([]float64, 300*300), make([]float64, 300*300)
	}
	for i := range b.N {
		transpose(outs[i%copies], xs[i%copies], 300, 300)
	}
}
