package experiments

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundoff(t *testing.T) {
	for v, want := range map[string]float64{".11±.05": 0.005, "0.758±0.022": 0.0005, "12": 0.5, "7.19": 0.005, "1.5e-3": 0.05} {
		if got := roundoff(v); got < want*0.999 || got > want*1.001 {
			t.Errorf("roundoff(%q) = %g, want %g", v, got, want)
		}
	}
}

func TestJudgeCells(t *testing.T) {
	cases := []struct {
		name string
		c    judged
		want string
	}{
		{"within", judged{ours: 0.50, uOurs: 0.02, paper: 0.46, uPaper: 0.01, round: 0.005, has: true}, verdictAgrees},
		{"worse", judged{ours: 0.60, uOurs: 0.02, paper: 0.46, uPaper: 0.01, round: 0.005, has: true}, verdictWorse},
		{"better", judged{ours: 0.30, uOurs: 0.02, paper: 0.46, uPaper: 0.01, round: 0.005, has: true}, verdictBetter},
		{"rounding only", judged{ours: 0.114, paper: 0.11, round: 0.005, has: true}, verdictAgrees},
		{"large both", judged{oursLarge: true, paperLarge: true, has: true}, verdictAgrees},
		{"paper large", judged{ours: 0.1, paperLarge: true, has: true}, verdictBetter},
		{"ours large", judged{oursLarge: true, paper: 0.1, has: true}, verdictWorse},
	}
	for _, c := range cases {
		judge(&c.c, "nll")
		if c.c.verdict != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.c.verdict, c.want)
		}
	}
	c := judged{ours: 2, paper: 1, has: true, round: 0.005}
	if judge(&c, "learned_noise"); c.verdict != verdictDiffers {
		t.Errorf("undirected metric: %s", c.verdict)
	}
}

func TestTableVerdictRule(t *testing.T) {
	names := []string{"A", "B", "C"}
	cell := func(ours, paper float64) *judged {
		return &judged{ours: ours, uOurs: 0.01, paper: paper, uPaper: 0.01, round: 0.005, has: true}
	}
	// The paper orders A < B < C clearly; ours keeps it: reproduced.
	tv := &tableVerdict{compared: 3, agree: 3, cells: 3, complete: 3}
	tv.addRow("d", names, []*judged{cell(0.1, 0.1), cell(0.3, 0.3), cell(0.5, 0.5)}, "nll")
	if tv.pairs != 3 || tv.reversed != 0 || !strings.HasPrefix(tv.text(), "**reproduced**") {
		t.Fatalf("%+v: %s", tv, tv.text())
	}
	// Ours reverses A and C significantly: one of three orderings, and the
	// cells disagree: not reproduced.
	tv = &tableVerdict{compared: 3, agree: 1, cells: 4, complete: 3}
	tv.addRow("d", names, []*judged{cell(0.5, 0.1), cell(0.3, 0.3), cell(0.1, 0.5)}, "nll")
	if tv.reversed != 3 || !strings.HasPrefix(tv.text(), "**not reproduced**") || !strings.Contains(tv.text(), "d: paper A < B") || !strings.Contains(tv.text(), "partial: 3 of 4 cells") {
		t.Fatalf("%+v: %s", tv, tv.text())
	}
	// A tie in ours is not a reversal; 2 of 3 cells agree: partly.
	tv = &tableVerdict{compared: 3, agree: 2, cells: 3, complete: 3}
	tv.addRow("d", names, []*judged{cell(0.3, 0.1), cell(0.3, 0.3), cell(0.5, 0.5)}, "nll")
	if tv.reversed != 0 || !strings.HasPrefix(tv.text(), "**partly reproduced**") {
		t.Fatalf("%+v: %s", tv, tv.text())
	}
	// A table whose runs are not the paper's experiment is not comparable,
	// however well its values agree, and says why.
	tv = &tableVerdict{compared: 3, agree: 3, cells: 3, complete: 3, notComparable: "our generator"}
	if txt := tv.text(); !strings.HasPrefix(txt, "**not comparable** — our runs are not the paper's experiment: our generator") || !strings.Contains(txt, "would read reproduced — 3 of 3 cells agree") {
		t.Fatalf("%s", txt)
	}
	if l, v := tv.label(); l != labelNotComparable || v != labelReproduced {
		t.Fatalf("label %q, values %q", l, v)
	}
	// Large in the paper ranks after every number.
	tv = &tableVerdict{}
	tv.addRow("d", names[:2], []*judged{{ours: 0.5, has: true, paperLarge: true}, cell(0.1, 0.1)}, "nll")
	if tv.pairs != 1 || tv.reversed != 0 {
		t.Fatalf("%+v", tv)
	}
}

func TestSpliceBlocks(t *testing.T) {
	doc := "# Title\n<!-- gpc:rule -->\nstale text\n<!-- gpc:end -->\nprose stays\n"
	out, err := Splice([]byte(doc), ".", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n<!-- gpc:rule -->\n" + quote(VerdictRule) + "\n<!-- gpc:end -->\nprose stays\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	again, err := Splice(out, ".", "")
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("not idempotent: %v", err)
	}
	for _, bad := range []string{
		"<!-- gpc:rule -->\nno end\n",
		"<!-- gpc:rule -->\n<!-- gpc:rule -->\n<!-- gpc:end -->\n",
		"<!-- gpc:nonsense -->\n<!-- gpc:end -->\n",
		"<!-- gpc:table no/such/dir T1 -->\n<!-- gpc:end -->\n",
	} {
		if _, err := Splice([]byte(bad), t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: want an error naming the line, got %v", bad, err)
		}
	}
}

