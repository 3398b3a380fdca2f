package graph

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// wideGraph is a multi-class sparse-GP computation: chains classes
// independent Cholesky-factored kernels on shared inputs x, joined in one
// cost, with the gradients for x and every class's z. With bad set, the
// last class's K_ZZ is not positive definite.
func wideGraph(t *testing.T, classes int, bad bool) (p *Program, x *G.Node, outs G.Nodes) {
	t.Helper()
	rng := rand.New(rand.NewPCG(41, 42))
	const n, m, d = 60, 30, 5
	g := G.NewGraph()
	x = matrix(g, "x", n, d, randMat(rng, n, d)...)
	e := &Chain{}
	var cost *G.Node
	wrt := G.Nodes{x}
	for c := range classes {
		z := matrix(g, "z"+string(rune('a'+c)), m, d, randMat(rng, m, d)...)
		wrt = append(wrt, z)
		kzz := e.Do(Exp(e.Do(G.HadamardProd(e.Do(SqDist(z, z)), G.NewConstant(-0.5)))))
		jit := 1e-6
		if bad && c == classes-1 {
			jit = -2
		}
		kzz = e.Do(G.Add(kzz, e.Do(DiagMatrix(e.Do(G.HadamardProd(e.Do(Diag(kzz)), G.NewConstant(jit)))))))
		kxz := e.Do(Exp(e.Do(G.HadamardProd(e.Do(SqDist(x, z)), G.NewConstant(-0.5)))))
		l := e.Do(Cholesky(kzz))
		a := e.Do(TriSolve(l, e.Do(G.Transpose(kxz)), true, false))
		v := e.Do(G.Sub(e.Do(G.Sum(e.Do(Square(kxz)), 1)), e.Do(G.Sum(e.Do(Square(a)), 0))))
		term := e.Do(G.Add(e.Do(G.Sum(e.Do(NormCDF(v)))), e.Do(LogDetChol(l))))
		if cost == nil {
			cost = term
		} else {
			cost = e.Do(G.Add(cost, term))
		}
	}
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	grads, err := Grad(cost, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(G.Nodes{cost}, grads...)
	if p, err = Compile(g, outs...); err != nil {
		t.Fatal(err)
	}
	return p, x, outs
}

// sideBySide makes p run on two workers whatever its width.
func sideBySide(p *Program) {
	p.f.unshare()
	p.f.workers = 2
	p.f.pending = make([]atomicInt32s, len(p.f.steps))
}

// Run side by side, a wide graph gives bit for bit what it gives run in
// order with every op on one goroutine (gemm.Serial), over repeated runs
// with new inputs and while held.
func TestInterOpMatchesSequential(t *testing.T) {
	par, px, pOuts := wideGraph(t, 6, false)
	seq, sx, sOuts := wideGraph(t, 6, false)
	sideBySide(par)
	seq.Sequential()
	rng := rand.New(rand.NewPCG(7, 8))
	for run := range 6 {
		if run == 3 {
			par.Hold(px)
			seq.Hold(sx)
		}
		xs := randMat(rng, 60, 5)
		for _, p := range []struct {
			prog *Program
			x    *G.Node
		}{{par, px}, {seq, sx}} {
			if err := G.Let(p.x, tensor.New(tensor.WithShape(60, 5), tensor.WithBacking(append([]float64(nil), xs...)))); err != nil {
				t.Fatal(err)
			}
		}
		if err := par.Run(); err != nil {
			t.Fatal(err)
		}
		release := gemm.Serial()
		err := seq.Run()
		release()
		if err != nil {
			t.Fatal(err)
		}
		for i := range pOuts {
			a, _ := par.Float64s(pOuts[i])
			b, _ := seq.Float64s(sOuts[i])
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("run %d output %d: %d and %d values", run, i, len(a), len(b))
			}
			for j := range a {
				if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
					t.Fatalf("run %d output %d[%d]: side by side %v, in order %v", run, i, j, a[j], b[j])
				}
			}
		}
	}
}

// A failing op ends a side-by-side run with its error (the one callers act
// on), and a panicking op with an error, not a crash or a hang; the
// program runs again afterwards.
func TestInterOpErrorsAndPanics(t *testing.T) {
	p, _, _ := wideGraph(t, 4, true)
	sideBySide(p)
	for range 2 {
		if err := p.Run(); !errors.Is(err, ErrNotPositiveDefinite) {
			t.Fatalf("err = %v, want ErrNotPositiveDefinite", err)
		}
	}
	g := G.NewGraph()
	x := matrix(g, "x", 4, 3, make([]float64, 12)...)
	boom := &RowFunc{Name: "boom", Out: 1, F: func(in [][]float64, out, _ []float64) { panic("boom") }}
	fine := &RowFunc{Name: "fine", Out: 1, F: func(in [][]float64, out, _ []float64) { out[0] = 1 }}
	r1, err := Rows(boom, x)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Rows(fine, x)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := G.Add(r1, r2)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Compile(g, sum)
	if err != nil {
		t.Fatal(err)
	}
	sideBySide(q)
	if err := q.Run(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want the panic as an error", err)
	}
}

