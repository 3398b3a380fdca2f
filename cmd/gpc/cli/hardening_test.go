package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests of this file follow the hardening issue's items: each drives
// the command line as a careless or hostile user would and checks the exact
// message the user sees.

// scaledBlobs is binaryBlobs multiplied by scale, written with full precision.
func scaledBlobs(n int, seed uint64, scale float64) string {
	rng := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	b.WriteString("x1,x2,label\n")
	for i := 0; i < n; i++ {
		c := i % 2
		fmt.Fprintf(&b, "%g,%g,%d\n", scale*(3*float64(c)+rng.NormFloat64()), scale*rng.NormFloat64(), c)
	}
	return b.String()
}

// runWithin runs the command line with ctx and fails the test if it has not
// returned within limit (a hang): the goroutine is then abandoned.
func runWithin(t *testing.T, ctx context.Context, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code   int
		o, e   string
		passed time.Duration
	}
	done := make(chan result, 1)
	t0 := time.Now()
	go func() {
		var o, e bytes.Buffer
		c := runContext(ctx, args, &o, &e)
		done <- result{c, o.String(), e.String(), time.Since(t0)}
	}()
	select {
	case r := <-done:
		return r.code, r.o, r.e
	case <-time.After(limit):
		t.Fatalf("gpc %s did not return within %v", strings.Join(args, " "), limit)
	}
	return 0, "", ""
}

// Item 1: a label of 1 000 000 is not a million classes; it is refused at
// once, naming the classes without rows, before any model is built.
func TestHardeningHugeLabelRefused(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "big.csv", "1,2,0\n3,4,1\n5,6,1000000\n")
	model := filepath.Join(dir, "m.json")
	code, _, stderr := runWithin(t, context.Background(), 20*time.Second,
		"train", "--train", train, "--model", "mgp", "--out", model, "--quiet")
	want := "gpc train: " + train + ": classes 2–999999 have no rows: the labels make 1000001 classes (0..1000000), but only 0, 1 and 1000000 occur; number the classes 0..C−1 with every class present\n"
	if code != 1 || stderr != want {
		t.Errorf("status %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	if _, err := os.Stat(model); err == nil {
		t.Error("a model was written")
	}
}

// Item 1: prediction honours cancellation (the first Ctrl-C or SIGTERM)
// while it samples, however many samples were asked for.
func TestHardeningPredictInterrupted(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(30, 1, true, false))
	model := filepath.Join(dir, "m.json")
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "nimgp-nn", "--hidden", "3", "--out", model, "--epochs", "1", "--inducing", "4", "--quiet", "--test-samples", "2"); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	out := filepath.Join(dir, "p.csv")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	code, _, stderr := runWithin(t, ctx, 20*time.Second,
		"predict", "--model", model, "--input", train, "--labeled", "--out", out, "--test-samples", "100000") // the limit: minutes of sampling
	want := "gpc predict: interrupted; nothing written to " + out + "\n"
	if code != 1 || stderr != want {
		t.Errorf("status %d, stderr %q, want %q", code, stderr, want)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*p.csv*")); len(matches) > 0 {
		t.Errorf("an interrupted prediction left %v", matches)
	}
}

// predictError trains with args and returns the training stderr and the
// error rate on the training file.
func trainAndScore(t *testing.T, dir, name, body string, extra ...string) (trainStderr string, s predictScores) {
	t.Helper()
	train := writeFile(t, dir, name+".csv", body)
	model := filepath.Join(dir, name+".json")
	args := append([]string{"train", "--train", train, "--model", "mgp", "--out", model, "--epochs", "20", "--inducing", "10", "--seed", "1", "--quiet"}, extra...)
	code, _, stderr := gpc(t, args...)
	if code != 0 {
		t.Fatalf("train %s: status %d, %s", name, code, stderr)
	}
	code, stdout, perr := gpc(t, "predict", "--model", model, "--input", train, "--labeled", "--out", filepath.Join(dir, name+"-p.csv"))
	if code != 0 {
		t.Fatalf("predict %s: status %d, %s", name, code, perr)
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("predict %s: %q: %v", name, stdout, err)
	}
	// Twenty epochs are short of convergence, which train reports; the
	// tests here are about the other warnings.
	var kept []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.Contains(l, "not converged") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, ""), s
}