// TestReproductionUpToDate fails when docs/REPRODUCTION.md's generated
// tables differ from what the committed results give: the verdicts there
// must be the reports' own. Fix with
// `gpc experiment splice docs/REPRODUCTION.md`.
func TestReproductionUpToDate(t *testing.T) {
	root := ".."
	path := filepath.Join(root, "docs", "REPRODUCTION.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("<!-- gpc:table ")) {
		t.Fatal("REPRODUCTION.md has no generated tables")
	}
	out, err := Splice(doc, root, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, out) {
		a, b := strings.Split(string(doc), "\n"), strings.Split(string(out), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("docs/REPRODUCTION.md line %d differs from the committed results:\n have %s\n want %s\nrun: gpc experiment splice docs/REPRODUCTION.md", i+1, a[i], b[i])
			}
		}
		t.Fatalf("docs/REPRODUCTION.md differs in length from its splice; run: gpc experiment splice docs/REPRODUCTION.md")
	}
}

// TestSpliceSharedID checks that a block names every table of its id: the
// noisy-input specs give a paper table's NLL and error halves one id.
func TestSpliceSharedID(t *testing.T) {
	src := miniSpec + "  - id: T\n    title: second half\n    metric: error\n    paper:\n      - {setting: a, values: [\"0.1\", \"0.2\"]}\n"
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
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "res"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "res", "spec.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Splice([]byte("<!-- gpc:table res T -->\n<!-- gpc:end -->\n"), root, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "## T — t") || !strings.Contains(string(out), "## T — second half") {
		t.Fatalf("block lacks one of the two tables of id T:\n%s", out)
	}
}

// A single run of a spec with bootstrap error bars is judged by the
// bootstrap over its test points; a run from before the spec asked for it
// kept none, and is judged on its error by the binomial standard deviation
// (what the bootstrap of 0/1 losses estimates) but not on its NLL.
func TestBootstrapSpreadOfSingleRuns(t *testing.T) {
	rp := &Reporter{s: &Spec{Protocol: Protocol{Uncertainty: "bootstrap"}}}
	tb := Table{ID: "T"}
	pts := make([]float64, 400)
	for i := range 40 {
		pts[i] = 1 // error 0.1
	}
	withPoints := Result{Error: 0.1, NLL: 0.3, NTest: 400, PointErr: pts, PointNLL: pts}
	without := Result{Error: 0.1, NLL: 0.3, NTest: 400}
	binomial := math.Sqrt(0.1 * 0.9 / 400)
	for _, c := range []struct {
		name, metric string
		r            Result
		judged       bool
		se           float64
	}{
		{"error with points", "error", withPoints, true, binomial},
		{"nll with points", "nll", withPoints, true, binomial}, // the same 0/1 points
		{"error without points", "error", without, true, binomial},
		{"nll without points", "nll", without, false, 0},
		{"another metric", "seconds_per_epoch", Result{SecondsPerEpoch: 3, NTest: 400, Error: 0.1}, false, 0},
	} {
		st := rp.statFor([]Result{c.r}, c.metric)
		if c.judged && math.Abs(st.se-c.se) > 0.1*c.se || !c.judged && st.se != 0 {
			t.Errorf("%s: spread %v, want %v", c.name, st.se, c.se)
		}
		_, j := rp.judgedCell(tb, "d", "s", "m", c.metric, st, "0.5", true)
		if j.has != c.judged {
			t.Errorf("%s: judged %v, want %v", c.name, j.has, c.judged)
		}
	}
	// A run without per-point NLLs borrows the per-point spread (σ/mean) of
	// the runs on the same data that kept theirs, preferring its setting's.
	donor := make([]float64, 400)
	for i := range donor {
		donor[i] = 0.3 + 0.3*float64(i%2*2-1) // mean 0.3, σ ≈ 0.3: σ/mean 1
	}
	rp.results = []Result{
		{Dataset: "d", Setting: "s", NTest: 400, NLL: 0.3, PointNLL: donor},
		{Dataset: "d", Setting: "other", NTest: 400, NLL: 0.3, PointNLL: pts},
		{Dataset: "e", Setting: "s", NTest: 400, NLL: 0.3, PointNLL: pts},
	}
	bare := Result{Dataset: "d", Setting: "s", NLL: 0.6, NTest: 400}
	st := rp.statFor([]Result{bare}, "nll")
	if want := 0.6 * 1 / 20; !st.boot || math.Abs(st.se-want) > 0.01*want {
		t.Errorf("borrowed spread: %v (boot %v), want %v", st.se, st.boot, want)
	}
	if _, j := rp.judgedCell(tb, "d", "s", "m", "nll", st, "0.5", true); !j.has {
		t.Error("a run with a borrowed spread was not judged")
	}
	// From another setting of the same data when its own has none; never
	// from other data.
	rp.spread = nil
	if st := rp.statFor([]Result{{Dataset: "d", Setting: "third", NLL: 0.6, NTest: 400}}, "nll"); !st.boot || st.se <= 0 {
		t.Errorf("no spread borrowed from the data's other settings: %+v", st)
	}
	if st := rp.statFor([]Result{{Dataset: "f", Setting: "s", NLL: 0.6, NTest: 400}}, "nll"); st.boot || st.se != 0 {
		t.Errorf("spread borrowed from other data: %+v", st)
	}
	rp.results, rp.spread = nil, nil
	// Without the bootstrap a single run is never judged.
	rp.s.Protocol.Uncertainty = ""
	if _, j := rp.judgedCell(tb, "d", "s", "m", "error", rp.statFor([]Result{without}, "error"), "0.5", true); j.has {
		t.Error("a single run without the bootstrap was judged")
	}
}
