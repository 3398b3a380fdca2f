package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// The quick profile of the binary spec, restricted to twonorm and its
// first split, runs end to end through Execute and Report, and every
// method beats chance by far.
func TestLiuQuickBinaryTwonorm(t *testing.T) {
	dataDir, err := datasets.ResolveDataDir("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "uci-delgado", "twonorm", "twonorm_R.dat")); err != nil {
		t.Skipf("no uci-delgado/twonorm under %s", dataDir)
	}
	spec, err := LoadSpec("liu_t2_binary.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Resolve(spec, Options{Quick: true, Datasets: []string{"twonorm"}, Splits: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := Execute(context.Background(), rs, dir, RunConfig{Workers: 2, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != len(rs.Methods) || sum.Failed != 0 {
		t.Fatalf("summary %+v for %d methods", sum, len(rs.Methods))
	}
	if err := Report(dir, dataDir); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.results() {
		t.Logf("%s: error %.4f, nll %.4f, D %d, n %d/%d, %v", r.Method, r.Error, r.NLL, r.D, r.NTrain, r.NTest, r.Notes)
		if r.D != 20 || r.NTrain != 1500 || r.NTest != 500 || r.Inducing != 100 {
			t.Errorf("%s: D %d, %d/%d rows, M %d", r.Method, r.D, r.NTrain, r.NTest, r.Inducing)
		}
		if !(r.Error < 0.15) || !(r.NLL < 0.4) {
			t.Errorf("%s: error %.3f, nll %.3f: not far better than chance (0.5, log 2)", r.Method, r.Error, r.NLL)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(b), "T3b") || !strings.Contains(string(b), "0.0255") {
		t.Errorf("report without table T3b and the paper's values: %v", err)
	}
}

// writeSortedMagic writes a fixture "magic" set to a new data directory:
// labels sorted by row as in the real file, inputs independent of them (two
// random 0/1 columns and eight constant ones, so that rows share inputs and
// the RBF kernel at its Appendix D length-scale is not flat).
func writeSortedMagic(t *testing.T, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	return writeDelgado(t, "magic", "magic_R.dat", 10, n, func(i int, b *strings.Builder) int {
		for j := range 10 {
			v := 0
			if j < 2 {
				v = rng.IntN(2)
			}
			fmt.Fprintf(b, "\t%d", v)
		}
		return min(1, 2*(i-1)/n)
	})
}

const liuMini = `name: liu-mini
title: t
source: test
family: liu_uci
datasets: [magic]
protocol: {splits: 1, test_fraction: 0.1}
training: {epochs: 1, min_steps: 200, batch: 128, lr: 0.01, inducing: 100}
settings:
  - {name: clean}
  - {name: row_index}
methods:
  - {name: GPC-II, model: gpc2}
`

// On a file sorted by class with uninformative inputs, the row number alone
// predicts the label: the mechanism behind the paper's ~99.9% on magic,
// miniboone and chess-krvk. Both settings see the same split.
func TestLiuRowIndexLeak(t *testing.T) {
	dataDir := writeSortedMagic(t, 300)
	s, err := ParseSpec("liu-mini.yaml", []byte(liuMini))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Resolve(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The two settings split the same rows: same labels in the same order,
	// the clean inputs equal to the row-index inputs without column 0.
	e := newEnv(rs, dataDir)
	runs := Expand(rs)
	clean, err := liuSplit(e, runs[0], false)
	if err != nil {
		t.Fatal(err)
	}
	withRow, err := liuSplit(e, runs[1], true)
	if err != nil {
		t.Fatal(err)
	}
	if clean.train.D != 10 || withRow.train.D != 11 || clean.train.N != 270 || clean.test.N != 30 || clean.nTotal != 300 {
		t.Fatalf("clean %d×%d / %d, row index %d×%d", clean.train.N, clean.train.D, clean.test.N, withRow.train.N, withRow.train.D)
	}
	if !slices.Equal(clean.train.Y, withRow.train.Y) || !slices.Equal(clean.test.Y, withRow.test.Y) {
		t.Fatal("the settings split different rows")
	}
	for i := range clean.train.N {
		a, b := clean.train.Row(i), withRow.train.Row(i)[1:]
		for j := range a {
			if math.Abs(a[j]-b[j]) > 1e-12 {
				t.Fatalf("row %d column %d: %v clean, %v with the row number", i, j, a[j], b[j])
			}
		}
	}
	// Standardised over the whole pool (B-B's normalize).
	var mean, ss float64
	for i := range clean.train.N {
		mean += withRow.train.Row(i)[0]
	}
	for i := range clean.test.N {
		mean += withRow.test.Row(i)[0]
	}
	mean /= 300
	for _, ds := range []*datasets.Dataset{withRow.train, withRow.test} {
		for i := range ds.N {
			ss += (ds.Row(i)[0] - mean) * (ds.Row(i)[0] - mean)
		}
	}
	if math.Abs(mean) > 1e-9 || math.Abs(ss/300-1) > 1e-5 {
		t.Errorf("row-number column: mean %g, variance %g over the pool", mean, ss/300)
	}

	dir := t.TempDir()
	if _, err := Execute(context.Background(), rs, dir, RunConfig{Workers: 2, DataDir: dataDir}); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, r := range st.results() {
		got[r.Setting] = r
		t.Logf("%s: error %.3f, nll %.3f, D %d, %v", r.Setting, r.Error, r.NLL, r.D, r.Notes)
	}
	if r := got["row_index"]; r.D != 11 || !(r.Error <= 0.1) {
		t.Errorf("row_index: D %d, error %.3f; the row number should give the label away", r.D, r.Error)
	}
	if r := got["clean"]; r.D != 10 || !(r.Error >= 0.2) {
		t.Errorf("clean: D %d, error %.3f on uninformative inputs", r.D, r.Error)
	}
	if r := got["row_index"]; !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "δ = ") }) ||
		!slices.Contains(r.Notes, "200 optimiser steps") {
		t.Errorf("notes %v: want the learned δ and the step count", r.Notes)
	}
}

