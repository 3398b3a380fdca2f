package local

import (
	"bytes"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// streamTables returns two tables of rows rows, the first with a dense and
// the second with a lazy optimiser, both stepped a few times.
func streamTables(t *testing.T, rows int, seed uint64) []*Param {
	t.Helper()
	ds := &datasets.Dataset{N: rows, D: 1, C: 2, X: make([]float64, rows), Y: make([]int, rows)}
	init := func(_ *datasets.Dataset, i int, dst []float64) {
		for k := range dst {
			dst[k] = float64(i) - 0.3*float64(k)
		}
	}
	a, b := New("qx/mean", 3, init), New("qx/var", 2, init)
	a.Reset(ds)
	b.Reset(ds)
	a.SetOptimizer(0.05, true)
	b.SetOptimizer(0.02, false)
	stepTables(t, []*Param{a, b}, rand.New(rand.NewPCG(seed, 1)), 12)
	return []*Param{a, b}
}

// stepTables takes k steps of both tables on random batches of three rows.
func stepTables(t *testing.T, ps []*Param, rng *rand.Rand, k int) {
	t.Helper()
	for range k {
		rows := []int{rng.IntN(ps[0].Rows()), rng.IntN(ps[0].Rows()), rng.IntN(ps[0].Rows())}
		for _, p := range ps {
			g := make([]float64, len(rows)*p.Width)
			for j := range g {
				g[j] = rng.NormFloat64()
			}
			if err := p.Step(rows, g); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Tables read back by ReadStates step exactly as the tables written do,
// dense and lazy optimisers both, the dense table's rows owing steps when
// written (deferred, as large tables are).
func TestStatesStreamRoundTrip(t *testing.T) {
	defer func(v, w int) { eagerValues, eagerWidth = v, w }(eagerValues, eagerWidth)
	eagerValues, eagerWidth = 0, 0
	a := streamTables(t, 7, 3)
	owing := 0
	for i := range a[0].Rows() {
		if a[0].opt.done[i] < a[0].opt.steps {
			owing++
		}
	}
	if owing == 0 {
		t.Fatal("no row owes a step when the state is written")
	}
	var buf bytes.Buffer
	if err := WriteStates(&buf, a); err != nil {
		t.Fatal(err)
	}
	b := streamTables(t, 7, 99) // other values and moments, overwritten
	if err := ReadStates(bytes.NewReader(buf.Bytes()), b); err != nil {
		t.Fatal(err)
	}
	stepTables(t, a, rand.New(rand.NewPCG(8, 8)), 5)
	stepTables(t, b, rand.New(rand.NewPCG(8, 8)), 5)
	for k := range a {
		av, bv := a[k].Values(), b[k].Values()
		for i := range av {
			if math.Float64bits(av[i]) != math.Float64bits(bv[i]) {
				t.Fatalf("%s value %d: %v after a restore, %v without", a[k].Name, i, bv[i], av[i])
			}
		}
	}
}

// A stream of other tables is refused before any value changes; one cut
// short is an error that says the values are undefined.
func TestStatesStreamRefusals(t *testing.T) {
	a := streamTables(t, 7, 3)
	var buf bytes.Buffer
	if err := WriteStates(&buf, a); err != nil {
		t.Fatal(err)
	}
	fewer := streamTables(t, 6, 5)
	before := append([]float64(nil), fewer[0].Values()...)
	err := ReadStates(bytes.NewReader(buf.Bytes()), fewer)
	if err == nil || !strings.Contains(err.Error(), "qx/mean has 7 rows of 3 in the stream, 6 of 3 here") {
		t.Fatalf("got %v, want a refusal naming the table and both shapes", err)
	}
	for i, v := range fewer[0].Values() {
		if v != before[i] {
			t.Fatalf("value %d changed from %v to %v on a refused restore", i, before[i], v)
		}
	}
	renamed := streamTables(t, 7, 5)
	renamed[1].Name = "qx/other"
	if err := ReadStates(bytes.NewReader(buf.Bytes()), renamed); err == nil || !strings.Contains(err.Error(), "qx/var in the stream, qx/other here") {
		t.Fatalf("got %v, want a refusal naming both tables", err)
	}
	if err := ReadStates(bytes.NewReader(buf.Bytes()[:buf.Len()-5]), streamTables(t, 7, 5)); err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("got %v, want an error saying the values are undefined", err)
	}
	if err := ReadStates(strings.NewReader("not a stream"), a); err == nil || !strings.Contains(err.Error(), "not a stream") {
		t.Fatalf("got %v, want a refusal", err)
	}
	damaged := append([]byte(nil), buf.Bytes()...)
	for i := range 8 {
		damaged[len(statesMagic)+i] = 0xff
	}
	if err := ReadStates(bytes.NewReader(damaged), a); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("got %v, want a damaged header length refused", err)
	}
}

// Writing and reading the states of a large table allocates a small fixed
// amount, not a copy of the table: that is what lets a fit whose tables
// fill half the memory checkpoint and resume.
func TestStatesStreamAllocatesNoCopy(t *testing.T) {
	const rows, width = 20000, 50 // 8 MB of values, 24 MB with the moments
	ds := &datasets.Dataset{N: rows, D: 1, C: 2, X: make([]float64, rows), Y: make([]int, rows)}
	p := New("big", width, func(_ *datasets.Dataset, i int, dst []float64) {
		for k := range dst {
			dst[k] = float64(i * k)
		}
	})
	p.Reset(ds)
	p.SetOptimizer(0.01, false)
	if err := p.Step([]int{1, 2}, make([]float64, 2*width)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Grow(3*rows*width*8 + 1<<20)
	allocated := func(f func() error) uint64 {
		t.Helper()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if err := f(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	w := allocated(func() error { return WriteStates(&buf, []*Param{p}) })
	r := allocated(func() error { return ReadStates(bytes.NewReader(buf.Bytes()), []*Param{p}) })
	// The step counts (one int a row) are in the header: 160 kB here.
	const limit = 2 << 20
	if w > limit || r > limit {
		t.Fatalf("writing allocated %d bytes and reading %d, want at most %d each for a table of %d", w, r, limit, 3*rows*width*8)
	}
}

// A state saved settled and without Done (as before rows were kept
// unsettled) restores with every row up to date, and steps as the
// original; a Done out of range is refused.
func TestStateWithoutDone(t *testing.T) {
	defer func(v, w int) { eagerValues, eagerWidth = v, w }(eagerValues, eagerWidth)
	eagerValues, eagerWidth = 0, 0
	a, b := streamTables(t, 7, 3)[0], streamTables(t, 7, 4)[0]
	a.Settle(nil)
	st := a.State()
	st.Opt.Done = nil
	if err := b.SetState(st); err != nil {
		t.Fatal(err)
	}
	stepTables(t, []*Param{a}, rand.New(rand.NewPCG(8, 8)), 9)
	stepTables(t, []*Param{b}, rand.New(rand.NewPCG(8, 8)), 9)
	for i, v := range a.Values() {
		if math.Float64bits(v) != math.Float64bits(b.Values()[i]) {
			t.Fatalf("value %d: %v restored, %v original", i, b.Values()[i], v)
		}
	}
	st = a.State()
	st.Opt.Done = append([]int(nil), st.Opt.Done...)
	st.Opt.Done[2] = st.Opt.Steps + 1
	if err := b.SetState(st); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Fatalf("got %v, want a refusal naming row 2", err)
	}
}
