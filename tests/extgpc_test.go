package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// extSpec is an experiment whose method names the program's own likelihood
// and whose kernel is an expression with the program's own kernel.
const extSpec = `name: ext
title: "Parts registered by a program outside the library"
family: synthetic
seed: 3
datasets: [synthetic]
protocol: {splits: 1, n_train: 120, n_test: 120}
training: {epochs: 30, batch: 60, lr: 0.02, inducing: 10, kernel: rq+linear}
settings:
  - {name: binary, noise: 0.01, learn_noise: false, c: 2, d: 2}
methods:
  - {name: CLogLog, likelihood: cloglog, inputs: observed}
tables:
  - {id: T, title: "Test error", metric: error}
`

// A program outside the library registers a kernel and a likelihood and
// runs the gpc command line with them (cli.Main): it trains a model that
// names both, reloads it for prediction, and runs a spec that names them.
func TestExtendedBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "extgpc")
	if out, err := exec.Command("go", "build", "-o", bin, "./extgpc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("extgpc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	csv := func(name string, n int) string {
		var b strings.Builder
		for range n {
			x := 6*rng.Float64() - 3
			p1 := 1 - math.Exp(-math.Exp(2*math.Sin(x)))
			y := 0
			if rng.Float64() < p1 {
				y = 1
			}
			fmt.Fprintf(&b, "%.6f,%d\n", x, y)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	train, test := csv("train.csv", 150), csv("test.csv", 150)
	model := filepath.Join(dir, "m.json")
	run("train", "--train", train, "--likelihood", "cloglog", "--kernel", "rq+linear", "--inducing", "10", "--epochs", "40", "--quiet", "--out", model)
	saved, err := os.ReadFile(model)
	if err != nil || !strings.Contains(string(saved), "rq+linear") || !strings.Contains(string(saved), "cloglog") {
		t.Fatalf("the saved model does not name its parts: %v", err)
	}
	probs := filepath.Join(dir, "p.csv")
	out := run("predict", "--model", model, "--input", test, "--labeled", "--out", probs)
	if !strings.Contains(out, `"nll":`) || !strings.Contains(out, `"n":150`) {
		t.Errorf("predict printed %q; want the scores of the 150 labelled rows", out)
	}
	rows, err := os.ReadFile(probs)
	if err != nil || strings.Count(string(rows), "\n") < 150 {
		t.Fatalf("predictions: %v, %d lines", err, strings.Count(string(rows), "\n"))
	}
	spec := filepath.Join(dir, "ext.yaml")
	if err := os.WriteFile(spec, []byte(extSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "res")
	run("experiment", "run", spec, "--out", res)
	report, err := os.ReadFile(filepath.Join(res, "report.md"))
	if err != nil || !strings.Contains(string(report), "CLogLog") {
		t.Fatalf("report: %v\n%s", err, report)
	}
	// The stock binary knows neither part: the same model is refused with
	// the missing name.
	stock := filepath.Join(dir, "gpc")
	if out, err := exec.Command("go", "build", "-o", stock, "../cmd/gpc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o, err := exec.Command(stock, "predict", "--model", model, "--input", test, "--labeled", "--out", filepath.Join(dir, "q.csv")).CombinedOutput()
	if err == nil || !(strings.Contains(string(o), "rq") || strings.Contains(string(o), "cloglog")) {
		t.Errorf("stock gpc on a model with unregistered parts: %v\n%s", err, o)
	}
}
