package experiments

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Class 1 of the second hardening round: a run whose report cannot be
// written (report.md is a directory) says so instead of naming it.
func TestRunDoesNotNameAnUnwrittenReport(t *testing.T) {
	dir := t.TempDir()
	spec := strings.NewReplacer(
		"splits: 3, n_train: 10, n_test: 10", "splits: 1, n_train: 10, n_test: 10",
		"  - {name: b, noise: 0.2}\n", "",
		"  - {name: NIMGP, kind: nimgp}\n", "",
		`values: ["1±0.1", "2"]`, `values: ["1±0.1"]`,
	).Replace(miniSpec)
	sp := filepath.Join(dir, "one.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(out, "report.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	code := Main([]string{"run", sp, "--out", out}, &o, &e)
	if code == 0 {
		t.Errorf("exit code 0 for a report not written:\n%s%s", o.String(), e.String())
	}
	if strings.Contains(o.String(), "Report: ") || !strings.Contains(o.String(), "No report written") {
		t.Errorf("stdout names a report that was not written:\n%s", o.String())
	}
	if !strings.Contains(e.String(), "report.md: it is a directory") {
		t.Errorf("stderr does not say why:\n%s", e.String())
	}
}

// Class 4: --dry-run of a grid just under the run limit prints its size at
// once; it used to build every run (45 s and 2 GB at the limit).
func TestDryRunOfLargeGridIsQuick(t *testing.T) {
	dir := t.TempDir()
	spec := strings.NewReplacer("splits: 3,", "splits: 240000,").Replace(miniSpec)
	sp := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	t0 := time.Now()
	code := Main([]string{"run", sp, "--dry-run", "--out", filepath.Join(dir, "out")}, &o, &e)
	if code != 0 || !strings.Contains(o.String(), "mini: 960000 runs = 1 data sets × 2 settings × 2 methods × 240000 splits") {
		t.Errorf("exit %d:\n%s%s", code, o.String(), e.String())
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("--dry-run took %v", d)
	}
}

// Class 5: a spec file of many megabytes is refused without being read
// whole.
func TestLoadSpecCapsSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(p, []byte(miniSpec+"# "+strings.Repeat("x", 2<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSpec(p)
	if err == nil || err.Error() != p+": a spec is at most 1024 KiB; this file is larger (is it a spec?)" {
		t.Errorf("got %.200v", err)
	}
}
