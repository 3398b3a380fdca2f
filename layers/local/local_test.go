package local

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/solvers"
)

// Lazily, a row updated at every step must follow exactly the same path as
// the solvers' Adam on the same gradients; a row left out of a step must
// not move.
func TestRowAdamMatchesAdam(t *testing.T) {
	const width, lr = 4, 0.05
	rng := rand.New(rand.NewPCG(1, 2))
	p := New("rows", width, func(_ *datasets.Dataset, _ int, dst []float64) {
		for k := range dst {
			dst[k] = rng.NormFloat64()
		}
	})
	p.Reset(&datasets.Dataset{N: 3, D: 1, C: 2, X: make([]float64, 3), Y: make([]int, 3)})
	p.SetOptimizer(lr, false)
	ref := append([]float64(nil), p.Row(1)...)
	untouched := append([]float64(nil), p.Row(2)...)
	adam := solvers.NewAdam(lr)
	g := make([]float64, width)
	for step := 0; step < 25; step++ {
		for k := range g {
			g[k] = rng.NormFloat64() + 0.1*float64(step)
		}
		if err := p.Step([]int{1}, g); err != nil {
			t.Fatal(err)
		}
		if err := adam.Step([]solvers.Param{{Name: "row", Data: ref}}, [][]float64{append([]float64(nil), g...)}); err != nil {
			t.Fatal(err)
		}
		for k := range ref {
			if d := math.Abs(p.Row(1)[k] - ref[k]); d > 1e-12 {
				t.Fatalf("step %d element %d: row Adam %v, Adam %v", step, k, p.Row(1)[k], ref[k])
			}
		}
	}
	for k, v := range untouched {
		if p.Row(2)[k] != v {
			t.Fatalf("row 2 moved without being in a batch")
		}
	}
}

// A non-finite gradient is refused before any row moves, naming the row.
func TestStepRejectsNonFinite(t *testing.T) {
	p := New("qx", 2, func(_ *datasets.Dataset, i int, dst []float64) { dst[0], dst[1] = float64(i), 1 })
	p.Reset(&datasets.Dataset{N: 3, D: 1, C: 2, X: make([]float64, 3), Y: make([]int, 3)})
	p.SetOptimizer(0.1, false)
	before := append([]float64(nil), p.Data...)
	err := p.Step([]int{0, 2}, []float64{1, 1, math.NaN(), 1})
	if err == nil {
		t.Fatal("NaN gradient accepted")
	}
	if want := "qx row 2"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	for i := range before {
		if p.Data[i] != before[i] {
			t.Fatalf("row value %d changed by a refused step", i)
		}
	}
}

// Grow keeps existing rows and initialises new ones.
func TestGrow(t *testing.T) {
	p := New("qx", 1, func(ds *datasets.Dataset, i int, dst []float64) { dst[0] = ds.X[i] })
	ds := &datasets.Dataset{N: 2, D: 1, C: 2, X: []float64{5, 6}, Y: []int{0, 1}}
	p.Reset(ds)
	p.SetOptimizer(0.1, false)
	if err := p.Step([]int{0}, []float64{1}); err != nil {
		t.Fatal(err)
	}
	moved := p.Row(0)[0]
	ds2 := &datasets.Dataset{N: 3, D: 1, C: 2, X: []float64{5, 6, 7}, Y: []int{0, 1, 0}}
	p.Grow(ds2)
	if p.Rows() != 3 || p.Row(0)[0] != moved || p.Row(2)[0] != 7 {
		t.Fatalf("after Grow: %v", p.Data)
	}
	if err := p.Step([]int{2}, []float64{1}); err != nil {
		t.Fatalf("new row has no optimiser state: %v", err)
	}
}

// Densely, the whole table follows the solvers' Adam on the full gradient
// with zeros for the rows absent from a batch (TensorFlow's update): absent
// rows keep moving on their momentum, and a row repeated in a batch gets
// the sum of its gradients.
func TestDenseRowAdamIsAdamOnTheWholeTable(t *testing.T) {
	checkDenseIsAdam(t, 3, 6, 30)
	// A table this large is stepped on several cores.
	checkDenseIsAdam(t, 400, 600, 4)
}