func TestLiuSpecValidation(t *testing.T) {
	for _, c := range []struct{ edit, want string }{
		{strings.Replace(liuMini, "{name: clean}", "{name: raw}", 1), `liu_uci setting "raw"`},
		{strings.Replace(liuMini, "{name: clean}", "{name: clean, noise: 0.1}", 1), "only a name is read"},
		{strings.Replace(liuMini, "[magic]", "[iris]", 1), `unknown data set "iris" for liu_uci`},
		{strings.Replace(liuMini, "model: gpc2", "model: nimgp", 1), "observed inputs"},
		{strings.Replace(liuMini, "model: gpc2", "model: ep-fitc", 1), "svi"},
		{strings.Replace(liuMini, "test_fraction: 0.1", "test_fraction: 0", 1), "test_fraction > 0"},
		{strings.Replace(liuMini, "inducing: 100}", "inducing: 100, kernel: poly}", 1), "kernel \"poly\""},
	} {
		_, err := ParseSpec("liu-mini.yaml", []byte(c.edit))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
}

func TestLiuClipProbabilities(t *testing.T) {
	p := ClipProbabilities([]float64{1, 0, 0.25, 0.75, 0, 0, 0, 1}, 2, 1e-12)
	want := []float64{1 - 1e-12, 1e-12, 0.25, 0.75, 0.5, 0.5, 1e-12, 1 - 1e-12}
	for i := range want {
		if math.Abs(p[i]-want[i]) > 1e-15 {
			t.Errorf("p[%d] = %v, want %v", i, p[i], want[i])
		}
	}
	// A clipped row is renormalised: three classes, one certain.
	q := ClipProbabilities([]float64{1, 0, 0}, 3, 1e-12)
	if s := q[0] + q[1] + q[2]; math.Abs(s-1) > 1e-15 || !(q[1] > 0) {
		t.Errorf("row %v sums to %v", q, s)
	}
}

// The budget of liu_uci is max(epochs × steps per epoch, min_steps) steps.
func TestLiuIterations(t *testing.T) {
	for _, c := range []struct {
		b    Budget
		n    int
		want int
	}{
		{Budget{Epochs: 1, MinSteps: 10000, Batch: 1024}, 6660, 10000},
		{Budget{Epochs: 2000, MinSteps: 10000, Batch: 1024}, 6660, 14000},
		{Budget{Epochs: 3, Batch: 1024}, 500, 3},
	} {
		if got := liuIterations(c.b, c.n); got != c.want {
			t.Errorf("liuIterations(%+v, %d) = %d, want %d", c.b, c.n, got, c.want)
		}
	}
}