// Item 2: the inputs are standardised by default, so a problem scaled by
// 1e6 or 1e-6 trains as well as the unscaled one; with --no-standardize the
// scaled problem stays at chance and the user is told so.
func TestHardeningInputScale(t *testing.T) {
	dir := t.TempDir()
	_, base := trainAndScore(t, dir, "unit", scaledBlobs(200, 1, 1))
	for _, scale := range []float64{1e6, 1e-6} {
		name := fmt.Sprintf("s%g", scale)
		stderr, s := trainAndScore(t, dir, name, scaledBlobs(200, 1, scale))
		if s.Error > base.Error+0.03 || s.Error > 0.15 {
			t.Errorf("scale %g: training error %.3f (unscaled %.3f)", scale, s.Error, base.Error)
		}
		if stderr != "" {
			t.Errorf("scale %g: unexpected stderr %q", scale, stderr)
		}
	}
	// Without standardisation the 1e−6 copy stays a constant classifier
	// (error 0.5, NLL ln 2), which the user is told.
	stderr, s := trainAndScore(t, dir, "raw", scaledBlobs(200, 1, 1e-6), "--no-standardize")
	want := fmt.Sprintf("gpc train: warning: the training error %.3f is no better than always predicting the most frequent class (0.500): the model has learned nothing from the inputs. Likely causes: inputs on an extreme scale (you gave --no-standardize), too few --epochs or an unsuitable --lr, or labels unrelated to the inputs\n", s.Error)
	if stderr != want {
		t.Errorf("--no-standardize at scale 1e-6: error %.3f, stderr\n%q\nwant\n%q", s.Error, stderr, want)
	}
}

// Item 3: labels that leave a class without rows are refused with the
// classes named.
func TestHardeningEmptyClasses(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, body, want string }{
		{"gap.csv", "1,2,0\n3,4,2\n5,6,0\n7,8,2\n", "class 1 has no rows: the labels make 3 classes (0..2), but only 0 and 2 occur; number the classes 0..C−1 with every class present"},
		{"ones.csv", "1,2,1\n3,4,1\n", "class 0 has no rows: the labels make 2 classes (0..1), but only 1 occurs; a classifier needs rows of at least two classes"},
	}
	for _, c := range cases {
		train := writeFile(t, dir, c.name, c.body)
		code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--out", filepath.Join(dir, "m.json"), "--quiet")
		if want := "gpc train: " + train + ": " + c.want + "\n"; code != 1 || stderr != want {
			t.Errorf("%s: status %d, stderr\n%q\nwant\n%q", c.name, code, stderr, want)
		}
	}
}

