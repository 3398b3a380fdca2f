package experiments

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Progress counts a grid's finished runs across a directory's results
// files and prices the rest at each method's median CPU time (Seconds
// where CPU time is missing, copies of another fit not counted), falling
// back to the median over methods for a method with none finished.
func TestReadProgress(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	runs := Expand(s) // 2 settings × 2 methods × 3 splits
	dir := t.TempDir()
	if p, err := ReadProgress(dir, runs); err != nil || p.Done != 0 || p.CPULeft != 0 {
		t.Fatalf("empty directory: %+v, %v", p, err)
	}
	write := func(name string, rs ...Result) {
		var b strings.Builder
		for _, r := range rs {
			line, _ := json.Marshal(r)
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mgp []Run
	for _, r := range runs {
		if r.Method.Name == "MGP" {
			mgp = append(mgp, r)
		}
	}
	// Three MGP fits at 10, 30 and 20 CPU seconds (one only with wall
	// time), one a copy of another's fit at 1000 s, spread over two files.
	write("results.jsonl",
		Result{Key: mgp[0].Key, CPUSeconds: 10, Seconds: 99},
		Result{Key: mgp[1].Key, Seconds: 30})
	write("results.shard-2-of-2.jsonl",
		Result{Key: mgp[2].Key, CPUSeconds: 20},
		Result{Key: mgp[3].Key, Seconds: 1000, SameAs: mgp[0].Key})
	p, err := ReadProgress(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	left := len(runs) - 4
	if p.Total != len(runs) || p.Done != 4 || p.PerFit["MGP"] != 20 || len(p.PerFit) != 1 {
		t.Fatalf("progress %+v", p)
	}
	if want := float64(left-p.Copies) * 20; p.CPULeft != want {
		t.Fatalf("CPU left %v, want %v (%d runs left, %d copies)", p.CPULeft, want, left, p.Copies)
	}
	if got := p.String(); !strings.HasPrefix(got, "4 of 12 done, 8 left") || !strings.Contains(got, "MGP 20s") {
		t.Fatalf("String() = %q", got)
	}
}

// A dry run against a directory with results says how far it is, and
// with --shard only for the shard's runs; without results it says nothing
// of progress.
func TestDryRunPrintsProgress(t *testing.T) {
	root := t.TempDir()
	spec := filepath.Join(root, "mini.yaml")
	if err := os.WriteFile(spec, []byte(miniSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	runs := Expand(s)
	dir := filepath.Join(root, "out")
	run := func(extra ...string) string {
		var out, errb strings.Builder
		if code := Main(append([]string{"run", spec, "--out", dir, "--dry-run"}, extra...), &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	if got := run(); strings.Contains(got, "done") {
		t.Fatalf("no results yet, but: %s", got)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(Result{Key: runs[0].Key, CPUSeconds: 90})
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(); !strings.Contains(got, "1 of 12 done, 11 left") {
		t.Fatalf("dry run: %s", got)
	}
	// A damaged line is named on stderr and its run counted as not done.
	f, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"key\": \"" + runs[1].Key + "\", \"nll\": 0.5\n")
	f.Close()
	var out, errb strings.Builder
	if code := Main([]string{"run", spec, "--out", dir, "--dry-run"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "1 of 12 done") ||
		!strings.Contains(errb.String(), "results.jsonl:2:") {
		t.Fatalf("damaged line: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	shard := runs[0].shard(2)
	other := 3 - shard
	inShard := 0
	for _, r := range runs {
		if r.shard(2) == shard {
			inShard++
		}
	}
	if got := run("--shard", strconv.Itoa(shard)+"/2"); !strings.Contains(got, "1 of "+strconv.Itoa(inShard)+" done") {
		t.Fatalf("shard %d: %s", shard, got)
	}
	if got := run("--shard", strconv.Itoa(other)+"/2"); !strings.Contains(got, "0 of "+strconv.Itoa(len(runs)-inShard)+" done") {
		t.Fatalf("shard %d: %s", other, got)
	}
}

func TestRoughDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12 * time.Second:                      "12 s",
		59*time.Second + 400*time.Millisecond: "59 s",
		45*time.Minute + 20*time.Second:       "45 min",
		2*time.Hour + 5*time.Minute:           "2 h 05 min",
		59*time.Minute + 50*time.Second:       "1 h 00 min",
	} {
		if got := roughDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
