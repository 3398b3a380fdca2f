package laplace

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/models"
)

func readFloats(t *testing.T, path string) []float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "p0") {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

// A model written by the retired models/htpc (gpc at 8b329a7: `gpc train
// --train train.csv --model htpc` on 72 Glass rows) loads as the htpc
// preset and predicts what that gpc's `gpc predict` wrote for 31 other
// rows; saved again, it reloads to the same.
func TestLegacyHTPCFileLoads(t *testing.T) {
	dir := filepath.Join("..", "testdata", "legacy")
	x := readFloats(t, filepath.Join(dir, "test_x.csv"))
	n := len(x) / 9
	m, err := models.Load(filepath.Join(dir, "htpc.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "htpc" {
		t.Errorf("loaded as model %s", m.Name())
	}
	got, err := m.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := readFloats(t, filepath.Join(dir, "htpc-probs.csv"))
	if len(got) != len(want) {
		t.Fatalf("%d probabilities, want %d", len(got), len(want))
	}
	worst := 0.0
	for i := range got {
		worst = math.Max(worst, math.Abs(got[i]-want[i]))
	}
	t.Logf("largest difference from the old gpc's predictions: %.3g", worst)
	if worst > 1e-9 {
		t.Errorf("predictions differ from the old gpc's by up to %g", worst)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := models.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := m2.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got2[i] != got[i] {
			t.Fatalf("prediction %d: %v after saving, %v before", i, got2[i], got[i])
		}
	}
}
