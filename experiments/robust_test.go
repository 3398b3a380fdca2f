package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// Label noise redraws round(η·n) labels, nested across η, and leaves the
// rest alone; BCR averages the per-class accuracies of the classes present.
func TestCorruptLabelsAndBCR(t *testing.T) {
	y := make([]int, 150)
	for i := range y {
		y[i] = i % 3
	}
	small, big := corruptLabels(y, 3, 0.1, 7), corruptLabels(y, 3, 0.2, 7)
	touched := func(z []int) map[int]bool {
		m := map[int]bool{}
		for i := range z {
			if z[i] != y[i] {
				m[i] = true
			}
		}
		return m
	}
	ts, tb := touched(small), touched(big)
	for i := range ts {
		if !tb[i] || big[i] != small[i] {
			t.Fatalf("row %d changed at η = 0.1 but not the same way at η = 0.2", i)
		}
	}
	// 15 and 30 rows redrawn; about a third keep their label.
	if len(ts) < 5 || len(ts) > 15 || len(tb) < 12 || len(tb) > 30 {
		t.Fatalf("%d and %d labels changed", len(ts), len(tb))
	}
	if z := corruptLabels(y, 3, 0, 7); len(touched(z)) != 0 {
		t.Fatal("η = 0 changed labels")
	}
	// Class 0: 2 of 2 right; class 1: 0 of 1; class 2 absent → (1 + 0)/2.
	probs := []float64{0.9, 0.1, 0, 0.8, 0.2, 0, 0.6, 0.3, 0.1}
	if b := BalancedClassRate(probs, []int{0, 0, 1}, 3); math.Abs(b-0.5) > 1e-15 {
		t.Fatalf("BCR %g, want 0.5", b)
	}
}

// The family end to end on wine with a stand-in method: BCR and the test
// rows' indices and errors are recorded, the Wilcoxon marks are computed.
func TestRobustFamilyRuns(t *testing.T) {
	dataDir, err := datasets.ResolveDataDir("")
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "gpinputnoise", "uci", "wine")); err != nil {
		t.Skip("wine not present")
	}
	src := `name: robust_mini
title: t
source: test
family: robust_uci
datasets: [wine]
protocol: {splits: 3}
training: {epochs: 30, batch: 200, lr: 0.05, inducing: 10}
settings:
  - {name: "η=0%", label_noise: 0}
  - {name: "η=20%", label_noise: 0.2}
methods:
  - {name: A, model: mgp}
  - {name: B, model: mgp, training: {lr: 0.01}}
tables:
  - id: T2
    title: BCR
    metric: bcr
    test_against: A
    paper:
      - {setting: "η=0%", dataset: wine, values: ["0.980±0.016", "0.970±0.02 ◁"]}
`
	s, err := ParseSpec("robust.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2, DataDir: dataDir}); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.results() {
		if !(r.BCR > 0.6) || len(r.TestIndex) != 178-118 || len(r.PointErr) != len(r.TestIndex) {
			t.Fatalf("%s: BCR %g, %d test indices, %d point errors", r.Key, r.BCR, len(r.TestIndex), len(r.PointErr))
		}
		if r.Setting == "η=20%" && (len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "24 of 118 training labels redrawn")) {
			t.Fatalf("%s: notes %v", r.Key, r.Notes)
		}
	}
	if err := Report(dir, dataDir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "significance marks (◁, Wilcoxon p < 0.01) agree in") {
		t.Fatalf("report:\n%s", md)
	}
}

// robustTwinPreset is rmgpc's composition under another name: the robust
// family must route it to its own training as it does rmgpc, which it can
// only do by what the model is (its engine's capabilities), not by name.
const robustTwinPreset = "robust-test-rmgpc-twin"

func init() {
	p, ok := models.LookupPreset("rmgpc")
	if !ok {
		panic("rmgpc is not registered")
	}
	p.Name, p.Order = robustTwinPreset, 99
	if err := models.RegisterPreset(p); err != nil {
		panic(err)
	}
}

// TestRobustOwnTrainingByCapability checks that which methods train by
// their preset's own settings is decided by the engine's capability: the
// EP and Laplace presets do, the SVI one does not, and a preset with
// rmgpc's parts under an unknown name is fitted exactly as rmgpc is (under
// the spec's SVI training, with its se kernel and 3 epochs, it would not
// be).
func TestRobustOwnTrainingByCapability(t *testing.T) {
	for model, want := range map[string]bool{"rmgpc": true, "smgpc": true, "htpc": true, robustTwinPreset: true, "rmgpc-svi": false, "mgp": false} {
		if got := ownTraining(Method{Name: "m", Model: model}); got != want {
			t.Errorf("ownTraining(%s) = %v, want %v", model, got, want)
		}
	}
	dataDir, err := datasets.ResolveDataDir("")
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "gpinputnoise", "uci", "wine")); err != nil {
		t.Skip("wine not present")
	}
	src := `name: robust_twin
title: t
source: test
family: robust_uci
datasets: [wine]
protocol: {splits: 1}
training: {epochs: 3, batch: 200, lr: 0.05, inducing: 10, kernel: se}
settings:
  - {name: "η=10%", label_noise: 0.1}
methods:
  - {name: A, model: rmgpc}
  - {name: B, model: ` + robustTwinPreset + `}
`
	s, err := ParseSpec("robust.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 1, DataDir: dataDir}); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]*Result{}
	for _, r := range st.results() {
		res[r.Method] = &r
	}
	a, b := res["A"], res["B"]
	if a == nil || b == nil {
		t.Fatalf("results %v", res)
	}
	if a.Error != b.Error || a.NLL != b.NLL || a.BCR != b.BCR {
		t.Fatalf("rmgpc: error %v nll %v bcr %v; the same parts under another name: error %v nll %v bcr %v", a.Error, a.NLL, a.BCR, b.Error, b.NLL, b.BCR)
	}
}
