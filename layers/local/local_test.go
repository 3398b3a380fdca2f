package local

import (
	"fmt"
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
	before := append([]float64(nil), p.Values()...)
	err := p.Step([]int{0, 2}, []float64{1, 1, math.NaN(), 1})
	if err == nil {
		t.Fatal("NaN gradient accepted")
	}
	if want := "qx row 2"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	for i := range before {
		if p.Values()[i] != before[i] {
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
		t.Fatalf("after Grow: %v", p.Values())
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
	checkDenseIsAdam(t, 400, 600, 4) // settled when read
	// Narrow rows are stepped whole; a table this large by several cores.
	if !graph.Splits(3000, 1, eagerValueCost*100) {
		t.Logf("GOMAXPROCS %d: the split path is not exercised", runtime.GOMAXPROCS(0))
	}
	checkDenseIsAdam(t, 100, 3000, 3)
}

func checkDenseIsAdam(t *testing.T, width, rows, steps int) {
	t.Helper()
	const lr = 0.05
	rng := rand.New(rand.NewPCG(3, 4))
	p := New("rows", width, func(_ *datasets.Dataset, _ int, dst []float64) {
		for k := range dst {
			dst[k] = rng.NormFloat64()
		}
	})
	p.Reset(&datasets.Dataset{N: rows, D: 1, C: 2, X: make([]float64, rows), Y: make([]int, rows)})
	p.SetOptimizer(lr, true)
	ref := append([]float64(nil), p.Values()...)
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
		got := p.Values()
		for j := range ref {
			if d := math.Abs(got[j] - ref[j]); d > 1e-12 {
				t.Fatalf("step %d value %d: dense row Adam %v, Adam %v", step, j, got[j], ref[j])
			}
		}
		if p.Steps(5) != step+1 {
			t.Fatalf("step %d: row 5 counts %d steps", step, p.Steps(5))
		}
	}
}

// eagerTable is the dense update written out as TensorFlow's Adam does it:
// every row at every step, a zero gradient for the rows absent from the
// batch, the gradients of a repeated row summed.
type eagerTable struct {
	width, steps int
	x, m, v      []float64
}

func (e *eagerTable) step(rows []int, grad []float64) {
	e.steps++
	k := graph.NewAdamConsts(0.05, 0.9, 0.999, 1e-8, e.steps)
	full := make([]float64, len(e.x))
	in := make([]bool, len(e.x)/e.width)
	for b, i := range rows {
		in[i] = true
		for c := range e.width {
			full[i*e.width+c] += grad[b*e.width+c]
		}
	}
	for i := range in {
		lo, hi := i*e.width, (i+1)*e.width
		g := full[lo:hi]
		if !in[i] {
			g = nil
		}
		graph.AdamUpdate(e.x[lo:hi], e.m[lo:hi], e.v[lo:hi], g, &k)
	}
}

func (e *eagerTable) grow(rows int) {
	n := rows * e.width
	e.x = append(e.x, make([]float64, n-len(e.x))...)
	e.m = append(e.m, make([]float64, n-len(e.m))...)
	e.v = append(e.v, make([]float64, n-len(e.v))...)
}

// The dense update applied when rows are read equals the eager one,
// whenever and however the rows are read (one by one, a batch at a time,
// the whole table, through a checkpoint restored mid-run), for rows last
// read more steps ago than the remembered constants cover, rows never in a
// batch, repeated rows and rows added by Grow. Each read is compared: a
// table stepped whole equals the eager one bit for bit, a deferred one to
// the rounding of the closed-form settle (TestClosedSettleMatchesSteps).
// The table restored from a checkpoint mid-run ends bit for bit where a
// twin that was never interrupted does.
func TestDenseDeferredIsEager(t *testing.T) {
	// Small tables are stepped whole; this one is deferred too.
	t.Run("whole", func(t *testing.T) { checkDeferredIsEager(t, 0) })
	defer func(v, w int) { eagerValues, eagerWidth = v, w }(eagerValues, eagerWidth)
	eagerValues, eagerWidth = 0, 0
	t.Run("deferred", func(t *testing.T) { checkDeferredIsEager(t, 1e-13) })
}

func checkDeferredIsEager(t *testing.T, tol float64) {
	const width = 3
	rng := rand.New(rand.NewPCG(9, 10))
	init := func(_ *datasets.Dataset, i int, dst []float64) {
		for k := range dst {
			dst[k] = float64(i) - 0.3*float64(k)
		}
	}
	ds := func(n int) *datasets.Dataset {
		return &datasets.Dataset{N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
	}
	rows := 7
	p, twin := New("q", width, init), New("q", width, init)
	for _, q := range []*Param{p, twin} {
		q.Reset(ds(rows))
		q.SetOptimizer(0.05, true)
	}
	e := &eagerTable{width: width, x: append([]float64(nil), p.data...)}
	e.grow(rows)
	same := func(when string, i int, got []float64) {
		t.Helper()
		for c, v := range got {
			want := e.x[i*width+c]
			if d := math.Abs(v - want); d > tol*math.Abs(want) || tol == 0 && math.Float64bits(v) != math.Float64bits(want) {
				t.Fatalf("%s: row %d value %d is %v read late, %v stepped eagerly", when, i, c, v, want)
			}
		}
	}
	// Row 6 takes a step, then sits out more steps than recent holds; row
	// 5 is never in a batch.
	batchOf := func(s int) []int {
		if s == 0 {
			return []int{6, 0, 6}
		}
		if s < recentSteps+50 {
			return []int{s % 3, (s + 1) % 3}
		}
		// Random rows, row 5 excepted.
		pick := func() int { return (5 + 1 + rng.IntN(rows-1)) % rows }
		return []int{pick(), pick(), 6}
	}
	for s := 0; s < recentSteps+200; s++ {
		if s == recentSteps+100 {
			// A checkpoint restored into a fresh table mid-run, with rows
			// owing steps.
			q := New("q", width, init)
			q.Reset(ds(rows))
			if err := q.SetState(p.State()); err != nil {
				t.Fatal(err)
			}
			// It keeps the constants of the steps rows may owe, as the
			// interrupted table did, rather than recomputing them per row.
			for st := s - recentSteps + 1; st <= s; st++ {
				k := q.opt.consts(st)
				if k != &q.opt.recent[st%recentSteps] || *k != p.opt.recent[st%recentSteps] {
					t.Fatalf("after the restore, step %d's constants are %+v, not kept; the interrupted table's were %+v", st, *k, p.opt.recent[st%recentSteps])
				}
			}
			p = q
			// Rows appended to the data set join with no history.
			rows += 2
			p.Grow(ds(rows))
			twin.Grow(ds(rows))
			e.grow(rows)
			copy(e.x[(rows-2)*width:], p.data[(rows-2)*width:])
			for i := range rows {
				if want := map[bool]int{true: s, false: 0}[i < rows-2]; p.Steps(i) != want {
					t.Fatalf("after growing, row %d counts %d steps, want %d", i, p.Steps(i), want)
				}
			}
		}
		batch := batchOf(s)
		g := make([]float64, len(batch)*width)
		for k := range g {
			g[k] = rng.NormFloat64()
		}
		e.step(batch, g)
		if err := twin.Step(batch, append([]float64(nil), g...)); err != nil {
			t.Fatal(err)
		}
		if err := p.Step(batch, append([]float64(nil), g...)); err != nil {
			t.Fatal(err)
		}
		// Reads of random rows, sparing row 6 while it lags.
		read := func() int {
			if s < recentSteps+50 {
				return rng.IntN(6)
			}
			return rng.IntN(rows)
		}
		switch s % 5 {
		case 1:
			i := read()
			twin.Row(i)
			same("Row", i, p.Row(i))
		case 2:
			pick := []int{read(), read()}
			p.Settle(pick)
			twin.Settle(pick)
			for _, i := range pick {
				same("Settle", i, p.data[i*width:(i+1)*width])
			}
		}
	}
	for i := range rows {
		same("Values", i, p.Values()[i*width:(i+1)*width])
		if p.Steps(i) != e.steps {
			t.Fatalf("row %d counts %d steps, want %d", i, p.Steps(i), e.steps)
		}
	}
	for j, v := range twin.Values() {
		if math.Float64bits(v) != math.Float64bits(p.Values()[j]) {
			t.Fatalf("value %d is %v after the restore, %v in the twin never interrupted", j, p.Values()[j], v)
		}
	}
	if row5 := p.Row(5); row5[0] != 5 {
		t.Fatalf("row 5, never in a batch, moved to %v", row5)
	}
}

// A wide table's rows are settled on several cores, with the same values
// (to the closed form's rounding).
func TestDenseDeferredSplits(t *testing.T) {
	const width, rows, steps = 2000, 64, 20
	p := New("q", width, func(_ *datasets.Dataset, i int, dst []float64) {
		for k := range dst {
			dst[k] = float64(i*k%7) - 3
		}
	})
	p.Reset(&datasets.Dataset{N: rows, D: 1, C: 2, X: make([]float64, rows), Y: make([]int, rows)})
	p.SetOptimizer(0.05, true)
	e := &eagerTable{width: width, x: append([]float64(nil), p.data...)}
	e.grow(rows)
	rng := rand.New(rand.NewPCG(11, 12))
	for s := range steps {
		batch := []int{s % rows, (3 * s) % rows}
		g := make([]float64, len(batch)*width)
		for k := range g {
			g[k] = rng.NormFloat64()
		}
		e.step(batch, g)
		if err := p.Step(batch, g); err != nil {
			t.Fatal(err)
		}
	}
	if !graph.Splits(rows, 1, denseValueCost*width*float64(steps-1)) {
		t.Logf("GOMAXPROCS %d: the split path is not exercised", runtime.GOMAXPROCS(0))
	}
	// Every row listed twice, the second time in the other half of the
	// list (where the other core settles): each is settled once.
	twice := make([]int, 0, 2*rows)
	for i := range rows {
		twice = append(twice, i)
	}
	for i := range rows {
		twice = append(twice, (i+rows/2)%rows)
	}
	p.Settle(twice)
	for j, v := range p.data {
		// Settled twice, a row would move twice as far from the eager one.
		if math.Abs(v-e.x[j]) > 1e-13*math.Abs(e.x[j]) {
			t.Fatalf("value %d is %v settled, %v stepped eagerly", j, v, e.x[j])
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
		for i, v := range a.Values() {
			if b.Values()[i] != v {
				t.Fatalf("dense %v: value %d is %v after a restore, %v without", dense, i, b.Values()[i], v)
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
// width (a mean and a variance per pixel), 6 000 rows and a batch of 200,
// the batches sweeping the table as an epoch's do, each read as the
// training graph reads it: a step's cost is every row's zero-gradient
// update (O(rows·width)), carried by the batch's rows, so MNIST's 60 000
// rows cost ten times this.
func BenchmarkDenseRowAdam(b *testing.B) {
	benchSweep(b, 6000, 2*784, 0, 200)
}

// BenchmarkDenseRowAdamOwing300 is BenchmarkDenseRowAdam with batches of
// 20, so that a row read owes 300 steps, as on MNIST's 60 000 rows with
// batches of 200 (whose table, 2.3 GB, is too large for a benchmark).
func BenchmarkDenseRowAdamOwing300(b *testing.B) {
	benchSweep(b, 6000, 2*784, 1, 20)
}

// benchSweep times dense steps of a rows×width table with batches of 200
// sweeping it, each batch settled as the training graph reads it, after
// warm sweeps of the table (so that rows owe what they do in steady
// state), and reports the table's values stepped per second.
func benchSweep(b *testing.B, rows, width, warm, batch int) {
	p := &Param{Name: "qx", Width: width, data: make([]float64, rows*width)}
	p.SetOptimizer(0.001, true)
	idx := make([]int, batch)
	grad := make([]float64, batch*width)
	step := func(n int) {
		for i := range idx {
			idx[i] = (n*batch + i) % rows
		}
		p.Settle(idx)
		for i := range grad {
			grad[i] = 1e-3
		}
		if err := p.Step(idx, grad); err != nil {
			b.Fatal(err)
		}
	}
	for n := range warm * rows / batch {
		step(n)
	}
	b.ResetTimer()
	for n := range b.N {
		step(n)
	}
	b.ReportMetric(float64(rows*width)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}

// BenchmarkDenseWidths times a dense step, the batches sweeping the table,
// stepped whole and settled when read, for the row widths of the noisy-input
// paper's tables (UCI's tens of features, MNIST's 784 and their doubles):
// where eager's limits come from.
func BenchmarkDenseWidths(b *testing.B) {
	for _, shape := range [][2]int{{20, 20000}, {60, 10000}, {200, 5000}, {1568, 6000}} {
		for _, whole := range []bool{true, false} {
			width, rows := shape[0], shape[1]
			b.Run(fmt.Sprintf("width%d-rows%d-whole=%v", width, rows, whole), func(b *testing.B) {
				defer func(v, w int) { eagerValues, eagerWidth = v, w }(eagerValues, eagerWidth)
				eagerValues, eagerWidth = 0, 0
				if whole {
					eagerWidth = width + 1
				}
				benchSweep(b, rows, width, 2, 200)
			})
		}
	}
}

// Check names the row and element of a non-finite gradient wherever it is,
// past the fast whole-batch test, and passes a finite batch.
func TestCheckFindsNonFinite(t *testing.T) {
	p := New("mu", 3, nil)
	rows := []int{4, 0}
	grad := make([]float64, len(rows)*p.Width)
	if err := p.Check(rows, grad); err != nil {
		t.Fatalf("finite gradient: %v", err)
	}
	for e := range grad {
		for _, bad := range []float64{math.NaN(), math.Inf(-1)} {
			g := append([]float64(nil), grad...)
			g[e] = bad
			err := p.Check(rows, g)
			want := fmt.Sprintf("row %d, element %d is %v", rows[e/p.Width], e%p.Width, bad)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v at %d: error %v, want one naming %q", bad, e, err, want)
			}
		}
	}
}
