package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gpc compare prints every engine's row: unknown engines are a usage error
// listing the registered ones, an engine that does not support the
// composition gets a row saying why while the others run, and --json and
// --png write the report.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", binaryBlobs(40, 1))
	test := writeFile(t, dir, "test.csv", binaryBlobs(20, 2))
	code, _, stderr := gpc(t, "compare", "--train", train, "--test", test, "--inference", "ep,nosuch")
	if code != 2 || !strings.Contains(stderr, "nosuch") || !strings.Contains(stderr, "mcmc") {
		t.Errorf("unknown engine: exit %d, %s", code, stderr)
	}
	code, _, stderr = gpc(t, "compare", "--train", train, "--test", test, "--inference", "ep,svi")
	if code != 2 || !strings.Contains(stderr, "reference") {
		t.Errorf("reference not among the engines: exit %d, %s", code, stderr)
	}
	png := filepath.Join(dir, "cmp.png")
	code, stdout, stderr := gpc(t, "compare", "--train", train, "--test", test, "--inference", "svi,ep,mf,mcmc", "--epochs", "20",
		"--set", "mcmc.samples=100", "--set", "mcmc.warmup=50", "--set", "mcmc.chains=2", "--png", png, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"svi", "ep", "mf", "mcmc", "log Z_EP", "ELBO", "mf: ", "seconds_per_ess"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("no PNG: %v", err)
	}
	code, stdout, stderr = gpc(t, "compare", "--train", train, "--test", test, "--inference", "ep,mcmc", "--epochs", "10",
		"--set", "mcmc.samples=50", "--set", "mcmc.warmup=20", "--set", "mcmc.chains=2", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Reference string
		Rows      []struct {
			Engine    string
			MeanAbsDP *float64 `json:"mean_abs_dp"`
			NLL       float64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	if rep.Reference != "mcmc" || len(rep.Rows) != 2 || rep.Rows[0].MeanAbsDP == nil || *rep.Rows[1].MeanAbsDP != 0 {
		t.Errorf("JSON report: %+v", rep)
	}
}
