package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpc-dev/gpc/models"
)

// Class 3 of the second hardening round: gpc bench stops between
// iterations when the context ends (it ran every iteration to the end).
func TestBenchStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	t0 := time.Now()
	_, err := BenchConfigured(ctx, []string{"mgp"}, BenchConfigs["waveform"], 1_000_000)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("BenchConfigured returned %v, want the context's error", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("BenchConfigured returned after %v", d)
	}
}

// Class 4: sizes given on the command line are bounded before anything of
// that size is allocated, with the flag and the limit named. gpc bench
// --n 1e9 allocated the rows and died in the Go runtime; --test-samples
// 1e12 ran for hours.
func TestSizeFlagsBounded(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(train, []byte(scaledBlobs(20, 3, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m.json")
	if code, _, e := runWithin(t, context.Background(), time.Minute, "train", "--train", train, "--model", "svgp", "--inducing", "3", "--epochs", "1", "--out", model, "--quiet"); code != 0 {
		t.Fatalf("train: %s", e)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--model", "mgp", "--n", "1000000000"}, "--n 1000000000 exceeds the limit of 10000000 rows"},
		{[]string{"predict", "--model", model, "--input", train, "--out", filepath.Join(dir, "p.csv"), "--labeled", "--test-samples", "1000000000000"}, "--test-samples 1000000000000: want 0 (as trained) to 100000 samples"},
		{[]string{"train", "--train", train, "--model", "nimgp", "--out", filepath.Join(dir, "n.json"), "--test-samples", "1000000000000"}, "--test-samples 1000000000000: want 1 to 100000 samples"},
	}
	for _, c := range cases {
		code, _, e := runWithin(t, context.Background(), time.Minute, c.args...)
		if code == 0 || !strings.Contains(e, c.want) {
			t.Errorf("gpc %s: exit %d, stderr %q\nwant %q", strings.Join(c.args, " "), code, e, c.want)
		}
	}
	if have, ok := models.MachineMemory(); ok && have < 1<<40 {
		// MNIST's 784 features at the row limit need far more than 1 TiB.
		code, _, e := runWithin(t, context.Background(), time.Minute, "bench", "--model", "mgp", "--config", "mnist", "--n", "10000000")
		if code == 0 || !strings.Contains(e, "--n 10000000: 10000000 rows of 784 features need about") {
			t.Errorf("bench beyond memory: exit %d, stderr %q", code, e)
		}
	}
}

// Class 7: a flag the model would ignore is refused, naming the flag and
// the model (they were accepted and dropped silently).
func TestIgnoredFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(train, []byte(scaledBlobs(20, 3, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m.json")
	if code, _, e := runWithin(t, context.Background(), time.Minute, "train", "--train", train, "--model", "mgp", "--inducing", "3", "--epochs", "1", "--out", model, "--quiet"); code != 0 {
		t.Fatalf("train: %s", e)
	}
	out := filepath.Join(dir, "x.json")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train", "--train", train, "--model", "mgp", "--out", out, "--input-noise", "0.1"}, "gpc train: --input-noise: model mgp has no input-noise part"},
		{[]string{"train", "--train", train, "--model", "svgp", "--out", out, "--input-noise", "learn"}, "gpc train: --input-noise: model svgp has no input-noise part"},
		{[]string{"train", "--train", train, "--model", "mgp", "--out", out, "--hidden", "5"}, "gpc train: --hidden: model mgp has no amortisation networks"},
		{[]string{"train", "--train", train, "--model", "nimgp", "--out", out, "--residual"}, "gpc train: --residual: model nimgp has no amortisation networks"},
		{[]string{"train", "--train", train, "--model", "nimgp-fo", "--out", out, "--test-samples", "5"}, "gpc train: --test-samples: model nimgp-fo does not sample its test inputs"},
		{[]string{"train", "--train", train, "--model", "mgp", "--out", out, "--degree", "3"}, "gpc train: --degree: the se kernel has no degree"},
		{[]string{"train", "--train", train, "--model", "mgp", "--out", out, "--delta", "0.01"}, "gpc train: --delta: the robustmax likelihood has no δ of its own and would ignore it (only gpc1, gpc2, gpc3 read it)"},
		{[]string{"train", "--train", train, "--likelihood", "robustmax-learned", "--out", out, "--fix-delta"}, "gpc train: --fix-delta: the robustmax-learned likelihood has no δ of its own"},
		{[]string{"predict", "--model", model, "--input", train, "--labeled", "--out", filepath.Join(dir, "p.csv"), "--input-noise", "0.1"}, "gpc predict: --input-noise: model mgp has no input-noise part"},
		{[]string{"predict", "--model", model, "--input", train, "--labeled", "--out", filepath.Join(dir, "p.csv"), "--test-samples", "5"}, "gpc predict: --test-samples: model mgp does not sample its test inputs"},
	}
	for _, c := range cases {
		code, _, e := runWithin(t, context.Background(), time.Minute, c.args...)
		if code != 2 || !strings.HasPrefix(e, c.want) {
			t.Errorf("gpc %s: exit %d, stderr %q\nwant exit 2 and %q", strings.Join(c.args[1:], " "), code, e, c.want)
		}
	}
	for _, p := range []string{out, filepath.Join(dir, "p.csv")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// A likelihood that reads δ takes both flags.
	if code, _, e := runWithin(t, context.Background(), time.Minute, "train", "--train", train, "--model", "gpc1", "--inducing", "3", "--epochs", "1", "--delta", "0.01", "--fix-delta", "--out", out, "--quiet"); code != 0 {
		t.Errorf("gpc train --model gpc1 --delta 0.01 --fix-delta: exit %d, stderr %q", code, e)
	}
}

// Class 7: a fit that learned nothing but two huge rows, which
// standardisation leaves alone while squashing the rest to one point, is
// warned about for EP and the sparse models as for the others. Their
// training error beat chance by those two rows, so no warning was given.
func TestChanceWarningForSquashedRows(t *testing.T) {
	dir := t.TempDir()
	data := scaledBlobs(60, 2, 1) + "1e200,1e200,0\n-1e200,-1e200,1\n"
	train := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(train, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"ep", "svgp"} {
		code, _, e := runWithin(t, context.Background(), 2*time.Minute, "train", "--train", train, "--model", model, "--inducing", "5", "--epochs", "30", "--out", filepath.Join(dir, model+".json"), "--quiet")
		if code != 0 || !strings.Contains(e, "gpc train: warning: the training NLL") || !strings.Contains(e, "the model has learned nothing from most inputs") {
			t.Errorf("%s: exit %d, stderr %q", model, code, e)
		}
	}
}
