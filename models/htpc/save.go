package htpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/gpc-dev/gpc/datasets"
)

// formatName and formatVersion identify the JSON written by Save.
const (
	formatName    = "gpc-htpc"
	formatVersion = 1
)

// savedModel is the file format. It stores the training set, the
// hyper-parameters and the whitened mode rather than the nl×nl predictive
// matrix: that would be megabytes of JSON, and Load recomputes it exactly
// from the mode (Newton confirms the stored mode in zero iterations).
type savedModel struct {
	Format         string    `json:"format"`
	Version        int       `json:"version"`
	N              int       `json:"n"`
	D              int       `json:"d"`
	Classes        int       `json:"classes"`
	X              []float64 `json:"x"`
	Y              []int     `json:"y"`
	Hyper          Hyper     `json:"hyper"`
	Mode           []float64 `json:"whitened_mode"`
	LogEvidence    float64   `json:"log_evidence"`
	Jitter         float64   `json:"jitter"`
	NewtonTol      float64   `json:"newton_tol"`
	MaxNewton      int       `json:"max_newton"`
	PredictSamples int       `json:"predict_samples"`
	Seed           uint64    `json:"seed"`
	LearnAmplitude bool      `json:"learn_amplitude"`
	Status         string    `json:"status"`
	Evaluations    int       `json:"evaluations"`
}

// Save writes the model as JSON to path atomically: a temporary file in the
// same directory renamed over the target, so a crash never leaves a
// half-written model.
func (mdl *Model) Save(path string) error {
	if mdl == nil || mdl.r == nil {
		return errors.New("htpc: cannot save an untrained model")
	}
	s := savedModel{
		Format: formatName, Version: formatVersion,
		N: mdl.N, D: mdl.D, Classes: mdl.Classes,
		X: mdl.x, Y: mdl.y, Hyper: mdl.Hyper, Mode: mdl.v, LogEvidence: mdl.LogEvidence,
		Jitter: mdl.cfg.Jitter, NewtonTol: mdl.cfg.NewtonTol, MaxNewton: mdl.cfg.MaxNewton,
		PredictSamples: mdl.cfg.PredictSamples, Seed: mdl.cfg.Seed, LearnAmplitude: mdl.cfg.LearnAmplitude,
		Status: mdl.Status, Evaluations: mdl.Evaluations,
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("htpc: saving %s: %w", path, err)
	}
	if err := datasets.WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("htpc: saving %s: %w", path, err)
	}
	return nil
}

// Load reads a model written by Save and rebuilds its Laplace
// approximation, so predictions match the saved model's.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("htpc: loading %s: %w", path, err)
	}
	var s savedModel
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("htpc: loading %s: %w", path, err)
	}
	if s.Format != formatName || s.Version != formatVersion {
		return nil, fmt.Errorf("htpc: %s is format %q version %d, want %q version %d", path, s.Format, s.Version, formatName, formatVersion)
	}
	l := s.Classes
	switch {
	case s.N < 1 || s.D < 0 || l < 2:
		return nil, fmt.Errorf("htpc: %s: bad sizes N=%d D=%d classes=%d", path, s.N, s.D, l)
	case len(s.X) != s.N*s.D || len(s.Y) != s.N || len(s.Mode) != s.N*l || len(s.Hyper.LogB) != l:
		return nil, fmt.Errorf("htpc: %s: array lengths do not match N=%d D=%d classes=%d", path, s.N, s.D, l)
	case s.Jitter < 0 || s.NewtonTol <= 0 || s.MaxNewton < 1 || s.PredictSamples < 2:
		return nil, fmt.Errorf("htpc: %s: bad settings", path)
	}
	for i, c := range s.Y {
		if c < 0 || c >= l {
			return nil, fmt.Errorf("htpc: %s: label %d of row %d outside 0..%d", path, c, i, l-1)
		}
	}
	cfg := Config{
		Jitter: s.Jitter, NewtonTol: s.NewtonTol, MaxNewton: s.MaxNewton,
		PredictSamples: s.PredictSamples, Seed: s.Seed, LearnAmplitude: s.LearnAmplitude,
	}
	p, err := newProblem(s.X, s.N, s.D, s.Y, l, cfg.Jitter, cfg.NewtonTol, cfg.MaxNewton)
	if err != nil {
		return nil, fmt.Errorf("htpc: loading %s: %w", path, err)
	}
	defer p.close()
	mdl := &Model{D: s.D, Classes: l, N: s.N, cfg: cfg, x: s.X, y: s.Y, Status: s.Status, Evaluations: s.Evaluations}
	if err := mdl.finalize(p, s.Hyper, s.Mode); err != nil {
		return nil, fmt.Errorf("htpc: loading %s: %w", path, err)
	}
	return mdl, nil
}