func checkDenseIsAdam(t *testing.T, width, rows, steps int) {
	t.Helper()
	if !graph.Splits(rows, 1, denseValueCost*float64(width)) && width*rows > 1000 {
		t.Logf("GOMAXPROCS %d: the split path is not exercised", runtime.GOMAXPROCS(0))
	}
	const lr = 0.05
	rng := rand.New(rand.NewPCG(3, 4))
	p := New("rows", width, func(_ *datasets.Dataset, _ int, dst []float64) {
		for k := range dst {
			dst[k] = rng.NormFloat64()
		}
	})
	p.Reset(&datasets.Dataset{N: rows, D: 1, C: 2, X: make([]float64, rows), Y: make([]int, rows)})
	p.SetOptimizer(lr, true)
	ref := append([]float64(nil), p.Data...)
	adam := solvers.NewAdam(lr)
	for step := 0; step < steps; step++ {
		batch := []int{step % rows, (step + 2) % rows, step % rows} // a repeat
		g := make([]float64, len(batch)*width)
		full := make([]float64, rows*width)
		for b, i := range batch {
			for k := 0; k < width; k++ {
				v := rng.NormFloat64()
				g[b*width+k] = v
				full[i*width+k] += v
			}
		}
		if err := p.Step(batch, g); err != nil {
			t.Fatal(err)
		}
		if err := adam.Step([]solvers.Param{{Name: "table", Data: ref}}, [][]float64{full}); err != nil {
			t.Fatal(err)
		}
		for j := range ref {
			if d := math.Abs(p.Data[j] - ref[j]); d > 1e-12 {
				t.Fatalf("step %d value %d: dense row Adam %v, Adam %v", step, j, p.Data[j], ref[j])
			}
		}
		if p.Steps(5) != step+1 {
			t.Fatalf("step %d: row 5 counts %d steps", step, p.Steps(5))
		}
	}
}

// A table restored by SetState from another's State steps exactly as the
// original does, dense or lazy; a state of other shape is refused.
func TestStateRoundTrip(t *testing.T) {
	ds := &datasets.Dataset{N: 5, D: 1, C: 2, X: make([]float64, 5), Y: make([]int, 5)}
	init := func(_ *datasets.Dataset, i int, dst []float64) {
		for k := range dst {
			dst[k] = float64(i) + 0.1*float64(k)
		}
	}
	for _, dense := range []bool{true, false} {
		a, b := New("q", 2, init), New("q", 2, init)
		a.Reset(ds)
		b.Reset(ds)
		a.SetOptimizer(0.05, dense)
		b.SetOptimizer(0.01, !dense)
		rng := rand.New(rand.NewPCG(5, 6))
		grad := func() []float64 {
			g := make([]float64, 4)
			for k := range g {
				g[k] = rng.NormFloat64()
			}
			return g
		}
		for range 3 {
			if err := a.Step([]int{1, 3}, grad()); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.SetState(a.State()); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			g := grad()
			if err := a.Step([]int{4, 1}, append([]float64(nil), g...)); err != nil {
				t.Fatal(err)
			}
			if err := b.Step([]int{4, 1}, g); err != nil {
				t.Fatal(err)
			}
		}
		for i, v := range a.Data {
			if b.Data[i] != v {
				t.Fatalf("dense %v: value %d is %v after a restore, %v without", dense, i, b.Data[i], v)
			}
		}
	}
	small := New("q", 2, init)
	small.Reset(&datasets.Dataset{N: 4, D: 1, C: 2, X: make([]float64, 4), Y: make([]int, 4)})
	big := New("q", 2, init)
	big.Reset(ds)
	if err := small.SetState(big.State()); err == nil || !strings.Contains(err.Error(), "q") {
		t.Fatalf("got %v, want a refusal naming the table", err)
	}
}

// BenchmarkDenseRowAdam times one dense step of a q(x_i) table at MNIST's
// width (a mean and a variance per pixel), 6 000 rows and a batch of 200:
// the dense update is O(rows·width) per step, so MNIST's 60 000 rows cost
// ten times this.
func BenchmarkDenseRowAdam(b *testing.B) {
	const rows, width, batch = 6000, 2 * 784, 200
	p := &Param{Name: "qx", Width: width, Data: make([]float64, rows*width)}
	p.SetOptimizer(0.001, true)
	idx := make([]int, batch)
	grad := make([]float64, batch*width)
	for i := range idx {
		idx[i] = i * (rows / batch)
	}
	b.ResetTimer()
	for range b.N {
		for i := range grad {
			grad[i] = 1e-3
		}
		if err := p.Step(idx, grad); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*width)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}
