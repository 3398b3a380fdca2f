package models

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/solvers"
)

// sectorSet is a learnable 2-D, 3-class problem: the class is the 120°
// sector of the input's angle.
func sectorSet(n int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	ds := &datasets.Dataset{Name: "sectors", N: n, D: 2, C: 3, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := range n {
		x, y := rng.NormFloat64(), rng.NormFloat64()
		ds.X[2*i], ds.X[2*i+1] = x, y
		a := math.Atan2(y, x) + math.Pi // 0..2π
		ds.Y[i] = min(int(a/(2*math.Pi/3)), 2)
	}
	return ds
}

// appendRows returns a with b's rows appended (a's rows untouched).
func appendRows(a, b *datasets.Dataset) *datasets.Dataset {
	out := a.Clone()
	out.N += b.N
	out.X = append(out.X, b.X...)
	out.Y = append(out.Y, b.Y...)
	if a.Noise != nil {
		out.Noise = append(out.Noise, b.Noise...)
	}
	return out
}

func trainNLL(t *testing.T, m *Model, ds *datasets.Dataset) float64 {
	t.Helper()
	p, err := m.Predict(ds.X, ds.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Score(p, ds.Y, ds.C).NLL
}

func predictOrFail(t *testing.T, m *Model, ds *datasets.Dataset) []float64 {
	t.Helper()
	p, err := m.Predict(ds.X, ds.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Continuing for zero epochs, on the same rows or with rows appended, must
// not touch a learned parameter: predictions stay bitwise identical. The
// model's N follows the data.
func TestContinueZeroEpochsKeepsPredictions(t *testing.T) {
	first := syntheticSet(80, 3, 3, 21)
	grown := appendRows(first, syntheticSet(20, 3, 3, 22))
	test := syntheticSet(25, 3, 3, 23)
	for _, k := range noisyPresets {
		t.Run(k, func(t *testing.T) {
			o := withNoise(opts(k, 8, 2, 40, 5), 0.1, false)
			o.Inputs.TestSamples = 5
			m, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Fit(context.Background(), first, FitConfig{}); err != nil {
				t.Fatal(err)
			}
			want := predictOrFail(t, m, test)
			for _, ds := range []*datasets.Dataset{first, grown} {
				if err := m.Continue(context.Background(), ds, 0, FitConfig{}); err != nil {
					t.Fatal(err)
				}
				if m.N != ds.N {
					t.Fatalf("N = %d after continuing on %d rows", m.N, ds.N)
				}
				if got := predictOrFail(t, m, test); !slices.Equal(got, want) {
					t.Fatalf("predictions changed after a 0-epoch Continue on %d rows", ds.N)
				}
			}
		})
	}
}

// After rows are added, a few continued epochs lower the training NLL below
// its value right after adding, and below a model fitted from scratch on the
// grown set with the same number of epochs (fixed seeds).
func TestContinueImprovesOnWarmStart(t *testing.T) {
	first := sectorSet(100, 1)
	grown := appendRows(first, sectorSet(100, 2))
	const more = 6
	for _, k := range noisyPresets {
		t.Run(k, func(t *testing.T) {
			opts := withNoise(opts(k, 12, 8, 50, 9), 0.01, false)
			opts.Inputs.TestSamples = 20
			m, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Fit(context.Background(), first, FitConfig{}); err != nil {
				t.Fatal(err)
			}
			if err := m.Continue(context.Background(), grown, 0, FitConfig{}); err != nil {
				t.Fatal(err)
			}
			added := trainNLL(t, m, grown)
			epochs := 0
			if err := m.Continue(context.Background(), grown, more, FitConfig{Callback: func(Epoch) error { epochs++; return nil }}); err != nil {
				t.Fatal(err)
			}
			if epochs != more {
				t.Fatalf("Continue ran %d epochs, want %d", epochs, more)
			}
			warm := trainNLL(t, m, grown)
			opts.Train.Epochs = more
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Fit(context.Background(), grown, FitConfig{}); err != nil {
				t.Fatal(err)
			}
			scratch := trainNLL(t, s, grown)
			t.Logf("training NLL: %.4f right after adding, %.4f after %d continued epochs, %.4f from scratch", added, warm, more, scratch)
			if !(warm < added-0.01) {
				t.Errorf("continued training NLL %.4f is not below %.4f right after adding rows", warm, added)
			}
			if !(warm < scratch-0.01) {
				t.Errorf("continued training NLL %.4f is not below %.4f from scratch with the same %d epochs", warm, scratch, more)
			}
		})
	}
}

// NIMGP keeps q(x_i) (and its Adam history) for the old rows; new rows start
// at x̃ with log-variance log QXInitVar and no Adam history, and their given
// noise comes from the data set. A continued epoch then moves them.
func TestContinueNIMGPQX(t *testing.T) {
	withNoise := func(ds *datasets.Dataset, v float64) *datasets.Dataset {
		ds.Noise = make([]float64, len(ds.X))
		for i := range ds.Noise {
			ds.Noise[i] = v
		}
		return ds
	}
	first := withNoise(syntheticSet(60, 2, 3, 31), 0.05)
	more := withNoise(syntheticSet(15, 2, 3, 32), 0.2)
	grown := appendRows(first, more)
	const qv = 1e-4
	o := opts("nimgp", 8, 3, 30, 2)
	o.Inputs.QXInitVar, o.Inputs.TestSamples = qv, 5
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), first, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	qm, ql := m.Inputs().Locals()[0], m.Inputs().Locals()[1]
	mean, logv := slices.Clone(qm.Values()), slices.Clone(ql.Values())
	var steps []int
	for i := range first.N {
		steps = append(steps, qm.Steps(i))
	}
	if slices.Equal(mean, first.X) {
		t.Fatal("Fit did not move q(x) (the test would not see a reset)")
	}
	if err := m.Continue(context.Background(), grown, 0, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	n0 := first.N * first.D
	if len(qm.Values()) != len(grown.X) || len(ql.Values()) != len(grown.X) {
		t.Fatalf("q(x) has %d/%d entries, want %d", len(qm.Values()), len(ql.Values()), len(grown.X))
	}
	if !slices.Equal(qm.Values()[:n0], mean) || !slices.Equal(ql.Values()[:n0], logv) {
		t.Fatal("q(x) of the old rows changed")
	}
	if !slices.Equal(qm.Values()[n0:], more.X) {
		t.Fatal("q(x) means of the new rows are not their x̃")
	}
	for i, v := range ql.Values()[n0:] {
		if v != math.Log(qv) {
			t.Fatalf("new q(x) log-variance %d is %v, want log %g", i, v, qv)
		}
	}
	for i := range grown.N {
		want := 0
		if i < first.N {
			want = steps[i]
		}
		if qm.Steps(i) != want {
			t.Fatalf("row %d has %d Adam steps after growing, want %d", i, qm.Steps(i), want)
		}
	}
	if slices.Equal(steps, make([]int, first.N)) {
		t.Fatal("no row had Adam history (the test would not see a reset)")
	}
	// The batch's given noise is read from the grown data set (NIMGP takes
	// its logarithm and reciprocal).
	b := solvers.FullBatch(grown.N)
	m.fit.obj.Grow(grown, grown.N)
	m.fit.obj.Load(b)
	logs := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = math.Log(x)
		}
		return out
	}
	if got := m.fit.obj.Fed("noise log"); len(got) != grown.N*grown.D || !slices.Equal(got[n0:], logs(more.Noise)) || !slices.Equal(got[:n0], logs(first.Noise)) {
		t.Fatal("given noise of the training rows is not the data set's")
	}
	m.fit.obj.Grow(grown, 30)
	if err := m.Continue(context.Background(), grown, 1, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(qm.Values()[n0:], more.X) {
		t.Fatal("a continued epoch did not train the new rows' q(x)")
	}
}

// A model fitted on fewer rows than a batch has a smaller compiled batch;
// Continue on more rows rebuilds the graph at the full batch size.
func TestContinueGrowsBatch(t *testing.T) {
	first := sectorSet(30, 3)
	grown := appendRows(first, sectorSet(50, 4))
	m, err := New(withNoise(opts("nimgp-fo", 8, 2, 40, 1), 0.01, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), first, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	if m.fit.obj.Batch() != 30 {
		t.Fatalf("batch %d, want 30", m.fit.obj.Batch())
	}
	if err := m.Continue(context.Background(), grown, 2, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	if m.fit.obj.Batch() != 40 {
		t.Fatalf("batch %d after growing, want 40", m.fit.obj.Batch())
	}
}

// Continue refuses what it cannot continue from, names the problem, and
// leaves the model as it was.
func TestContinueErrors(t *testing.T) {
	ctx := context.Background()
	first := syntheticSet(50, 3, 3, 41)
	test := syntheticSet(10, 3, 3, 42)
	first.Noise = make([]float64, len(first.X))
	for i := range first.Noise {
		first.Noise[i] = 0.1
	}
	m, err := New(opts("nimgp-fo", 6, 1, 25, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Continue(ctx, first, 1, FitConfig{}); err == nil || !strings.Contains(err.Error(), "Fit first") {
		t.Fatalf("unfitted model: %v", err)
	}
	if err := m.Fit(ctx, first, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	want := predictOrFail(t, m, test)
	modify := func(f func(*datasets.Dataset)) *datasets.Dataset {
		ds := first.Clone()
		f(ds)
		return ds
	}
	cases := []struct {
		name   string
		ds     *datasets.Dataset
		epochs int
		msg    string
	}{
		{"fewer rows", first.Subset([]int{0, 1, 2, 3, 4}), 1, "5 rows: the model was fitted on 50"},
		{"other D", syntheticSet(60, 4, 3, 43), 1, "4 features: the model was fitted on 3"},
		{"other C", modify(func(ds *datasets.Dataset) { ds.C = 4 }), 1, "4 classes: the model was fitted on 3"},
		{"changed input", modify(func(ds *datasets.Dataset) { ds.X[3*7+1] += 1e-9 }), 1, "row 7 of the data set differs"},
		{"changed label", modify(func(ds *datasets.Dataset) { ds.Y[12] = (ds.Y[12] + 1) % 3 }), 1, "row 12 of the data set differs"},
		{"changed noise", modify(func(ds *datasets.Dataset) { ds.Noise[3*20] = 0.2 }), 1, "row 20 of the data set differs"},
		{"negative epochs", first, -1, "-1 epochs"},
		{"invalid data", modify(func(ds *datasets.Dataset) { ds.Y = ds.Y[:10] }), 1, "len(Y)"},
	}
	for _, c := range cases {
		err := m.Continue(ctx, c.ds, c.epochs, FitConfig{})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.msg)
		}
		if m.N != first.N {
			t.Fatalf("%s: the failed Continue changed N to %d", c.name, m.N)
		}
	}
	if got := predictOrFail(t, m, test); !slices.Equal(got, want) {
		t.Fatal("a failed Continue changed the model")
	}
	// A loaded model has no training state.
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Continue(ctx, first, 1, FitConfig{}); err == nil || !strings.Contains(err.Error(), "Load does not restore") {
		t.Fatalf("loaded model: %v", err)
	}
	// The unchanged data set is a valid (trivial) extension.
	if err := m.Continue(ctx, first, 1, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	// Released training state: predictions stay, Continue fails.
	before := predictOrFail(t, m, test)
	m.ReleaseTraining()
	if got := predictOrFail(t, m, test); !slices.Equal(got, before) {
		t.Fatal("ReleaseTraining changed predictions")
	}
	if err := m.Continue(ctx, first, 1, FitConfig{}); err == nil || !strings.Contains(err.Error(), "no training state") {
		t.Fatalf("released model: %v", err)
	}
}
