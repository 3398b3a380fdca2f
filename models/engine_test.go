package models

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// countingEngine fits by delegating to svi and counts its calls: an engine
// added from outside the package's built-ins.
type countingEngine struct{ fits *int }

func (countingEngine) Name() string { return "test-counting" }
func (countingEngine) Supports(m *Model) error {
	if m.InputNoise() != nil {
		return errors.New("test-counting: no input noise")
	}
	return nil
}
func (e countingEngine) Fit(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	*e.fits++
	return sviEngine{}.Fit(ctx, m, train, cfg)
}

func TestRegisterEngine(t *testing.T) {
	fits := 0
	if err := RegisterEngine(countingEngine{&fits}); err != nil {
		t.Fatal(err)
	}
	if err := RegisterEngine(countingEngine{&fits}); err == nil {
		t.Error("a second engine of the same name was accepted")
	}
	if err := RegisterEngine(nil); err == nil {
		t.Error("a nil engine was accepted")
	}
	m, err := New(Options{Model: "svgp", Inference: "test-counting", Train: TrainOptions{Epochs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), syntheticSet(40, 2, 2, 3), FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if fits != 1 || m.Engine().Name() != "test-counting" {
		t.Errorf("fits %d by engine %s; want 1 by test-counting", fits, m.Engine().Name())
	}
	// The capabilities it lacks are named.
	if m.Checkpointable() || !strings.Contains(m.CheckpointError().Error(), "Checkpointer") {
		t.Errorf("checkpoint: %v; want a refusal naming models.Checkpointer", m.CheckpointError())
	}
	if err := m.CanStream(); err == nil || !strings.Contains(err.Error(), "Streamer") {
		t.Errorf("stream: %v; want a refusal naming models.Streamer", err)
	}
	if _, err := CheckGradients(Options{Model: "svgp", Inference: "test-counting"}, 1, 1); err == nil || !strings.Contains(err.Error(), "GradientChecker") {
		t.Errorf("gradient check: %v; want a refusal naming models.GradientChecker", err)
	}
	// An engine refuses a composition it cannot fit, at New.
	if _, err := New(Options{Model: "nimgp", Inference: "test-counting"}); err == nil || !strings.Contains(err.Error(), "no input noise") {
		t.Errorf("nimgp under test-counting: %v; want the engine's refusal", err)
	}
	if _, err := New(Options{Model: "mgp", Inference: "ep"}); err == nil || !strings.Contains(err.Error(), "sites touch one latent function") {
		t.Errorf("mgp under ep: %v; want a refusal: one latent function", err)
	}
	if _, err := New(Options{Model: "svgp", Inference: "nope"}); err == nil || !strings.Contains(err.Error(), "svi") {
		t.Errorf("unknown engine: %v; want the registered ones listed", err)
	}
}

// Another engine fits a preset's composition when it supports it: svgp's
// parts under EP are EP on the FITC prior.
func TestPresetUnderAnotherEngine(t *testing.T) {
	m, err := New(Options{Model: "svgp", Inference: "ep", Posterior: PosteriorOptions{Inducing: 8}, Train: TrainOptions{Epochs: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.IsFullBatch() {
		t.Error("ep is not reported full-batch")
	}
	ds := syntheticSet(40, 2, 2, 5)
	if err := m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Predict(ds.X, ds.N, nil); err != nil {
		t.Fatal(err)
	}
}

// stateEngine leaves a state that Save stores and Load decodes, and
// predicts by its own rule.
type stateEngine struct{ sviEngine }

type testState struct{ Fits int }

func (stateEngine) Name() string { return "test-state" }
func (e stateEngine) Fit(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	m.SetEngineState(testState{Fits: 7})
	return e.sviEngine.Fit(ctx, m, train, cfg)
}
func (stateEngine) DecodeState(_ *Model, raw json.RawMessage) (any, error) {
	var s testState
	err := json.Unmarshal(raw, &s)
	return s, err
}
func (stateEngine) Predict(_ context.Context, m *Model, _ []float64, n int, _ []float64) ([]float64, error) {
	out := make([]float64, n*m.C)
	for i := range out {
		out[i] = 1 / float64(m.C)
	}
	return out, nil
}

func TestEngineStateAndPredictor(t *testing.T) {
	if err := RegisterEngine(stateEngine{}); err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Model: "svgp", Inference: "test-state", Train: TrainOptions{Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ds := syntheticSet(20, 2, 2, 3)
	if err := m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := back.EngineState().(testState); !ok || st.Fits != 7 {
		t.Errorf("engine state after Load: %#v; want testState{7}", back.EngineState())
	}
	p, err := back.Predict(ds.X[:2*ds.D], 2, nil)
	if err != nil || p[0] != 0.5 || p[3] != 0.5 {
		t.Errorf("Predict: %v, %v; want the engine's own 0.5 everywhere", p, err)
	}
}