// plan keeps a small graph in order and runs a wide, heavy one side by side.
func TestInterOpPlan(t *testing.T) {
	if interOpMode != "" {
		t.Skip("GPC_INTEROP is set")
	}
	small, _, _ := wideGraph(t, 6, false)
	if small.f.workers != 1 {
		t.Errorf("a small wide graph got %d workers, want 1", small.f.workers)
	}
	g := G.NewGraph()
	rng := rand.New(rand.NewPCG(1, 1))
	x := matrix(g, "x", 200, 400, randMat(rng, 200, 400)...)
	var sum *G.Node
	for c := range 4 {
		z := matrix(g, "z"+string(rune('a'+c)), 100, 400, randMat(rng, 100, 400)...)
		k := must(MatMul(z, x, false, true))
		s := must(G.Sum(must(Square(k))))
		if sum == nil {
			sum = s
		} else {
			sum = must(G.Add(sum, s))
		}
	}
	p, err := Compile(g, sum)
	if err != nil {
		t.Fatal(err)
	}
	if want := min(4, gemmProcs()); want >= 2 && p.f.workers < 2 {
		t.Errorf("four independent 8 M multiply-add chains got %d workers", p.f.workers)
	}
}

// atomicInt32s is the element type of flat.pending.
type atomicInt32s = atomic.Int32

// gemmProcs is the goroutines a product may use now.
func gemmProcs() int { return gemm.Procs() }

// ProductTime counts the time of products only while TimeProducts is on.
func TestProductTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	g := G.NewGraph()
	a := matrix(g, "a", 120, 130, randMat(rng, 120, 130)...)
	b := matrix(g, "b", 130, 140, randMat(rng, 130, 140)...)
	p, err := Compile(g, must(MatMul(a, b, false, false)))
	if err != nil {
		t.Fatal(err)
	}
	t0 := ProductTime()
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if d := ProductTime() - t0; d != 0 {
		t.Fatalf("timing off, yet %v counted", d)
	}
	TimeProducts(true)
	defer TimeProducts(false)
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if d := ProductTime() - t0; d <= 0 {
		t.Fatalf("timing on, a 2 M multiply-add product counted %v", d)
	}
}

// A loop split across cores splits the same way while an inter-op
// scheduler holds gemm.Serial (its chunks then run in turn), and a column
// sum adds its chunks in order: the gradient of a row-vector argument is
// bit for bit the same either way. Before, under Serial the loop ran in one
// piece and rounded differently, so one program's results could depend on
// whether another ran side by side in the same process.
func TestChunkedReductionIndependentOfSerial(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two procs to split")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	const n, d = 4000, 300
	g := G.NewGraph()
	x := matrix(g, "x", n, d, randMat(rng, n, d)...)
	v := leaf(g, "v", tensor.Shape{d}, randMat(rng, 1, d))
	c := must(G.Sum(must(Square(must(ScaleColumns(x, v))))))
	grads, err := Grad(c, v)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(g, grads[0])
	if err != nil {
		t.Fatal(err)
	}
	p.Sequential()
	run := func() []float64 {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		out, _ := p.Float64s(grads[0])
		return append([]float64(nil), out...)
	}
	free := run()
	release := gemm.Serial()
	held := run()
	release()
	for j := range free {
		if math.Float64bits(free[j]) != math.Float64bits(held[j]) {
			t.Fatalf("v̄[%d] = %v split across cores, %v under Serial", j, free[j], held[j])
		}
	}
}

// While OneCorePerRun is held, a program planned side by side runs its
// steps one at a time and its products on one goroutine; released, the
// same program runs two steps at once again.
func TestOneCorePerRun(t *testing.T) {
	var inFlight, most atomic.Int32
	slow := &RowFunc{Name: "slow", Out: 1, F: func(in [][]float64, out, _ []float64) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		out[0] = in[0][0]
	}}
	g := G.NewGraph()
	var sum *G.Node
	for i := range 2 { // two inputs: the graph merges identical nodes
		r := must(Rows(slow, matrix(g, "x"+string(rune('a'+i)), 1, 1, 1)))
		if sum == nil {
			sum = r
		} else {
			sum = must(G.Add(sum, r))
		}
	}
	p, err := Compile(g, sum)
	if err != nil {
		t.Fatal(err)
	}
	sideBySide(p)
	release := OneCorePerRun()
	if gemm.Procs() != 1 {
		t.Errorf("held: products may use %d goroutines", gemm.Procs())
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	release()
	release() // a second call is harmless
	if got := most.Load(); got != 1 {
		t.Errorf("held: %d steps ran at once, want 1", got)
	}
	if oneCorePerRun.Load() != 0 {
		t.Fatalf("released twice: count %d", oneCorePerRun.Load())
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got != 2 {
		t.Errorf("released: at most %d steps ran at once, want 2", got)
	}
	if v, _ := p.Float64s(sum); len(v) != 1 || v[0] != 2 {
		t.Errorf("sum = %v, want [2]", v)
	}
}
