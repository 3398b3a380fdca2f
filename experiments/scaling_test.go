package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A spec of the noisy-input paper's MNIST family with training.scaling:
// the field is refused for a family that does not read it and for an
// unknown value; a method's override reaches only its own runs' budget
// (and so key), the other methods' keys stay as without the field; and
// the raw runs train on the pixels as the data set gives them, the others
// on standardised pixels.
func TestTrainingScalingRaw(t *testing.T) {
	spec := func(family, dataset, scaling string) string {
		return `name: s
title: t
source: x
family: ` + family + `
seed: 1
datasets: [` + dataset + `]
protocol: {splits: 1, max_train: 40, max_test: 20, test_fraction: 0.3}
training: {epochs: 1, batch: 10, lr: 0.01, inducing: 4, kernel: poly, degree: 2}
settings:
  - {name: "noise=0.0", noise: 0.0}
methods:
  - {name: MGP, model: mgp}
  - {name: MGP raw, model: mgp, training: {scaling: ` + scaling + `}}
tables:
  - {id: T, title: t, metric: nll}
`
	}
	if _, err := ParseSpec("x.yaml", []byte(spec("uci", "wine", "raw"))); err == nil || !strings.Contains(err.Error(), "scaling does not apply to the uci family") {
		t.Errorf("uci family with training.scaling: got %v, want a refusal naming training.scaling", err)
	}
	if _, err := ParseSpec("x.yaml", []byte(spec("mnist", "mnist", "log"))); err == nil || !strings.Contains(err.Error(), `scaling "log": want raw`) || !strings.Contains(err.Error(), "x.yaml:") {
		t.Errorf("unknown scaling: got %v", err)
	}
	s, err := ParseSpec("x.yaml", []byte(spec("mnist", "mnist", "raw")))
	if err != nil {
		t.Fatal(err)
	}
	runs := Expand(s)
	if len(runs) != 2 || runs[0].Budget.Scaling != "" || runs[1].Budget.Scaling != scalingRaw {
		t.Fatalf("budgets' scaling: %+v", runs)
	}
	plain, err := ParseSpec("x.yaml", []byte(strings.Replace(spec("mnist", "mnist", "raw"), "  - {name: MGP raw, model: mgp, training: {scaling: raw}}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if k := Expand(plain)[0].Key; k != runs[0].Key {
		t.Errorf("the MGP run's key moved with another method's scaling: %s against %s", runs[0].Key, k)
	}
	if runs[0].Key == runs[1].Key {
		t.Error("raw and standardised runs share a key")
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "mnist"), 0o755); err != nil {
		t.Fatal(err)
	}
	px := func(n int) []byte {
		b := make([]byte, n*784)
		for i := range b {
			b[i] = byte((i * 37) % 256)
		}
		return b
	}
	lab := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 10)
		}
		return b
	}
	writeIDX(t, filepath.Join(dir, "mnist", "train-images-idx3-ubyte"), []int{60, 28, 28}, px(60))
	writeIDX(t, filepath.Join(dir, "mnist", "train-labels-idx1-ubyte"), []int{60}, lab(60))
	writeIDX(t, filepath.Join(dir, "mnist", "t10k-images-idx3-ubyte"), []int{30, 28, 28}, px(30))
	writeIDX(t, filepath.Join(dir, "mnist", "t10k-labels-idx1-ubyte"), []int{30}, lab(30))
	e := newEnv(s, dir)
	span := func(r Run) (lo, hi float64) {
		sp, err := e.prepare(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, v := range sp.train.X {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		return lo, hi
	}
	if lo, hi := span(runs[1]); lo < 0 || hi > 1 {
		t.Errorf("raw run's pixels span [%v, %v], want within [0, 1]", lo, hi)
	}
	if lo, _ := span(runs[0]); lo >= 0 {
		t.Errorf("standardised run's pixels have minimum %v, want below 0", lo)
	}
}
