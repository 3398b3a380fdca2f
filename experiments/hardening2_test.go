package experiments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpc-dev/gpc/datasets"
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
	// A comparison spec too (it was read whole).
	_, err = ReadCompareSpec(p)
	if err == nil || err.Error() != p+": a spec is at most 1024 KiB; this file is larger (is it a spec?)" {
		t.Errorf("compare spec: got %.200v", err)
	}
}

// Class 7: a results line repeating a run's key with other numbers is
// reported (the first result kept), not dropped silently; a repeat with
// the same numbers but other timings is no conflict.
func TestStoreReportsConflictingRepeats(t *testing.T) {
	dir := t.TempDir()
	lines := `{"key":"k1","error":0.1,"nll":0.3,"seconds":2}
{"key":"k2","error":0.2,"nll":0.4,"seconds":1}
{"key":"k1","error":0.1,"nll":0.3,"seconds":5}
{"key":"k2","error":0.25,"nll":0.4,"seconds":1}
`
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := st.warnings()
	want := "warning: " + filepath.Join(dir, "results.jsonl") + ":4: run k2 is recorded again with different numbers (error 0.25 and NLL 0.4, against 0.2 and 0.4); the result of " + filepath.Join(dir, "results.jsonl") + ":2 is kept"
	if len(w) != 1 || w[0] != want {
		t.Errorf("warnings %q\nwant [%q]", w, want)
	}
	if r := st.done["k2"]; r.Error != 0.2 {
		t.Errorf("kept error %v, want the first 0.2", r.Error)
	}
}

// Class 7: a run that fails on its data (a training split of one class)
// is not followed by advice to rerun, which would fail the same way.
func TestNoRetryAdviceForPermanentFailure(t *testing.T) {
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
	var o, e bytes.Buffer
	if code := Main([]string{"run", sp, "--out", filepath.Join(dir, "out")}, &o, &e); code == 0 {
		t.Fatalf("a single-class run succeeded:\n%s%s", o.String(), e.String())
	}
	if strings.Contains(e.String(), "rerun the same command to retry") || !strings.Contains(e.String(), "1 of 1 runs failed on their data or settings, which rerunning gives again") {
		t.Errorf("stderr:\n%s", e.String())
	}
}

// Class 7: a data-set name that a family with one data set would ignore
// is refused, naming the entry.
func TestGeneratedFamilyRefusesOtherNames(t *testing.T) {
	for _, c := range []struct{ family, name string }{{"toy1d", "glass"}, {"synthetic", "toy"}} {
		spec := strings.NewReplacer("family: toy1d", "family: "+c.family, "datasets: [toy]", "datasets: ["+c.name+"]").Replace(miniSpec)
		_, err := ParseSpec("mini.yaml", []byte(spec))
		if err == nil || !strings.Contains(err.Error(), "mini.yaml:5:") || !strings.Contains(err.Error(), "would ignore the name") {
			t.Errorf("%s with %s: %v", c.family, c.name, err)
		}
	}
	if _, err := ParseSpec("mini.yaml", []byte(miniSpec)); err != nil {
		t.Errorf("toy1d with toy: %v", err)
	}
}

