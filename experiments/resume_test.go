package experiments

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A method's training overrides survive the resolved spec.json that a
// report and a resumed run read back: the reloaded spec expands to the
// same run keys and budgets.
func TestOverridesSurviveSpecJSON(t *testing.T) {
	src := strings.Replace(miniSpec, "  - {name: NIMGP, kind: nimgp}", "  - {name: NIMGP, kind: nimgp, training: {lr: 0.05, residual: false}}", 1)
	s, err := ParseSpec("mini.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := loadResolved(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, got := Expand(r), Expand(back)
	for i := range want {
		if want[i].Key != got[i].Key || want[i].Budget.LR != got[i].Budget.LR {
			t.Fatalf("run %d: key %s lr %v before, %s lr %v after spec.json", i, want[i].Key, want[i].Budget.LR, got[i].Key, got[i].Budget.LR)
		}
	}
}
