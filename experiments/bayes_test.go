package experiments

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const bayesSpec = `name: bayes
title: bayes
source: test
family: synthetic
datasets: [synthetic]
protocol: {splits: 2, n_train: 150, n_test: 400}
training: {epochs: 30, batch: 50, lr: 0.01, inducing: 15}
settings:
  - {name: given, noise: 0.25}
  - {name: learned, noise: 0.25, learn_noise: true, noise_init: 0.1}
methods:
  - {name: MGP, kind: mgp}
  - {name: Bayes, model: bayes}
tables:
  - id: T
    title: t
    metric: nll
    paper:
      - {setting: given, values: ["1", "-"]}
`

// The generator's classifier is scored like a method, beats a trained
// model's NLL on the same test sets, and is one fit for settings that
// differ only in how a model would learn the noise.
func TestBayesMethod(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "bayes.yaml")
	if err := os.WriteFile(sp, []byte(bayesSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var o, e bytes.Buffer
	if code := Main([]string{"run", sp, "--out", out, "--workers", "2"}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if log := e.String(); strings.Count(log, "|learned|Bayes|") != 2 || !strings.Contains(log, "|learned|Bayes|1|") ||
		strings.Count(log, "(the same fit as synthetic|given|Bayes|") != 2 {
		t.Errorf("the learned setting's Bayes runs are not copies of the given one's:\n%s", log)
	}
	st, err := openStore(out)
	if err != nil {
		t.Fatal(err)
	}
	nll := map[[2]any]float64{}
	for _, r := range st.results() {
		if r.Setting == "given" {
			nll[[2]any{r.Method, r.Split}] = r.NLL
		}
		if r.Method == "Bayes" && (r.NTest != 400 || r.Confusion == nil || !(r.Error > 0) || r.Params != 0) {
			t.Errorf("Bayes result: %+v", r)
		}
	}
	for split := range 2 {
		b, m := nll[[2]any{"Bayes", split}], nll[[2]any{"MGP", split}]
		if !(b > 0) || !(b < m) {
			t.Errorf("split %d: Bayes NLL %v, MGP %v: the optimum must be positive (noisy inputs) and below a model's", split, b, m)
		}
	}
}

func TestBayesMethodOnTheToy(t *testing.T) {
	dir := t.TempDir()
	spec := strings.NewReplacer("  - {name: NIMGP, kind: nimgp}", "  - {name: Bayes, model: bayes}").Replace(miniSpec)
	sp := filepath.Join(dir, "mini.yaml")
	if err := os.WriteFile(sp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	if code := Main([]string{"run", sp, "--out", filepath.Join(dir, "out"), "--methods", "Bayes"}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if !strings.Contains(o.String(), "6 done now") {
		t.Errorf("toy Bayes runs:\n%s", o.String())
	}
}

// Only generated problems have a Bayes classifier: a spec of real data
// naming it is refused before anything runs.
func TestBayesMethodNeedsAGenerator(t *testing.T) {
	spec := strings.NewReplacer("family: synthetic", "family: uci", "datasets: [synthetic]", "datasets: [glass]").Replace(bayesSpec)
	_, err := ParseSpec("uci.yaml", []byte(spec))
	if err == nil || !strings.Contains(err.Error(), "bayes") {
		t.Fatalf("error %v, want one naming model bayes", err)
	}
}

// The sampling-mc variant keeps its test draws in its budget and key (the
// other observed-input models' keys ignore test_samples) and composes the
// sampled-mc input model.
func TestSamplingMCVariant(t *testing.T) {
	spec := strings.Replace(bayesSpec, "  - {name: Bayes, model: bayes}", "  - {name: S, kind: mgp, variant: sampling}\n  - {name: SMC, kind: mgp, variant: sampling-mc}", 1)
	spec = strings.Replace(spec, `values: ["1", "-"]`, `values: ["1", "-", "-"]`, 1)
	s, err := ParseSpec("s.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Expand(s) {
		want := map[string]int{"MGP": 0, "S": 0, "SMC": 500}[r.Method.Name]
		if r.Budget.TestSamples != want {
			t.Errorf("%s: test samples %d in the budget, want %d", r.Method.Name, r.Budget.TestSamples, want)
		}
		if r.Method.Name == "SMC" {
			if o := modelOptions(r, 100, 1); o.Inputs.Model != "sampled-mc" || o.Inputs.Noise.Learn {
				t.Errorf("SMC composes inputs %q (learn %v)", o.Inputs.Model, o.Inputs.Noise.Learn)
			}
		}
	}
}
