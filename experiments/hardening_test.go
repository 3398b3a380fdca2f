package experiments

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// Item 3 of the hardening issue: a run whose training split holds rows of
// one class only (n_train: 1) is not a result. It fails with the classes
// named and nothing is recorded.
func TestRunnerFailsSingleClassSplit(t *testing.T) {
	dir := t.TempDir()
	spec := strings.NewReplacer(
		"splits: 3, n_train: 10, n_test: 10", "splits: 1, n_train: 1, n_test: 10",
		"  - {name: b, noise: 0.2}\n", "",
		"  - {name: NIMGP, kind: nimgp}\n", "",
		`values: ["1±0.1", "2"]`, `values: ["1±0.1"]`,
	).Replace(miniSpec)
	sp := filepath.Join(dir, "one.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var o, e bytes.Buffer
	code := Main([]string{"run", sp, "--out", out}, &o, &e)
	if code == 0 {
		t.Fatalf("a single-class run succeeded:\n%s%s", o.String(), e.String())
	}
	if want := "have no rows: the labels make 3 classes (0..2), but only "; !strings.Contains(e.String(), want) || !strings.Contains(e.String(), "a classifier needs rows of at least two classes") {
		t.Errorf("stderr %q does not name the empty classes (%q)", e.String(), want)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "results.jsonl")); len(bytes.TrimSpace(b)) > 0 {
		t.Errorf("a single-class run was recorded: %s", b)
	}
}

// A split with rows of two classes but none of a third is a result (the
// toy problem's third class may win nowhere) recorded with a note naming
// the empty class.
func TestEmptyClassNote(t *testing.T) {
	ds := &datasets.Dataset{Name: "s", N: 4, D: 1, C: 4, X: make([]float64, 4), Y: []int{0, 1, 1, 0}}
	want := "the training split has no rows of classes 2 and 3 (of 0..3); the model was trained on the other classes"
	if got := emptyClassNote(ds); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	ds.C = 2
	if got := emptyClassNote(ds); got != "" {
		t.Errorf("every class present: note %q", got)
	}
}
