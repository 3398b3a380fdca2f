package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/compare"
)

// The shipped comparison spec parses, names known data sets and engines
// that this build registers or rows that will say they are missing.
func TestCompareSpecParses(t *testing.T) {
	s, err := ReadCompareSpec("compare_binary.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Reference != "mcmc" || len(s.Datasets) != 3 || s.Verdicts.Accurate != "ep" {
		t.Errorf("spec: %+v", s)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\ndatasets: [{name: nosuch, split: 1}]\nengines: [ep]\n"), 0o644)
	if _, err := ReadCompareSpec(bad); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown data set: %v", err)
	}
}

// The verdicts follow the numbers: each finding holds, fails or is "not
// run" (an engine missing) as the report's rows say.
func TestCompareVerdicts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := &CompareSpec{Verdicts: CompareThresholds{FloorFactor: 1.5, NLLTolerance: 0.02, NLLEngine: "ep", MaxRHat: 1.01, Shrunk: "laplace", Accurate: "ep", Between: "svi"}}
	rep := &compare.Report{Reference: "mcmc", Rows: []compare.Row{
		{Engine: "laplace", Run: 1, Skipped: "engine \"laplace\" is not registered"},
		{Engine: "ep", Run: 1, NLL: 0.50, MeanAbsDP: f(0.003), MaxAbsDP: f(0.01), LatentMeanRatio: f(1), ConfidenceRatio: f(1)},
		{Engine: "svi", Run: 1, NLL: 0.55, MeanAbsDP: f(0.02), MaxAbsDP: f(0.1), LatentMeanRatio: f(1.1), ConfidenceRatio: f(1.02)},
		{Engine: "mcmc", Run: 1, NLL: 0.51, MeanAbsDP: f(0), MaxAbsDP: f(0), Figures: []models.Figure{{Name: "max_rhat", Value: 1.004}}},
		{Engine: "mcmc", Run: 2, NLL: 0.51, MeanAbsDP: f(0.0025), MaxAbsDP: f(0.008)},
	}}
	got := map[string]string{}
	for _, v := range CompareVerdicts(s, "d", rep) {
		got[strings.SplitN(v.Finding, " ", 2)[0]+"|"+v.Outcome] = v.Detail
	}
	for _, want := range []string{"mcmc|holds", "mcmc's|holds", "ep|holds", "laplace's|not run", "svi|not run"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing verdict %s in %v", want, got)
		}
	}
	// EP beyond the floor fails; a far NLL fails.
	rep.Rows[1].MeanAbsDP, rep.Rows[1].NLL = f(0.01), 0.6
	got = map[string]string{}
	for _, v := range CompareVerdicts(s, "d", rep) {
		got[strings.SplitN(v.Finding, " ", 2)[0]+"|"+v.Outcome] = v.Detail
	}
	for _, want := range []string{"ep|fails", "mcmc's|fails"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing verdict %s in %v", want, got)
		}
	}
}
