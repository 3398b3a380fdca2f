package models

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
)

// Item 1 of the hardening issue: Fit honours cancellation while it builds
// its graphs, which for hundreds of latent functions takes minutes.
func TestFitInterruptedWhileBuilding(t *testing.T) {
	ds := syntheticSet(300, 2, 300, 1)
	for i := range ds.Y {
		ds.Y[i] = i // every class present
	}
	m, err := New(opts("mgp", 4, 1, 50, 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = m.Fit(ctx, ds, FitConfig{Warnings: io.Discard})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Fit returned %v, want the context's error", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Fit returned %v after the cancellation", d)
	}
}

// Item 3: a training set whose rows are all of one class is refused, with
// the empty classes named.
func TestFitRefusesEmptyClasses(t *testing.T) {
	ds := syntheticSet(20, 2, 2, 1)
	for i := range ds.Y {
		ds.Y[i] = 1
	}
	m, err := New(opts("mgp", 4, 1, 10, 1))
	if err != nil {
		t.Fatal(err)
	}
	err = m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard})
	want := "models: training data random: class 0 has no rows: the labels make 2 classes (0..1), but only 1 occurs; a classifier needs rows of at least two classes"
	if err == nil || err.Error() != want {
		t.Errorf("one class: %v\nwant %s", err, want)
	}
}

// Item 6: a kernel matrix that no jitter makes positive definite is
// reported in the user's terms, and still matches ErrNotPositiveDefinite.
func TestNotPositiveDefiniteMessage(t *testing.T) {
	ds := syntheticSet(8, 2, 2, 1)
	ds.X[0], ds.X[2] = 1e308, -1e308
	m, err := New(opts("mgp", 4, 1, 10, 1))
	if err != nil {
		t.Fatal(err)
	}
	err = m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard})
	want := "models: training: the kernel matrix is not positive definite even after raising the jitter to 0.1; check the input scale (standardise the inputs, look for extreme values) and the kernel length-scales"
	if err == nil || err.Error() != want || !errors.Is(err, graph.ErrNotPositiveDefinite) {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// scaledBlobs returns two separated clouds labelled 0/1, multiplied by scale.
func scaledBlobs(n int, scale float64, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 3))
	ds := &datasets.Dataset{Name: "blobs", N: n, D: 2, C: 2, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := range n {
		ds.Y[i] = i % 2
		ds.X[2*i] = scale * (3*float64(i%2) + rng.NormFloat64())
		ds.X[2*i+1] = scale * rng.NormFloat64()
	}
	return ds
}

// Item 2: with Options.Inputs.Standardize the model trains in standardised
// units — exactly as a model without it trained on datasets.Standardize's
// copy, given noise variances divided by the squared scale — keeps the
// transform through Save and Load and applies it in Predict; a file
// without a transform loads as a model without one.
func TestStandardizeSavedAndApplied(t *testing.T) {
	train, test := scaledBlobs(80, 1e6, 1), scaledBlobs(40, 1e6, 2)
	const v = 4e10 // a given noise variance in the inputs' units
	o := withNoise(opts("nimgp-fo", 8, 5, 40, 1), v, false)
	o.Inputs.Standardize, o.Inputs.NoStandardize = true, false
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Fit(context.Background(), train, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	pa, err := a.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := Score(pa, test.Y, test.C); s.Error > 0.3 { // chance is 0.5
		t.Errorf("standardised model: test error %.3f on inputs ×1e6", s.Error)
	}

	// The same model by hand: standardise, then fit without the option.
	noisy := train.Clone()
	noisy.Noise = make([]float64, train.N*train.D)
	for i := range noisy.Noise {
		noisy.Noise[i] = v
	}
	std, sc := datasets.Standardize(noisy, test)
	tnoise := make([]float64, test.N*test.D)
	for i := range tnoise {
		s := sc.Scale[i%test.D]
		tnoise[i] = v / (s * s)
	}
	b, err := New(withNoise(opts("nimgp-fo", 8, 5, 40, 1), v, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Fit(context.Background(), std[0], FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	pb, err := b.Predict(std[1].X, test.N, tnoise)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pa {
		if math.Abs(pa[i]-pb[i]) > 1e-9 {
			t.Fatalf("probability %d: %v with the option, %v by hand", i, pa[i], pb[i])
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"version":3`) || !strings.Contains(string(raw), `"standardize":{"mean":[`) {
		t.Errorf("saved file lacks version 3 and the transform: %.200s", raw)
	}
	l, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := l.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pa {
		if pa[i] != pl[i] {
			t.Fatalf("probability %d: %v before saving, %v after loading", i, pa[i], pl[i])
		}
	}
	if mean, scale := l.Standardization(); len(mean) != 2 || scale[0] != sc.Scale[0] || mean[1] != sc.Mean[1] {
		t.Errorf("loaded transform %v %v, want %v %v", mean, scale, sc.Mean, sc.Scale)
	}

	// Without the option: version 2, no transform, as older files.
	path2 := filepath.Join(dir, "b.json")
	if err := b.Save(path2); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(path2)
	if !strings.Contains(string(raw), `"version":2`) || strings.Contains(string(raw), "standardize") || strings.Contains(string(raw), "Standardize") {
		t.Errorf("a model without a transform is not saved as before: %.200s", raw)
	}
	l2, err := Load(path2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mean, _ := l2.Standardization(); mean != nil {
		t.Errorf("a file without a transform loaded with one: %v", mean)
	}
	// A transform that does not fit the model is refused.
	bad := strings.Replace(string(mustRead(t, path)), `"standardize":{"mean":[`, `"standardize":{"mean":[1,`, 1)
	if err := os.WriteFile(path2, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path2, nil); err == nil || !strings.Contains(err.Error(), "3 means and 2 scales for 2 features") {
		t.Errorf("a transform of the wrong length: %v", err)
	}
	// A file trained on standardised inputs that lost its transform.
	full := string(mustRead(t, path))
	i := strings.Index(full, `,"standardize":`)
	if i < 0 {
		t.Fatal("no transform in the file")
	}
	if err := os.WriteFile(path2, []byte(full[:i]+"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path2, nil); err == nil || !strings.Contains(err.Error(), "trained on standardised inputs but the file holds no standardisation") {
		t.Errorf("a lost transform: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Item 1: PredictContext stops between the draws of a sampling input model.
func TestPredictContextInterrupted(t *testing.T) {
	train := syntheticSet(30, 2, 3, 1)
	o := withNoise(opts("nimgp", 4, 1, 30, 1), 0.1, false)
	o.Inputs.TestSamples = 2
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	// The limit: minutes of sampling.
	if err := m.SetTestSamples(MaxTestSamples); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := m.PredictContext(ctx, train.X, train.N, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PredictContext returned %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("PredictContext returned after %v", d)
	}
}
