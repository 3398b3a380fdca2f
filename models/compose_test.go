package models

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// blobs is a binary problem: two Gaussian clouds 3 apart in 2-D.
func blobs(n int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 3))
	ds := &datasets.Dataset{Name: "blobs", N: n, D: 2, C: 2, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := range n {
		y := i % 2
		ds.Y[i] = y
		ds.X[2*i] = rng.NormFloat64() + 3*float64(y)
		ds.X[2*i+1] = rng.NormFloat64()
	}
	return ds
}

// A preset accepts only the likelihoods it is defined with, and says why.
func TestPresetRejectsForeignLikelihood(t *testing.T) {
	cases := []struct{ model, lik, msg string }{
		{"mgp", "probit", "takes the robustmax likelihood, not probit (a 2-class likelihood)"},
		{"nimgp-fo", "logit", "takes the robustmax likelihood, not logit"},
		{"svgp", "robustmax", "takes the probit or logit likelihood, not robustmax (a multi-class likelihood)"},
		{"svgp", "nonsense", "not nonsense (unknown)"},
		{"nope", "", `unknown model "nope"`},
	}
	for _, c := range cases {
		_, err := New(Options{Model: c.model, Likelihood: LikelihoodOptions{Name: c.lik}})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s with %q: got %v, want an error containing %q", c.model, c.lik, err, c.msg)
		}
	}
	if _, err := New(Options{Model: "mgp", Inputs: InputOptions{Model: "latent"}}); err == nil || !strings.Contains(err.Error(), "observed inputs, not latent") {
		t.Errorf("mgp with latent inputs: %v", err)
	}
	// Without a preset, any composition the registries know is valid.
	m, err := New(Options{Likelihood: LikelihoodOptions{Name: "logit"}, Inputs: InputOptions{Model: "first-order"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "custom" || m.InputNoise() == nil || m.UsesGivenNoise() == false {
		t.Errorf("custom model: name %q, noise %v", m.Name(), m.InputNoise())
	}
}

// SVGP learns two separated blobs with either link, a binary likelihood
// refuses three classes, and the likelihood survives Save/Load.
func TestSVGPBinary(t *testing.T) {
	train, test := blobs(200, 1), blobs(200, 2)
	preds := map[string][]float64{}
	for _, link := range []string{"probit", "logit"} {
		o := opts("svgp", 10, 30, 50, 1)
		o.Likelihood.Name = link
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
			t.Fatal(err)
		}
		p, err := m.Predict(test.X, test.N, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := Score(p, test.Y, 2)
		t.Logf("svgp %s: error %.3f, NLL %.3f", link, sc.Error, sc.NLL)
		if sc.Error > 0.1 || sc.NLL > 0.3 {
			t.Errorf("svgp %s: error %.3f, NLL %.3f on separated blobs", link, sc.Error, sc.NLL)
		}
		if m.post.Latent != 1 {
			t.Errorf("svgp has %d latent functions, want 1", m.post.Latent)
		}
		path := filepath.Join(t.TempDir(), "m.json")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		l, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l.Opts.Likelihood.Name != link {
			t.Errorf("loaded likelihood %q, want %q", l.Opts.Likelihood.Name, link)
		}
		q, err := l.Predict(test.X, test.N, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p, q) {
			t.Errorf("svgp %s: predictions changed through Save/Load", link)
		}
		preds[link] = p
	}
	if slices.Equal(preds["probit"], preds["logit"]) {
		t.Error("probit and logit give identical predictions")
	}
	m, _ := New(opts("svgp", 5, 1, 50, 1))
	if err := m.Fit(context.Background(), syntheticSet(30, 2, 3, 1), FitConfig{}); err == nil || !strings.Contains(err.Error(), "for 2 classes, but the data have 3") {
		t.Errorf("svgp on 3 classes: %v", err)
	}
}

// The "full" family holds Z = X fixed: M = N, Z unchanged by training and
// not counted as a trained parameter; with Z = X the sparse bound is the
// non-sparse variational Gaussian.
func TestFullPosteriorHoldsZAtX(t *testing.T) {
	train := blobs(40, 3)
	o := opts("svgp", 0, 5, 20, 1)
	o.Posterior.Family = "full"
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	if m.post.M != train.N || !slices.Equal(m.post.Z[0].Data, train.X) {
		t.Fatalf("full posterior: M = %d, Z moved or is not X", m.post.M)
	}
	pc := m.ParamCount()
	if pc["inducing"] != 0 || pc["q(u)"] != train.N+train.N*(train.N+1)/2 {
		t.Errorf("parameter groups %v", pc)
	}
}

// A version-1 model file (flat options with a model kind) loads and
// predicts as the model it was written from.
func TestLoadVersion1(t *testing.T) {
	train, test := syntheticSet(60, 2, 3, 1), syntheticSet(20, 2, 3, 2)
	o := withNoise(opts("nimgp-fo", 6, 2, 30, 4), 0.1, true)
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p2 := filepath.Join(dir, "v2.json")
	if err := m.Save(p2); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p2)
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	f["version"] = 1
	f["options"] = map[string]any{"Kind": "nimgp-fo", "Inducing": 6, "Kernel": "se", "Degree": 9, "Epsilon": 1e-3,
		"Quadrature": 20, "Jitter": 1e-3, "LearnNoise": true, "NoiseInit": 0.1, "PriorVar": 1000, "QXInitVar": 1e-5,
		"Hidden": []int{50}, "TestSamples": 500, "Epochs": 2, "Batch": 30, "LR": 0.01, "Seed": 4}
	b, _ = json.Marshal(f)
	p1 := filepath.Join(dir, "v1.json")
	os.WriteFile(p1, b, 0o644)
	l, err := Load(p1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Predict(test.X, test.N, nil)
	got, err := l.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("v1 file predicts %v, the model %v", got[i], want[i])
		}
	}
	f["options"].(map[string]any)["Kind"] = "quantum"
	b, _ = json.Marshal(f)
	os.WriteFile(p1, b, 0o644)
	if _, err := Load(p1, nil); err == nil || !strings.Contains(err.Error(), `version 1): unknown model kind "quantum"`) {
		t.Errorf("v1 file with an unknown kind: %v", err)
	}
}