// Class 4: --dry-run --shard counts a shard's runs without listing the
// grid; the counts are those of the runs Execute would give each shard.
func TestDryRunShardCounts(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "mini.yaml")
	if err := os.WriteFile(sp, []byte(strings.Replace(miniSpec, "splits: 3,", "splits: 40,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadSpec(sp)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Resolve(spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs := Expand(rs)
	for i := 1; i <= 3; i++ {
		want := 0
		for _, r := range runs {
			if r.shard(3) == i {
				want++
			}
		}
		var o, e bytes.Buffer
		if code := Main([]string{"run", sp, "--dry-run", "--shard", fmt.Sprintf("%d/3", i), "--out", filepath.Join(dir, "out")}, &o, &e); code != 0 {
			t.Fatalf("exit %d: %s", code, e.String())
		}
		if line := fmt.Sprintf("shard %d/3: %d of them\n", i, want); !strings.Contains(o.String(), line) {
			t.Errorf("stdout %q lacks %q", o.String(), line)
		}
	}
}

// Round 2, uncapped echoes: a spec error quotes a long value as a short
// excerpt, whether the message gives it with %q, with %s, inside another
// package's error, or as an unknown key of the YAML decoder.
func TestSpecErrorsQuoteExcerpts(t *testing.T) {
	long := strings.Repeat("x", 100000)
	cases := []struct{ edit, want string }{
		{strings.Replace(miniSpec, "name: mini", "name: mini "+long, 1), `name "mini xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (100005 bytes)": use letters`},
		{strings.Replace(miniSpec, "kind: nimgp}", "kind: nimgp"+long+"}", 1), `nimgpxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (100005 bytes)`},
		// YAML caps an implicit key at 1024 characters.
		{strings.Replace(miniSpec, "title: mini", "title: mini\ny"+long[:1000]+": 3", 1), "field y" + long[:39] + "… (1001 bytes) not found in type"},
		{strings.NewReplacer("  - id: T\n", "  - id: T"+long+"\n", `values: ["1±0.1", "2"]`, `values: ["1±0.1"]`).Replace(miniSpec), `table Txxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (100001 bytes): paper row has 1 values`},
		{strings.Replace(miniSpec, "epochs: 1,", "epochs: 2."+strings.Repeat("7", 100000)+",", 1), "mini.yaml:7:20: 2." + strings.Repeat("7", 38) + "… (100002 bytes) must be a whole number"},
	}
	for i, c := range cases {
		_, err := ParseSpec("mini.yaml", []byte(c.edit))
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: got %.500v\nwant it to contain %q and be short", i, err, c.want)
		}
	}
}

// Round 2, uncapped echoes: a results line longer than the cap stops the
// read with an error naming the file and line; the reader used to buffer
// lines of up to 1 GiB (and then skipped this one as unreadable).
func TestResultsLineCapped(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "results.jsonl")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"key":"k1","error":0.1,"nll":0.3}`)
	f.Write(bytes.Repeat([]byte("x"), maxResultLine+1))
	f.WriteString("\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = openStore(dir)
	want := name + ":2: the line is longer than 64 MiB, the limit of a result line"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %.300v\nwant %q", err, want)
	}
}

// Round 2, appends: a results file whose last line a crash cut short is
// read with every whole line kept and the torn tail named as such; the
// next result starts on a fresh line, and both runs read back.
func TestStoreTornLastLine(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "results.jsonl")
	lines := `{"key":"k1","error":0.1,"nll":0.3}
{"key":"k2","error":0.2,"nll":0.4}
{"key":"k3","err`
	if err := os.WriteFile(name, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.has("k1") || !st.has("k2") || st.has("k3") {
		t.Errorf("kept %v, want k1 and k2", st.order)
	}
	w := st.warnings()
	want := "warning: unreadable result line skipped (its run is redone): " + name + ":3: the last line is torn (it has no newline: a write cut short, by a crash say)"
	if len(w) != 1 || w[0] != want {
		t.Errorf("warnings %q\nwant [%q]", w, want)
	}
	if err := st.append(Result{Key: "k3", Error: 0.3, NLL: 0.5}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(name)
	if !strings.Contains(string(b), "{\"key\":\"k3\",\"err\n{\"key\":\"k3\",") || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("file after the append:\n%s", b)
	}
	st2, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.order) != 3 || len(st2.bad) != 1 || !strings.HasSuffix(st2.bad[0], ":3: unexpected end of JSON input") {
		t.Errorf("reread: kept %v, bad %q", st2.order, st2.bad)
	}
}

