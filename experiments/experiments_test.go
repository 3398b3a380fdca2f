package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpecsDryRun validates every shipped spec, full and quick: each must
// parse strictly, validate, and expand to a non-empty grid.
func TestSpecsDryRun(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no specs found: %v", err)
	}
	for _, f := range files {
		if _, err := ReadCompareSpec(f); err == nil {
			// A comparison spec (gpc experiment compare): run refuses it
			// with the command to use.
			var out, errb bytes.Buffer
			if code := Main([]string{"run", f, "--dry-run"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "gpc experiment compare "+f) {
				t.Errorf("run %s: exit %d, %q; want the compare command named", f, code, errb.String())
			}
			continue
		}
		for _, quick := range []bool{false, true} {
			args := []string{"run", f, "--dry-run"}
			if quick {
				args = append(args, "--quick")
			}
			var out, errb bytes.Buffer
			if code := Main(args, &out, &errb); code != 0 {
				t.Errorf("%v: exit %d: %s", args, code, errb.String())
				continue
			}
			if !strings.Contains(out.String(), " runs = ") {
				t.Errorf("%v: unexpected output %q", args, out.String())
			}
		}
	}
}

// TestSpecPaperValuesComplete checks that every results table of every
// shipped spec has a paper value for each cell the paper reports, i.e.
// that the paper rows cover all settings × data sets (or say "-").
func TestSpecPaperValuesComplete(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	for _, f := range files {
		if _, err := ReadCompareSpec(f); err == nil {
			continue // a comparison spec has no paper tables
		}
		s, err := LoadSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range s.Tables {
			if len(tb.Paper) == 0 || !slices.Contains([]string{"", "results"}, tb.Kind) {
				continue
			}
			rp := &Reporter{s: s}
			for _, st := range rp.tableSettings(tb) {
				for _, d := range s.Datasets {
					if _, ok := paperValue(tb, st.Name, d, 0); !ok {
						t.Errorf("%s %s: no paper value for %s / %s", f, tb.ID, st.Name, d)
					}
				}
			}
		}
	}
}

const miniSpec = `name: mini
title: mini
source: test
family: toy1d
datasets: [toy]
protocol: {splits: 3, n_train: 10, n_test: 10}
training: {epochs: 1, batch: 5, lr: 0.01, inducing: 3}
settings:
  - {name: a, noise: 0.1}
  - {name: b, noise: 0.2}
methods:
  - {name: MGP, kind: mgp}
  - {name: NIMGP, kind: nimgp}
tables:
  - id: T
    title: t
    metric: nll
    paper:
      - {setting: a, values: ["1±0.1", "2"]}
`

func TestStrictYAMLErrorsHaveLines(t *testing.T) {
	cases := []struct{ edit, want string }{
		{strings.Replace(miniSpec, "lr: 0.01", "lr: 0.01, epoch: 3", 1), "line 7"},                     // unknown key
		{strings.Replace(miniSpec, "kind: nimgp}", "kind: nimpg}", 1), "mini.yaml:13:"},                // bad kind
		{strings.Replace(miniSpec, `values: ["1±0.1", "2"]`, `values: ["1±0.1"]`, 1), "mini.yaml:19:"}, // wrong count
		{strings.Replace(miniSpec, `values: ["1±0.1", "2"]`, `values: ["x", "2"]`, 1), "mini.yaml:19:"},
		{strings.Replace(miniSpec, "{name: b, noise: 0.2}", "{name: a, noise: 0.2}", 1), "mini.yaml:10:"},
		{strings.Replace(miniSpec, "family: toy1d", "family: toys", 1), "mini.yaml:4:"},
		// lengthscale_scaling: only for the synthetic family, only known rules.
		{strings.Replace(miniSpec, "{name: b, noise: 0.2}", "{name: b, noise: 0.2, lengthscale_scaling: linear-d}", 1), "mini.yaml:10:48: lengthscale_scaling"},
		{strings.NewReplacer("family: toy1d", "family: synthetic", "datasets: [toy]", "datasets: [synthetic]", "{name: b, noise: 0.2}",
			"{name: b, noise: 0.2, lengthscale_scaling: cubic}").Replace(miniSpec), "mini.yaml:10:48: lengthscale_scaling \"cubic\""},
		// A fractional value for a whole-number field (the decoder alone truncates it).
		{strings.Replace(miniSpec, "epochs: 1,", "epochs: 2.7,", 1), "mini.yaml:7:20: 2.7 must be a whole number"},
		{strings.Replace(miniSpec, "splits: 3,", "splits: 1.5,", 1), "mini.yaml:6:20: 1.5 must be a whole number"},
		{strings.Replace(miniSpec, "datasets: [toy]", "datasets: [toy]\nquick: {epochs: 0.5}", 1), "mini.yaml:6:17: 0.5 must be a whole number"},
		// Averages are rows of a results table.
		{strings.Replace(miniSpec, "    metric: nll\n", "    metric: nll\n    kind: confusion\n    averages: true\n", 1), "averages are rows of a results table"},
	}
	for i, c := range cases {
		_, err := ParseSpec("mini.yaml", []byte(c.edit))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want it to mention %q", i, err, c.want)
		}
	}
	if _, err := ParseSpec("mini.yaml", []byte(miniSpec)); err != nil {
		t.Fatal(err)
	}
	// A whole number written as a float is accepted as that number.
	s, err := ParseSpec("mini.yaml", []byte(strings.Replace(miniSpec, "epochs: 1,", "epochs: 4.0,", 1)))
	if err != nil || s.Training.Epochs != 4 {
		t.Fatalf("epochs: 4.0 gave %v, %v", s, err)
	}
}