// Save leaves nothing behind when it cannot write, and never a partial file.
func TestSaveFailsCleanly(t *testing.T) {
	m, _ := New(opts("mgp", 4, 1, 20, 1))
	if err := m.Fit(context.Background(), syntheticSet(20, 2, 3, 1), FitConfig{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Save(filepath.Join(dir, "missing", "m.json")); err == nil {
		t.Fatal("saved into a missing directory")
	}
	if err := m.Save(dir); err == nil {
		t.Fatal("saved over a directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left %v behind", entries)
	}
}

// The freeze schedule holds the hyper-parameters and Z at their initial
// values for its epochs and frees them afterwards, under each optimiser;
// every optimiser learns the blobs.
func TestOptimizersAndFreeze(t *testing.T) {
	train, test := blobs(80, 11), blobs(200, 12)
	for _, opt := range []string{"adam", "adadelta", "lbfgs"} {
		for _, freeze := range []int{0, 3, 100} {
			o := opts("svgp", 6, 40, 40, 1)
			o.Train.Optimizer, o.Train.FreezeHyper, o.Train.FreezeZ, o.Train.LR = opt, freeze, freeze, 0.05
			if opt == "adadelta" {
				o.Train.LR = 1
			}
			m, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.initialize(train, io.Discard); err != nil {
				t.Fatal(err)
			}
			kern0 := slices.Clone(m.kernels[0].Params()[0].Data)
			z0 := slices.Clone(m.post.Z[0].Data)
			if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
				t.Fatalf("%s freeze %d: %v", opt, freeze, err)
			}
			kernSame := slices.Equal(kern0, m.kernels[0].Params()[0].Data)
			zSame := slices.Equal(z0, m.post.Z[0].Data)
			if frozenAll := freeze >= 40; kernSame != frozenAll || zSame != frozenAll {
				t.Errorf("%s freeze %d of 40: kernel unchanged %v, Z unchanged %v", opt, freeze, kernSame, zSame)
			}
			p, err := m.Predict(test.X, test.N, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The Bayes error of these blobs is Φ(−1.5) ≈ 0.067.
			if sc := Score(p, test.Y, 2); sc.Error > 0.13 {
				t.Errorf("%s freeze %d: test error %.3f", opt, freeze, sc.Error)
			}
		}
	}
}

// The SVGP presets start Z at k-means centres (the paper's choice); the
// noisy-input presets keep rows drawn at random, as their authors' code.
func TestZInit(t *testing.T) {
	train := blobs(200, 31)
	m, err := New(opts("svgp", 2, 1, 50, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.initialize(train, io.Discard); err != nil {
		t.Fatal(err)
	}
	z := m.post.Z[0].Data
	lo, hi := min(z[0], z[2]), max(z[0], z[2])
	if m.Opts.Posterior.ZInit != "kmeans" || math.Abs(lo) > 0.3 || math.Abs(hi-3) > 0.3 {
		t.Errorf("svgp Z %v (init %s): want the blob centres near x = 0 and 3", z, m.Opts.Posterior.ZInit)
	}
	if g, _ := New(opts("mgp", 2, 1, 50, 1)); g.Opts.Posterior.ZInit != "random" {
		t.Errorf("mgp initialises Z by %s", g.Opts.Posterior.ZInit)
	}
}
