package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/models"
)

// gpc runs the command line and returns the exit status and outputs.
func gpc(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// writeFile writes body to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// blobs returns a CSV of n rows: two features around one of three centres
// and the centre's label, with or without the label column and a header.
func blobs(n int, seed uint64, labeled, header bool) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := [3][2]float64{{-2, 0}, {2, 0}, {0, 2.5}}
	var b strings.Builder
	if header {
		b.WriteString("x1,x2")
		if labeled {
			b.WriteString(",label")
		}
		b.WriteString("\n")
	}
	for i := 0; i < n; i++ {
		c := i % 3
		fmt.Fprintf(&b, "%.4f,%.4f", centres[c][0]+0.5*rng.NormFloat64(), centres[c][1]+0.5*rng.NormFloat64())
		if labeled {
			fmt.Fprintf(&b, ",%d", c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// noiseTable returns n rows of d variances.
func noiseTable(n, d int, v float64) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(30, 1, true, true))
	out := filepath.Join(dir, "m.json")
	base := []string{"train", "--train", train, "--out", out, "--model", "mgp"}
	with := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	cases := []struct {
		name string
		args []string
		want string // substring of stderr
	}{
		{"no command", nil, "Usage"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"flag before command", []string{"--model", "mgp"}, "before a command"},
		{"missing --train", []string{"train", "--model", "mgp", "--out", out}, "--train FILE.csv is required"},
		{"missing --out", []string{"train", "--train", train, "--model", "mgp"}, "--out MODEL.json is required"},
		{"missing --model", []string{"train", "--train", train, "--out", out}, "give --model"},
		{"unknown model", []string{"train", "--train", train, "--out", out, "--model", "svm"}, `unknown model "svm"`},
		{"unknown flag", with("--bogus"), "flag provided but not defined: -bogus"},
		{"stray argument", with("extra.csv"), `unexpected argument "extra.csv"`},
		{"bad --input-noise word", with("--input-noise", "lots"), `--input-noise "lots" is not`},
		{"negative --input-noise", with("--input-noise", "-0.5"), "positive finite"},
		{"zero --input-noise", with("--input-noise", "0"), "positive finite"},
		{"NaN --input-noise", with("--input-noise", "NaN"), "positive finite"},
		{"directory --input-noise", with("--input-noise", dir), "is a directory"},
		{"negative epochs", with("--epochs", "-3"), "--epochs -3"},
		{"zero epochs", with("--epochs", "0"), "--epochs 0"},
		{"non-numeric epochs", with("--epochs", "ten"), `invalid value "ten" for flag -epochs`},
		{"zero batch", with("--batch", "0"), "--batch 0"},
		{"zero inducing", with("--inducing", "0"), "--inducing 0"},
		{"negative lr", with("--lr", "-1"), "--lr -1"},
		{"bad kernel", with("--kernel", "rbf"), `unknown kernel "rbf"`},
		{"bad kernel expression", with("--kernel", "se+*linear"), `position 4: expected a kernel name or (, found "*"`},
		{"bad kernel argument", with("--kernel", "poly(0)"), `poly(0): the degree must be an integer`},
		{"bad hidden", with("--hidden", "50,x"), `--hidden "50,x"`},
		{"predict without input", []string{"predict", "--model", out, "--out", "p.csv"}, "--input FILE.csv is required"},
		{"predict learn noise", []string{"predict", "--model", out, "--input", train, "--out", "p.csv", "--input-noise", "learn"}, "only for training"},
		{"check-grad unknown model", []string{"check-grad", "--model", "gp"}, `unknown model "gp"`},
		{"check-grad bad order", []string{"check-grad", "--model", "mgp", "--order", "3"}, `--order "3"`},
		{"check-grad bad tol", []string{"check-grad", "--model", "mgp", "--tol", "-1"}, "--tol -1"},
		{"bench bad config", []string{"bench", "--model", "mgp", "--config", "cifar"}, `unknown --config "cifar"`},
		{"bench zero iters", []string{"bench", "--iters", "0"}, "--iters 0"},
		{"data without subcommand", []string{"data"}, "missing subcommand"},
		{"data unknown set", []string{"data", "fetch", "cifar"}, `unknown data set "cifar"`},
		{"demo zero epochs", []string{"demo", "--epochs", "0"}, "--epochs 0"},
		{"demo unknown model", []string{"demo", "--models", "mgp,xgp"}, `unknown model "xgp"`},
		{"help unknown command", []string{"help", "frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := gpc(t, c.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2\nstderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not contain %q", stderr, c.want)
			}
			if stdout != "" {
				t.Errorf("unexpected stdout %q", stdout)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace on stderr: %s", stderr)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a usage error wrote a model")
	}
}

func TestHelp(t *testing.T) {
	code, stdout, stderr := gpc(t, "help")
	if code != 0 || stderr != "" {
		t.Fatalf("gpc help: status %d, stderr %q", code, stderr)
	}
	for _, cmd := range []string{"demo", "train", "predict", "check-grad", "bench", "data", "version"} {
		if !strings.Contains(stdout, "\t"+cmd) {
			t.Errorf("gpc help does not list %s:\n%s", cmd, stdout)
		}
	}
	// Every model gpc train accepts, with its summary: the overall help
	// once listed only the first paper's four.
	for _, name := range append(models.PresetNames(), "rmgpc", "smgpc") {
		if !strings.Contains(stdout, "  "+name+" ") {
			t.Errorf("gpc help does not list the model %s:\n%s", name, stdout)
		}
	}
	for _, args := range [][]string{{"train", "-h"}, {"train", "--help"}, {"help", "train"}} {
		code, stdout, _ := gpc(t, args...)
		if code != 0 || !strings.Contains(stdout, "--input-noise") || !strings.Contains(stdout, "gpc train --train") {
			t.Errorf("gpc %s: status %d, stdout:\n%s", strings.Join(args, " "), code, stdout)
		}
	}
	for name := range commands {
		if code, stdout, stderr := gpc(t, name, "-h"); code != 0 || !strings.Contains(strings.ToLower(stdout), "usage:") {
			t.Errorf("gpc %s -h: status %d, stdout %q, stderr %q", name, code, stdout, stderr)
		}
	}
	if code, stdout, _ := gpc(t, "--help"); code != 0 || !strings.Contains(stdout, "Commands:") {
		t.Errorf("gpc --help: status %d, stdout %q", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := gpc(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "gpc "+version) {
		t.Errorf("gpc version: status %d, stdout %q", code, stdout)
	}
}

// readProbs reads a probabilities file and checks its header and rows.
func readProbs(t *testing.T, path string, n, c int) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n+1 {
		t.Fatalf("%s: %d lines, want header + %d rows", path, len(recs), n)
	}
	for k, h := range recs[0] {
		if h != "p"+strconv.Itoa(k) {
			t.Fatalf("%s: header %v", path, recs[0])
		}
	}
	if len(recs[0]) != c {
		t.Fatalf("%s: %d columns, want %d", path, len(recs[0]), c)
	}
	var out [][]float64
	for i, rec := range recs[1:] {
		var row []float64
		var sum float64
		for _, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || v > 1 {
				t.Fatalf("%s row %d: bad probability %q", path, i+1, s)
			}
			row = append(row, v)
			sum += v
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Fatalf("%s row %d sums to %v", path, i+1, sum)
		}
		out = append(out, row)
	}
	return out
}

func TestTrainPredictRoundTrip(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(60, 1, true, true))
	test := writeFile(t, dir, "test.csv", blobs(30, 2, true, false))
	inputs := writeFile(t, dir, "inputs.csv", blobs(30, 2, false, true))
	trainNoise := writeFile(t, dir, "train-noise.csv", "v1,v2\n"+noiseTable(60, 2, 0.05))
	testNoise := writeFile(t, dir, "test-noise.csv", noiseTable(30, 2, 0.05))
	cases := []struct {
		model string
		train []string // extra training flags
		pred  []string // extra prediction flags
	}{
		{"mgp", nil, nil},
		{"nimgp-fo", []string{"--input-noise", "0.05"}, []string{"--input-noise", "0.05"}},
		{"nimgp", []string{"--input-noise", trainNoise, "--test-samples", "4"}, []string{"--input-noise", testNoise}},
		{"nimgp-nn", []string{"--input-noise", "learn", "--hidden", "4,4", "--residual", "--test-samples", "4"}, nil},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			model := filepath.Join(dir, c.model+".json")
			args := append([]string{"train", "--train", train, "--model", c.model, "--out", model,
				"--epochs", "3", "--batch", "20", "--inducing", "6", "--seed", "2", "--quiet"}, c.train...)
			if code, stdout, stderr := gpc(t, args...); code != 0 {
				t.Fatalf("train: status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			probs := filepath.Join(dir, c.model+"-probs.csv")
			args = append([]string{"predict", "--model", model, "--input", inputs, "--out", probs}, c.pred...)
			code, stdout, stderr := gpc(t, args...)
			if code != 0 || stdout != "" {
				t.Fatalf("predict: status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			unlabeled := readProbs(t, probs, 30, 3)

			probs2 := filepath.Join(dir, c.model+"-probs2.csv")
			args = append([]string{"predict", "--model", model, "--input", test, "--labeled", "--out", probs2}, c.pred...)
			code, stdout, stderr = gpc(t, args...)
			if code != 0 {
				t.Fatalf("predict --labeled: status %d\nstderr: %s", code, stderr)
			}
			var s struct {
				Error *float64 `json:"error"`
				NLL   *float64 `json:"nll"`
				N     *int     `json:"n"`
			}
			dec := json.NewDecoder(strings.NewReader(stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil || strings.Count(stdout, "\n") != 1 {
				t.Fatalf("--labeled output %q is not one JSON line: %v", stdout, err)
			}
			if s.Error == nil || s.NLL == nil || s.N == nil {
				t.Fatalf("--labeled output %q misses a field", stdout)
			}
			if *s.N != 30 || *s.Error < 0 || *s.Error > 1 || !(*s.NLL > 0) {
				t.Errorf("--labeled output %q out of range", stdout)
			}
			labeled := readProbs(t, probs2, 30, 3)
			if c.model == "mgp" || c.model == "nimgp-fo" { // closed-form predictions: same inputs, same outputs
				for i := range labeled {
					for k := range labeled[i] {
						if labeled[i][k] != unlabeled[i][k] {
							t.Fatalf("row %d: %v with --labeled, %v without", i, labeled[i], unlabeled[i])
						}
					}
				}
			}
		})
	}
}

func TestPredictInputErrors(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(30, 1, true, false))
	model := filepath.Join(dir, "m.json")
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--out", model, "--epochs", "1", "--inducing", "4", "--quiet"); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	out := filepath.Join(dir, "p.csv")
	threeCols := writeFile(t, dir, "three.csv", "1,2,3\n4,5,6\n")
	oneCol := writeFile(t, dir, "one.csv", "1\n2\n")
	badLabel := writeFile(t, dir, "badlabel.csv", "1,2,0\n4,5,7\n")
	ragged := writeFile(t, dir, "ragged.csv", "1,2\n4,5\n6\n")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"labels without --labeled", []string{"--input", threeCols}, []string{threeCols, "has 3 columns", "expects exactly 2 feature columns", "--labeled"}},
		{"too few columns", []string{"--input", oneCol}, []string{oneCol, "has 1 columns", "expects exactly 2"}},
		{"too few with --labeled", []string{"--input", oneCol, "--labeled"}, []string{oneCol, "has 1 columns", "2 feature columns and a label"}},
		{"label out of range", []string{"--input", badLabel, "--labeled"}, []string{badLabel + ":2:3", "0..2"}},
		{"ragged file", []string{"--input", ragged}, []string{ragged + ":3:2", "expected 2, got 1"}},
		{"missing file", []string{"--input", filepath.Join(dir, "nope.csv")}, []string{"nope.csv"}},
		{"noise file shape", []string{"--input", writeFile(t, dir, "ok.csv", "1,2\n3,4\n"), "--input-noise", writeFile(t, dir, "n.csv", "0.1,0.1\n0.1\n")}, []string{"n.csv:2:2", "shape mismatch"}},
		{"not a model", []string{"--input", threeCols, "--model", threeCols}, []string{"three.csv"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"predict", "--model", model, "--out", out}, c.args...)
			code, _, stderr := gpc(t, args...)
			if code != 1 {
				t.Errorf("status %d, want 1; stderr %q", code, stderr)
			}
			if !strings.HasPrefix(stderr, "gpc predict: ") {
				t.Errorf("stderr %q does not start with \"gpc predict: \"", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed prediction wrote probabilities")
	}
}

func TestTrainInputErrors(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", "a,b,y\n0.1,0.2,0\n0.3,0.4,1\n0.5,0.6,1\n0.7,0.8,0\n")
	model := filepath.Join(dir, "m.json")
	cases := []struct {
		name string
		args []string
		want string
	}{
		// Row 3 of the noise file (its line 4, after the header) has a third column.
		{"noise file wrong width", []string{"--input-noise", writeFile(t, dir, "wide.csv", "a,b\n0.1,0.1\n0.1,0.1\n0.1,0.1,0.1\n0.1,0.1\n")}, "wide.csv:4:3"},
		{"noise file too short", []string{"--input-noise", writeFile(t, dir, "short.csv", "0.1,0.1\n0.1,0.1\n")}, "short.csv:3"},
		{"noise file bad cell", []string{"--input-noise", writeFile(t, dir, "cell.csv", "0.1,0.1\n0.1,x\n0.1,0.1\n0.1,0.1\n")}, `cell.csv:2:2: "x" is not a number`},
		{"noise file negative", []string{"--input-noise", writeFile(t, dir, "neg.csv", "0.1,0.1\n0.1,0.1\n-1,0.1\n0.1,0.1\n")}, "neg.csv:3:1"},
		{"zero noise for nimgp", []string{"--input-noise", writeFile(t, dir, "zero.csv", "0.1,0.1\n0.1,0.1\n0.1,0\n0.1,0.1\n")}, "zero.csv: data row 3, column 2"},
		{"bad training cell", []string{"--train", writeFile(t, dir, "bad.csv", "1,2,0\n1,?,1\n")}, `bad.csv:2:2: "?" is not a number`},
		{"one class", []string{"--train", writeFile(t, dir, "one.csv", "1,2,0\n1,3,0\n")}, "at least two classes"},
		{"missing training file", []string{"--train", filepath.Join(dir, "none.csv")}, "none.csv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"train", "--train", train, "--model", "nimgp", "--out", model, "--epochs", "1", "--quiet"}, c.args...)
			code, _, stderr := gpc(t, args...)
			if code != 1 || !strings.HasPrefix(stderr, "gpc train: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("status %d, stderr %q; want status 1 and %q", code, stderr, c.want)
			}
		})
	}
	if _, err := os.Stat(model); err == nil {
		t.Error("a failed training wrote a model")
	}
}

func TestTrainInterrupted(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(30, 1, true, false))
	model := filepath.Join(dir, "m.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if Ctrl-C had been pressed
	var o, e bytes.Buffer
	code := runContext(ctx, []string{"train", "--train", train, "--model", "mgp", "--out", model, "--inducing", "4", "--quiet"}, &o, &e)
	if code != 1 || !strings.Contains(e.String(), "training interrupted") {
		t.Errorf("status %d, stderr %q", code, e.String())
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "m.json*")); len(matches) > 0 {
		t.Errorf("interrupted training left %v", matches)
	}
}

func TestTrainProgress(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(30, 1, true, false))
	model := filepath.Join(dir, "m.json")
	code, stdout, stderr := gpc(t, "train", "--train", train, "--model", "nimgp-fo", "--out", model, "--epochs", "2", "--inducing", "4")
	if code != 0 || stdout != "" {
		t.Fatalf("status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, w := range []string{"training nimgp-fo", "input noise learned", "wrote " + model} {
		if !strings.Contains(stderr, w) {
			t.Errorf("progress %q does not contain %q", stderr, w)
		}
	}
}

// The demo's own numbers, not the paper's constants it prints: after a
// short training every model beats chance (error 2/3, NLL ln 3) on the toy
// problem, no model beats the Bayes-optimal predictive by more than noise,
// and the CSV matches the table.
func TestDemoSmall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := gpc(t, "demo", "--epochs", "8", "--models", "mgp,nimgp-fo", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	f, err := os.Open(filepath.Join(dir, demoTableFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 4 || recs[0][0] != "model" {
		t.Fatalf("demo CSV %v, %v", recs, err)
	}
	num := func(r []string, j int) float64 {
		v, err := strconv.ParseFloat(r[j], 64)
		if err != nil {
			t.Fatalf("row %v column %d: %v", r, j, err)
		}
		return v
	}
	bayes := recs[1]
	if bayes[0] != "bayes-optimal" {
		t.Fatalf("first row %v, want the Bayes-optimal predictive", bayes)
	}
	for _, r := range recs[2:] {
		e, nll, kl := num(r, 1), num(r, 2), num(r, 3)
		t.Logf("%s: error %.3f, NLL %.3f, KL %.3f (Bayes: %s, %s)", r[0], e, nll, kl, bayes[1], bayes[2])
		if !(e < 0.5) || !(nll < math.Log(3)) {
			t.Errorf("%s: error %v, NLL %v: no better than chance (2/3, %.3f)", r[0], e, nll, math.Log(3))
		}
		if !(kl >= 0) || !(nll > num(bayes, 2)-0.05) {
			t.Errorf("%s: KL %v to Bayes, NLL %v below the Bayes-optimal %v", r[0], kl, nll, num(bayes, 2))
		}
		if !strings.Contains(stdout, fmt.Sprintf("%.3f", nll)) {
			t.Errorf("table does not show %s's NLL %.3f:\n%s", r[0], nll, stdout)
		}
	}
}

func TestCheckGradAndBench(t *testing.T) {
	code, stdout, stderr := gpc(t, "check-grad", "--model", "mgp", "--order", "1")
	if code != 0 || !strings.Contains(stdout, "ok") {
		t.Errorf("check-grad: status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// An impossible tolerance must fail with status 1.
	code, _, stderr = gpc(t, "check-grad", "--model", "mgp", "--order", "1", "--tol", "1e-300")
	if code != 1 || !strings.Contains(stderr, "exceed --tol") {
		t.Errorf("check-grad --tol 1e-300: status %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = gpc(t, "bench", "--model", "mgp", "--iters", "1")
	if code != 0 || !strings.Contains(stdout, "ms/iter") {
		t.Errorf("bench: status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// A list times just those models, with ratios; the table's size and the
	// warm-up are the user's.
	code, stdout, stderr = gpc(t, "bench", "--model", "mgp,nimgp", "--iters", "1", "--n", "120", "--warmup", "3")
	if code != 0 || !strings.Contains(stdout, "N 120") || !strings.Contains(stdout, "after 3 untimed") ||
		!strings.Contains(stdout, "ratio to mgp") || !strings.Contains(stdout, "\nnimgp ") || strings.Contains(stdout, "\nnimgp-fo") {
		t.Errorf("bench of a list: status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// The synthetic problems' shape, most of the noisy-input paper's fits.
	code, stdout, stderr = gpc(t, "bench", "--model", "mgp", "--config", "synthetic", "--iters", "1")
	if code != 0 || !strings.Contains(stdout, "config synthetic: batch 200, M 100, C 3, d 2, se kernel, N 1000") {
		t.Errorf("bench --config synthetic: status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "mgp,ep"}, "ep is timed per fit"},
		{[]string{"--model", "mgp,nope"}, "nope"},
		{[]string{"--n", "10"}, "fewer rows than the batch"},
		{[]string{"--warmup", "0"}, "--warmup 0"},
	} {
		code, _, stderr = gpc(t, append([]string{"bench", "--iters", "1"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("bench %v: status %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// binaryBlobs is two separated clouds labelled 0/1.
func binaryBlobs(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	b.WriteString("x1,x2,label\n")
	for i := 0; i < n; i++ {
		c := i % 2
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", 3*float64(c)+rng.NormFloat64(), rng.NormFloat64(), c)
	}
	return b.String()
}

// The binary models train from a 0/1 CSV and predict with error and NLL;
// a likelihood a preset does not take is a usage error before any data is
// read, and a binary likelihood refuses three classes naming the file.
func TestBinaryModels(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", binaryBlobs(100, 1))
	test := writeFile(t, dir, "test.csv", binaryBlobs(100, 2))
	for _, c := range [][]string{{"svgp", "probit"}, {"svgp", "logit"}, {"ep", ""}, {"mfsp", ""}} {
		model := filepath.Join(dir, c[0]+c[1]+".json")
		args := []string{"train", "--train", train, "--model", c[0], "--out", model, "--epochs", "30", "--inducing", "8", "--quiet"}
		if c[1] != "" {
			args = append(args, "--likelihood", c[1])
		}
		if code, _, stderr := gpc(t, args...); code != 0 {
			t.Fatalf("%v: status %d, %s", c, code, stderr)
		}
		code, stdout, stderr := gpc(t, "predict", "--model", model, "--input", test, "--labeled", "--out", filepath.Join(dir, "p.csv"))
		if code != 0 {
			t.Fatalf("%v predict: status %d, %s", c, code, stderr)
		}
		var s predictScores
		if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.N != 100 || s.Error > 0.15 || s.NLL > 0.5 {
			t.Errorf("%v: scores %s (%v)", c, stdout, err)
		}
	}
	code, _, stderr := gpc(t, "train", "--train", filepath.Join(dir, "missing.csv"), "--model", "mgp", "--likelihood", "probit", "--out", filepath.Join(dir, "x.json"))
	if code != 2 || !strings.Contains(stderr, "model mgp takes the robustmax likelihood, not probit") {
		t.Errorf("mgp with probit: status %d, %q", code, stderr)
	}
	three := writeFile(t, dir, "three.csv", blobs(30, 3, true, true))
	code, _, stderr = gpc(t, "train", "--train", three, "--model", "svgp", "--out", filepath.Join(dir, "x.json"), "--quiet")
	if code == 0 || !strings.Contains(stderr, three) || !strings.Contains(stderr, "for 2 classes, but the data have 3") {
		t.Errorf("svgp on 3 classes: status %d, %q", code, stderr)
	}
}

// GPC_CPUPROFILE's file is a profile once the command ends; an empty
// setting writes nothing and an unwritable path is an error.
func TestStartProfile(t *testing.T) {
	stop, err := startProfile("")
	if err != nil || stop() != nil {
		t.Fatalf("empty path: %v", err)
	}
	path := filepath.Join(t.TempDir(), "cpu.prof")
	if stop, err = startProfile(path); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v, %v", path, fi, err)
	}
	if _, err := startProfile(filepath.Join(t.TempDir(), "missing", "cpu.prof")); err == nil {
		t.Fatal("a path in a missing directory gave no error")
	}
}