// Item 4: outputs are checked before any work, written to a temporary file
// beside the target and renamed; a failure keeps an existing file intact,
// leaves nothing behind and names the input's file:line.
func TestHardeningOutputs(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", binaryBlobs(40, 1))
	model := filepath.Join(dir, "m.json")
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--out", model, "--epochs", "2", "--inducing", "4", "--quiet", "--no-standardize"); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	// A NaN probability: the existing output survives, the message points at
	// the input line.
	out := writeFile(t, dir, "keep.csv", "precious\n")
	huge := writeFile(t, dir, "huge.csv", "x1,x2\n0,0\n1e308,1e308\n")
	code, _, stderr := gpc(t, "predict", "--model", model, "--input", huge, "--out", out)
	want := "gpc predict: " + huge + ":3: the predicted class probabilities are not finite (p0 = NaN): the row's inputs are probably far outside the scale of the training data, or the model's parameters are extreme; nothing written to " + out + "\n"
	if code != 1 || stderr != want {
		t.Errorf("NaN: status %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	if b, _ := os.ReadFile(out); string(b) != "precious\n" {
		t.Errorf("the existing output became %q", b)
	}
	// --out naming a directory, or in a missing directory: refused before
	// training, nothing left behind.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope", "m.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--train", train, "--model", "mgp", "--out", sub}, "gpc train: cannot write " + sub + ": it is a directory (give a file name such as " + filepath.Join(sub, "model.json") + ")\n"},
		{[]string{"train", "--train", train, "--model", "mgp", "--out", missing}, "gpc train: cannot write " + missing + ": directory " + filepath.Dir(missing) + " does not exist\n"},
		{[]string{"predict", "--model", model, "--input", train, "--labeled", "--out", sub}, "gpc predict: cannot write " + sub + ": it is a directory (give a file name such as " + filepath.Join(sub, "probs.csv") + ")\n"},
		{[]string{"predict", "--model", model, "--input", train, "--labeled", "--out", missing}, "gpc predict: cannot write " + missing + ": directory " + filepath.Dir(missing) + " does not exist\n"},
		// --out naming an input would replace it.
		{[]string{"predict", "--model", model, "--input", train, "--labeled", "--out", train}, "gpc predict: cannot write " + train + ": it is the input file " + train + ", which would be lost; choose another name\n"},
		{[]string{"train", "--train", train, "--model", "mgp", "--out", train}, "gpc train: cannot write " + train + ": it is the input file " + train + ", which would be lost; choose another name\n"},
	} {
		code, stdout, stderr := gpc(t, c.args...)
		if code != 1 || stderr != c.want || stdout != "" {
			t.Errorf("%v: status %d, stdout %q, stderr\n%q\nwant\n%q", c.args, code, stdout, stderr, c.want)
		}
	}
	for _, d := range []string{dir, sub} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), "tmp") {
				t.Errorf("%s: left %s behind", d, e.Name())
			}
		}
	}
}

// Item 6: numerical failures name the cause in the user's terms, not
// Gorgonia's.
func TestHardeningNumericalMessages(t *testing.T) {
	dir := t.TempDir()
	huge := writeFile(t, dir, "huge.csv", "1,2,0\n3,4,1\n1e308,6,1\n-1e308,3,0\n")
	code, _, stderr := gpc(t, "train", "--train", huge, "--model", "mgp", "--out", filepath.Join(dir, "h.json"), "--inducing", "4", "--quiet", "--no-standardize")
	// The jitter ladder's warnings may precede the error; the error is the
	// last line and speaks of the kernel matrix, not of Gorgonia's machine.
	want := "gpc train: training on " + huge + ": the kernel matrix is not positive definite even after raising the jitter to 0.1; check the input scale (standardise the inputs, look for extreme values) and the kernel length-scales\n"
	if code != 1 || !strings.HasSuffix(stderr, want) || strings.Contains(stderr, "Failed to") || strings.Contains(stderr, "Cholesky") {
		t.Errorf("1e308 cell: status %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	// The same file trains when standardised (the default).
	if code, _, stderr := gpc(t, "train", "--train", huge, "--model", "mgp", "--out", filepath.Join(dir, "h.json"), "--inducing", "4", "--epochs", "2", "--quiet"); code != 0 {
		t.Errorf("standardised: status %d, %s", code, stderr)
	}

	train := writeFile(t, dir, "train.csv", binaryBlobs(40, 1))
	model := filepath.Join(dir, "m.json")
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--out", model, "--epochs", "2", "--inducing", "4", "--quiet"); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	// A model file edited by hand: absurd inducing inputs.
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, p := range raw["params"].([]any) {
		p := p.(map[string]any)
		if p["name"] == "q/Z0" {
			for i := range p["data"].([]any) {
				p["data"].([]any)[i] = 1e300
			}
		}
	}
	b, _ = json.Marshal(raw)
	edited := writeFile(t, dir, "edited.json", string(b))
	code, _, stderr = gpc(t, "predict", "--model", edited, "--input", train, "--labeled", "--out", filepath.Join(dir, "p.csv"))
	want = "gpc predict: predicting with " + edited + ": the kernel matrix is not positive definite even with jitter 0.001; check the input scale (standardise the inputs, look for extreme values) and the kernel length-scales\n"
	if code != 1 || stderr != want {
		t.Errorf("edited model: status %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
}