// Round 2, free space: `run` refuses to start when the results directory
// cannot hold the result lines of the runs left and the checkpoints being
// written, naming the directory, the need and the free bytes; the sizes
// come from the stored lines and checkpoints, or conservative defaults.
func TestExecuteChecksFreeSpace(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var calls atomic.Int64
	fake := func(ctx context.Context, _ *Env, r Run) (*Result, error) {
		calls.Add(1)
		return &Result{Error: 0.1, NLL: float64(r.Split)}, nil
	}
	freeIs := func(n uint64) func(string) (uint64, bool) {
		return func(string) (uint64, bool) { return n, true }
	}
	// Nothing stored: 12 lines of 256 KiB and 2 workers × 2 checkpoints
	// of 64 MiB.
	_, err = Execute(context.Background(), s, dir, RunConfig{Workers: 2, exec: fake, freeSpace: freeIs(1 << 20)})
	want := "not enough room in " + dir + ": the 12 runs left need about 259.0 MiB, for 12 result lines of up to 256.0 KiB (none stored yet, so the longest the papers' specs write) and 4 checkpoints of up to 64.0 MiB (none written yet, so a default; two per worker while one replaces the other), but it has 1.0 MiB free"
	var setup *SetupError
	if !errors.As(err, &setup) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
	if calls.Load() != 0 {
		t.Errorf("%d runs executed after the refusal", calls.Load())
	}
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2, exec: fake, freeSpace: freeIs(1 << 30)}); err != nil || calls.Load() != 12 {
		t.Fatalf("with room: %v, %d runs", err, calls.Load())
	}
	// Everything done: nothing to hold.
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2, exec: fake, freeSpace: freeIs(0)}); err != nil {
		t.Fatalf("nothing left to run: %v", err)
	}
	// Half done, one checkpoint of 1000 bytes: the sizes are the stored ones.
	name := filepath.Join(dir, "results.jsonl")
	b, _ := os.ReadFile(name)
	lines := strings.SplitAfter(string(b), "\n")[:6]
	longest := 0
	for _, l := range lines {
		longest = max(longest, len(l))
	}
	os.WriteFile(name, []byte(strings.Join(lines, "")), 0o644)
	os.MkdirAll(filepath.Join(dir, "checkpoints"), 0o755)
	os.WriteFile(filepath.Join(dir, "checkpoints", "x.ckpt"), make([]byte, 1000), 0o644)
	need := uint64(6*longest + 4*1000)
	_, err = Execute(context.Background(), s, dir, RunConfig{Workers: 2, exec: fake, freeSpace: freeIs(need - 1)})
	want = fmt.Sprintf("not enough room in %s: the 6 runs left need about %s, for 6 result lines of up to %s (the longest stored) and 4 checkpoints of up to 1000 B (the largest in %s;", dir, datasets.ByteSize(need), datasets.ByteSize(uint64(longest)), filepath.Join(dir, "checkpoints"))
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2, exec: fake, freeSpace: freeIs(need)}); err != nil || calls.Load() != 18 {
		t.Fatalf("with just room: %v, %d runs", err, calls.Load())
	}
}

// Round 2, interruptible work: the report stops on a cancelled context
// with its error before writing anything, and a synthetic run's data
// (an O(n³) draw) stops with it; both used to run to the end.
func TestReportAndDataStopOnCancel(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fake := func(ctx context.Context, _ *Env, r Run) (*Result, error) {
		return &Result{Error: 0.1, NLL: float64(r.Split)}, nil
	}
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 1, exec: fake}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ReportContext(ctx, dir, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("ReportContext: %v, want context.Canceled", err)
	}
	for _, f := range []string{"report.md", "report.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was written by a cancelled report", f)
		}
	}
	if err := ReportContext(context.Background(), dir, ""); err != nil {
		t.Fatalf("report: %v", err)
	}

	syn := strings.NewReplacer("family: toy1d", "family: synthetic", "datasets: [toy]", "datasets: [synthetic]", "n_train: 10, n_test: 10", "n_train: 3000, n_test: 3000").Replace(miniSpec)
	ss, err := ParseSpec("mini.yaml", []byte(syn))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := newEnv(ss, "").prepare(ctx, Expand(ss)[0]); !errors.Is(err, context.Canceled) {
		t.Errorf("prepare: %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("a cancelled synthetic draw of 6000 points took %v", d)
	}
}

// Round 2, uncapped echoes: another runner's results file is read a
// capped window at a time; a line longer than the cap in it is stepped
// over, and the whole lines after it are still taken.
func TestOtherRunnersFileReadInCappedWindows(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "results.shard-1-of-2.jsonl")
	f, err := os.Create(other)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte("x"), maxResultLine+10))
	fmt.Fprintln(f)
	fmt.Fprintln(f, `{"key":"k9","error":0.1,"nll":0.3}`)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	found := false
	for i := 0; i < 3 && !found; i++ {
		_, found = s.finishedElsewhere("k9")
	}
	if !found {
		t.Error("the result after an over-long line of another runner's file was never taken")
	}
	if s.others[other] != int64(maxResultLine+10+1+len(`{"key":"k9","error":0.1,"nll":0.3}`)+1) {
		t.Errorf("read up to byte %d of the other file", s.others[other])
	}
}