// TestLengthscaleScalingKeys checks that the synthetic generator option is
// part of the run key (results of one generator are never resumed as those
// of another) while settings without it keep the keys they had before the
// option existed, so earlier results.jsonl files still resume.
func TestLengthscaleScalingKeys(t *testing.T) {
	if b, _ := json.Marshal(Setting{Name: "a", D: 5}); strings.Contains(string(b), "lengthscale") {
		t.Errorf("a setting without lengthscale_scaling hashes a new field: %s", b)
	}
	syn := strings.NewReplacer("family: toy1d", "family: synthetic", "datasets: [toy]", "datasets: [synthetic]").Replace(miniSpec)
	plain, err := ParseSpec("mini.yaml", []byte(syn))
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := ParseSpec("mini.yaml", []byte(strings.Replace(syn, "{name: a, noise: 0.1}", "{name: a, noise: 0.1, lengthscale_scaling: linear-d}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := scaled.Settings[0].LengthscaleScaling; got != "linear-d" {
		t.Fatalf("parsed lengthscale_scaling %q", got)
	}
	a, b := Expand(plain), Expand(scaled)
	if a[0].Key == b[0].Key {
		t.Error("lengthscale_scaling does not change the run key")
	}
	if last := len(a) - 1; a[last].Key != b[last].Key {
		t.Errorf("an unscaled setting's key changed: %s vs %s", a[last].Key, b[last].Key)
	}
}

func TestExpandKeysStableAndUnique(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	a, b := Expand(s), Expand(s)
	if len(a) != 2*2*3 {
		t.Fatalf("grid has %d runs, want 12", len(a))
	}
	seen := map[string]bool{}
	for i := range a {
		if a[i].Key != b[i].Key {
			t.Fatalf("key not stable: %s vs %s", a[i].Key, b[i].Key)
		}
		if seen[a[i].Key] {
			t.Fatalf("duplicate key %s", a[i].Key)
		}
		seen[a[i].Key] = true
	}
	r, err := Resolve(s, Options{EpochsScale: 3})
	if err != nil {
		t.Fatal(err)
	}
	if Expand(r)[0].Key == a[0].Key {
		t.Fatal("a different budget must change the key")
	}
}

// TestKillAndRerun simulates killing an experiment after k finished runs
// (the context is cancelled while other runs are in flight) and rerunning
// it: the second invocation must run exactly the missing runs, and the file
// must end with the full grid, each key once.
func TestKillAndRerun(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var calls atomic.Int64
	fake := func(ctx context.Context, _ *Env, r Run) (*Result, error) {
		calls.Add(1)
		select { // a run takes a little while and honours cancellation
		case <-time.After(time.Duration(2+r.Split) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &Result{Error: 0.1, NLL: float64(r.Split)}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	const k = 5
	_, err = Execute(ctx, s, dir, RunConfig{Workers: 3, exec: fake, afterAppend: func(n int) {
		if n == k {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want context.Canceled", err)
	}
	first := readKeys(t, dir)
	if len(first) < k || len(first) >= 12 {
		t.Fatalf("after the kill %d runs are stored, want between %d and 11", len(first), k)
	}
	calls.Store(0)
	sum, err := Execute(context.Background(), s, dir, RunConfig{Workers: 3, exec: fake})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != len(first) || sum.Done != 12-len(first) || int(calls.Load()) != 12-len(first) {
		t.Fatalf("rerun: %+v with %d executions; want %d skipped and %d done", sum, calls.Load(), len(first), 12-len(first))
	}
	all := readKeys(t, dir)
	if len(all) != 12 {
		t.Fatalf("%d lines, want 12", len(all))
	}
	seen := map[string]bool{}
	for _, k := range all {
		if seen[k] {
			t.Fatalf("duplicate result %s", k)
		}
		seen[k] = true
	}
	for _, r := range Expand(s) {
		if !seen[r.Key] {
			t.Fatalf("missing result %s", r.Key)
		}
	}
	// The report renders from the lines alone.
	if err := Report(dir, ""); err != nil {
		t.Fatal(err)
	}
	var rj ReportJSON
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rj.Cells {
		if c.Table == "T" && c.Setting == "a" && c.Method == "MGP" {
			found = true
			if c.N != 3 || c.Mean == nil || *c.Mean != 1 || c.Paper == nil || *c.Paper != 1 {
				t.Fatalf("cell %+v: want n=3, mean 1 (splits 0,1,2), paper 1", c)
			}
		}
	}
	if !found {
		t.Fatal("report.json lacks the T/a/MGP cell")
	}
}

func readKeys(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("unparseable line %q: %v", line, err)
		}
		keys = append(keys, r.Key)
	}
	return keys
}

// TestStoreToleratesTornLine: a torn last line (machine crash mid-write) is
// ignored, and the next append starts on a fresh line.
func TestStoreToleratesTornLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(p, []byte(`{"key":"a","nll":1}`+"\n"+`{"key":"b","nl`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.has("a") || st.has("b") {
		t.Fatal("want a stored and b (torn) not")
	}
	if err := st.append(Result{Key: "b"}); err != nil {
		t.Fatal(err)
	}
	st2, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st2.has("a") || !st2.has("b") || len(st2.results()) != 2 {
		t.Fatalf("after append: %v", st2.results())
	}
}

func TestMeanRanks(t *testing.T) {
	rp := &Reporter{results: []Result{
		{Dataset: "x", Setting: "s", Method: "A", Split: 0, NLL: 1},
		{Dataset: "x", Setting: "s", Method: "B", Split: 0, NLL: 2},
		{Dataset: "x", Setting: "s", Method: "A", Split: 1, NLL: 3},
		{Dataset: "x", Setting: "s", Method: "B", Split: 1, NLL: 3},
		{Dataset: "x", Setting: "s", Method: "A", Split: 2, NLL: 3}, // B missing: skipped
	}}
	r := rp.meanRanks("s", []string{"A", "B"}, "nll")
	if r["A"].n != 2 || r["A"].mean != 1.25 || r["B"].mean != 1.75 {
		t.Fatalf("ranks %+v", r)
	}
}

// TestMiniEndToEnd runs the real pipeline (toy data, all four models) at a
// tiny budget through Main, then re-renders the report.
func TestMiniEndToEnd(t *testing.T) {
	dir := t.TempDir()
	spec := strings.NewReplacer(
		"splits: 3, n_train: 10, n_test: 10", "splits: 1, n_train: 40, n_test: 30",
		"  - {name: NIMGP, kind: nimgp}", "  - {name: NIMGP, kind: nimgp, training: {test_samples: 3}}\n  - {name: NIMGP_NN, kind: nimgp-nn, training: {test_samples: 3}}\n  - {name: NIMGP_FO, kind: nimgp-fo}",
		`values: ["1±0.1", "2"]`, `values: ["1±0.1", "2", "-", "-"]`,
	).Replace(miniSpec) + "figures: [fig1, fig2]\n"
	sp := filepath.Join(dir, "mini.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var o, e bytes.Buffer
	if code := Main([]string{"run", sp, "--out", out, "--workers", "2"}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if code := Main([]string{"report", out}, &o, &e); code != 0 {
		t.Fatalf("report exit %d: %s", code, e.String())
	}
	for _, f := range []string{"report.md", "report.json", "results.jsonl", "fig1.png", "fig2.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "· 1±0.1") || strings.Contains(string(md), "not drawn") {
		t.Errorf("report.md:\n%s", md)
	}
	// The accessors' values reach the results: parameter groups (NIMGP's
	// q(x_i) is 2·N·D), and NIMGP_FO's latent marginals for Figure 1 with
	// Δ ≥ 0 and the inducing inputs.
	st, err := openStore(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.results() {
		sum := 0
		for _, v := range r.ParamGroups {
			sum += v
		}
		if r.Params == 0 || sum != r.Params || r.ParamGroups["kernel"] == 0 {
			t.Errorf("%s: params %d, groups %v", r.Method, r.Params, r.ParamGroups)
		}
		if want := map[string]int{"NIMGP": 2 * r.NTrain * r.D}[r.Method]; r.ParamGroups["q(x)"] != want {
			t.Errorf("%s: q(x) group %d, want %d", r.Method, r.ParamGroups["q(x)"], want)
		}
		if (r.Method == "NIMGP_NN") != (r.NNParams > 0) || r.LearnedNoise != nil {
			t.Errorf("%s: nn params %d, learned noise %v (noise is given)", r.Method, r.NNParams, r.LearnedNoise)
		}
		c := r.Curve
		if r.Method != "NIMGP_FO" {
			if c != nil && c.LatentMean != nil {
				t.Errorf("%s: latent marginals recorded", r.Method)
			}
			continue
		}
		if c == nil || len(c.LatentMean) != r.C || len(c.Z) != r.C || len(c.Z[0]) == 0 {
			t.Fatalf("NIMGP_FO curve lacks latent marginals or Z: %+v", c)
		}
		wider := false
		for k := range c.LatentVar {
			for i, v := range c.LatentVar[k] {
				v0 := c.LatentVarNoDelta[k][i]
				if !(v0 > 0) || v < v0-1e-12 {
					t.Fatalf("class %d, x=%v: variance %v with Δ, %v without", k, c.X[i], v, v0)
				}
				wider = wider || v > v0*(1+1e-6)
			}
		}
		if !wider {
			t.Error("Δ is zero everywhere")
		}
	}
	// A second run finds everything done.
	o.Reset()
	if code := Main([]string{"run", sp, "--out", out}, &o, &e); code != 0 || !strings.Contains(o.String(), "0 done now, 8 skipped") {
		t.Fatalf("rerun: exit %d, %s", code, o.String())
	}
}

// A run restricted to some methods keeps each paper value under its own
// method: results rows lose the dropped methods' values (positions shift),
// rows naming a method go with it, and the spec itself is not edited.
func TestMethodFilterKeepsPaperValuesAligned(t *testing.T) {
	s, err := LoadSpec("rmgpc_t2_uci.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full := s.Tables[0].Paper[0].Values
	if len(s.Methods) != 4 || len(full) != 4 {
		t.Fatalf("spec changed: %d methods, %d paper values", len(s.Methods), len(full))
	}
	rs, err := Resolve(s, Options{Methods: []string{"RMGPC", "RMGPC-SVI"}})
	if err != nil {
		t.Fatal(err)
	}
	got := rs.Tables[0].Paper[0].Values
	if len(got) != 2 || got[0] != full[0] || got[1] != full[3] {
		t.Errorf("paper values %q under methods RMGPC, RMGPC-SVI; want %q and %q", got, full[0], full[3])
	}
	if len(s.Tables[0].Paper[0].Values) != 4 {
		t.Error("Resolve edited the spec's own paper rows")
	}
	astro, err := LoadSpec("t9_t10_astro.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ra, err := Resolve(astro, Options{Methods: []string{"NIMGP"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range ra.Tables {
		for _, r := range tb.Paper {
			if tb.Kind == "confusion" && r.Method != "NIMGP" {
				t.Errorf("%s kept the paper row of %s", tb.ID, r.Method)
			}
			if tb.Kind == "" && len(r.Values) != 1 {
				t.Errorf("%s row has %d values for one method", tb.ID, len(r.Values))
			}
		}
	}
	if ra.Tables[0].Paper[0].Values[0] != astro.Tables[0].Paper[0].Values[1] {
		t.Errorf("NIMGP's NLL is %q, the spec's %q", ra.Tables[0].Paper[0].Values[0], astro.Tables[0].Paper[0].Values[1])
	}
}

// An average row averages each method's per-set means over the sets that
// have both its runs and a paper value (z has no paper value, and B no
// runs on y), with √(Σ se²)/k, beside the paper's mean over the same sets.
func TestAverageRow(t *testing.T) {
	s := &Spec{Datasets: []string{"x", "y", "z"}}
	tb := Table{ID: "T", Metric: "nll", Paper: []PaperRow{
		{Dataset: "x", Values: []string{"1.5", "0.5"}},
		{Dataset: "y", Values: []string{"3.5", "9"}},
		{Dataset: "z", Values: []string{"-", "-"}},
	}}
	rp := &Reporter{s: s, by: map[string][]Result{}}
	add := func(d, m string, nll ...float64) {
		for i, v := range nll {
			rp.by[groupKey(d, "s", m)] = append(rp.by[groupKey(d, "s", m)], Result{Dataset: d, Setting: "s", Method: m, Split: i, NLL: v})
		}
	}
	add("x", "A", 1, 3)
	add("y", "A", 4)
	add("z", "A", 100)
	add("x", "B", 1)
	row := rp.averageRow(tb, "s", []string{"A", "B"}, true)
	for _, want := range []string{"**average**", "3±0.5 [3]", "· 2.5 {2 sets}", "| 1 [1]", "· 0.5 {1 set}"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
}

// A grid run a part at a time (--methods, then the rest) reports the whole
// grid: the folder's spec.json is the grid's, not the last part's, so the
// first part's cells stay in the report.
func TestPartialRunsReportWholeGrid(t *testing.T) {
	dir := t.TempDir()
	spec := strings.Replace(miniSpec, "splits: 3, n_train: 10, n_test: 10", "splits: 1, n_train: 20, n_test: 10", 1)
	sp := filepath.Join(dir, "mini.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, m := range []string{"NIMGP", "MGP"} {
		var o, e bytes.Buffer
		if code := Main([]string{"run", sp, "--out", out, "--methods", m}, &o, &e); code != 0 {
			t.Fatalf("--methods %s: exit %d: %s", m, code, e.String())
		}
	}
	saved, err := loadResolved(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Methods) != 2 {
		t.Errorf("spec.json has %d methods after two partial runs, want the grid's 2", len(saved.Methods))
	}
	var rj ReportJSON
	b, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, c := range rj.Cells {
		if c.Table == "T" {
			n[c.Method] += c.N
		}
	}
	if n["MGP"] != 2 || n["NIMGP"] != 2 {
		t.Errorf("report cells hold %v runs per method, want 2 (two settings) each", n)
	}
}

// --settings runs the named settings only, keeps the whole grid's spec.json
// (so a later run of the rest reports beside it), and names the settings
// there are when it meets one that is not.
func TestSettingsFlag(t *testing.T) {
	dir := t.TempDir()
	spec := strings.Replace(miniSpec, "splits: 3, n_train: 10, n_test: 10", "splits: 1, n_train: 20, n_test: 10", 1)
	sp := filepath.Join(dir, "mini.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var o, e bytes.Buffer
	if code := Main([]string{"run", sp, "--out", out, "--settings", "B"}, &o, &e); code != 0 {
		t.Fatalf("--settings B: exit %d: %s", code, e.String())
	}
	res := readResults(t, out)
	if len(res) != 2 {
		t.Fatalf("%d results, want 2 (setting b × two methods)", len(res))
	}
	for _, r := range res {
		if r.Setting != "b" {
			t.Errorf("run %s of setting %q, want only b", r.Key, r.Setting)
		}
	}
	saved, err := loadResolved(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Settings) != 2 {
		t.Errorf("spec.json has %d settings after a --settings run, want the grid's 2", len(saved.Settings))
	}
	o.Reset()
	e.Reset()
	if code := Main([]string{"run", sp, "--out", out, "--settings", "c", "--dry-run"}, &o, &e); code != 1 || !strings.Contains(e.String(), `no setting named "c" (have a, b)`) {
		t.Errorf("--settings c: exit %d, stderr %q", code, e.String())
	}
}

// sq_lengthscale is part of the key, leaves other keys alone, reaches the
// generator, and is refused outside the synthetic family or below zero.
func TestSqLengthscaleSetting(t *testing.T) {
	syn := strings.NewReplacer("family: toy1d", "family: synthetic", "datasets: [toy]", "datasets: [synthetic]", "n_train: 10", "n_train: 200").Replace(miniSpec)
	plain, err := ParseSpec("mini.yaml", []byte(syn))
	if err != nil {
		t.Fatal(err)
	}
	set := strings.Replace(syn, "{name: a, noise: 0.1}", "{name: a, noise: 0.1, sq_lengthscale: 3}", 1)
	smooth, err := ParseSpec("mini.yaml", []byte(set))
	if err != nil {
		t.Fatal(err)
	}
	a, b := Expand(plain), Expand(smooth)
	if a[0].Key == b[0].Key {
		t.Error("sq_lengthscale does not change the run key")
	}
	if last := len(a) - 1; a[last].Key != b[last].Key {
		t.Errorf("another setting's key changed: %s vs %s", a[last].Key, b[last].Key)
	}
	// The generator reads it: the same split's labels differ.
	e := newEnv(smooth, "")
	r0, r1 := a[0], b[0]
	s0, err := newEnv(plain, "").prepare(context.Background(), r0)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := e.prepare(context.Background(), r1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(s0.train.Y, s1.train.Y) {
		t.Error("sq_lengthscale 3 gave the labels of the default generator")
	}
	for _, bad := range []string{
		strings.Replace(miniSpec, "{name: a, noise: 0.1}", "{name: a, noise: 0.1, sq_lengthscale: 3}", 1),
		strings.Replace(syn, "{name: a, noise: 0.1}", "{name: a, noise: 0.1, sq_lengthscale: -1}", 1),
	} {
		if _, err := ParseSpec("mini.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "sq_lengthscale") {
			t.Errorf("error %v, want one naming sq_lengthscale", err)
		}
	}
}

// A cell of one run with no bootstrap shows no spread (not ±0) and puts no
// standard error in report.json; a bootstrapped one keeps its spread.
func TestSingleRunCellHasNoSpread(t *testing.T) {
	rp := &Reporter{s: &Spec{}, by: map[string][]Result{}}
	text, _ := rp.judgedCell(Table{ID: "T"}, "d", "s", "M", "nll", stat{n: 1, mean: 0.5}, "", false)
	if text != "0.5 [1] · —" {
		t.Errorf("one run without a bootstrap: %q, want %q", text, "0.5 [1] · —")
	}
	if c := rp.cells[len(rp.cells)-1]; c.Stderr != nil {
		t.Errorf("report.json cell of one run has standard error %v", *c.Stderr)
	}
	text, _ = rp.judgedCell(Table{ID: "T"}, "d", "s", "M", "nll", stat{n: 1, mean: 0.5, se: 0.01, boot: true}, "", false)
	if text != "0.5±0.01 [1] · —" {
		t.Errorf("one bootstrapped run: %q, want %q", text, "0.5±0.01 [1] · —")
	}
}

// diff_against: each cell's paired difference from the reference setting's
// cell, over the splits both ran, or over the test points of single runs;
// "—" where nothing pairs, and a reference that is neither a setting nor a
// method is refused at parse time.
func TestDiffAgainst(t *testing.T) {
	s := &Spec{Datasets: []string{"x"}, Settings: []Setting{{Name: "base"}, {Name: "v"}, {Name: "w"}}}
	tb := Table{ID: "T", Metric: "nll", DiffAgainst: "base"}
	rp := &Reporter{s: s, by: map[string][]Result{}}
	add := func(st, m string, r Result) {
		r.Dataset, r.Setting, r.Method = "x", st, m
		rp.by[groupKey("x", st, m)] = append(rp.by[groupKey("x", st, m)], r)
	}
	// A: three splits each; v differs from base by 0.1, 0.2, 0.3 (split 3
	// of v has no partner and is left out).
	for i, v := range []float64{1, 2, 3} {
		add("base", "A", Result{Split: i, NLL: v})
		add("v", "A", Result{Split: i, NLL: v + 0.1*float64(i+1)})
	}
	add("v", "A", Result{Split: 3, NLL: 99})
	// B: one run each, with per-point losses.
	add("base", "B", Result{NLL: 0.5, PointNLL: []float64{0.4, 0.6, 0.5}})
	add("v", "B", Result{NLL: 0.333, PointNLL: []float64{0.2, 0.5, 0.3}})
	rp.diffTable(tb, []string{"A", "B"}, false)
	out := rp.md.String()
	for _, want := range []string{
		"| base | (reference) | (reference) |",
		"| v | +0.2 ± 0.058 [3 splits] | -0.167 ± 0.033 [3 test points] |",
		"| w | — | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff table lacks %q:\n%s", want, out)
		}
	}

	bad := strings.Replace(miniSpec, "metric: nll", "metric: nll\n    diff_against: c", 1)
	if _, err := ParseSpec("mini.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), `diff_against "c" is neither a setting nor a method`) {
		t.Errorf("diff_against naming nothing: %v", err)
	}
	good := strings.Replace(miniSpec, "metric: nll", "metric: nll\n    diff_against: MGP", 1)
	if _, err := ParseSpec("mini.yaml", []byte(good)); err != nil {
		t.Errorf("diff_against naming a method: %v", err)
	}
}
