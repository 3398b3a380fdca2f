package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gpc-dev/gpc/datasets"
)

// FormatVersion is the version of the model file format written by Save.
const FormatVersion = 1

type savedParam struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type savedModel struct {
	Format  string       `json:"format"`
	Version int          `json:"version"`
	Options Options      `json:"options"`
	D       int          `json:"d"`
	C       int          `json:"c"`
	N       int          `json:"n"`
	M       int          `json:"m"`
	Params  []savedParam `json:"params"`
}

// Save writes the model to a versioned JSON file: its options and every
// parameter needed for prediction (the per-point q(x_i) of NIMGP, which
// prediction does not use, is not stored). A user-written kernel or
// likelihood is not serialisable; Load needs the same factory again.
func (m *Model) Save(path string) error {
	if m.post == nil {
		return errors.New("models: cannot save an untrained model")
	}
	s := savedModel{Format: "gpc-model", Version: FormatVersion, Options: m.Opts, D: m.D, C: m.C, N: m.N, M: m.post.M}
	for _, p := range m.params() {
		s.Params = append(s.Params, savedParam{Name: p.Name, Shape: p.Shape, Data: p.Data})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("models: saving %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path) // never leave a half-written model behind
}

// Load reads a model written by Save. custom supplies what JSON cannot hold
// (Options.KernelFactory, Options.Likelihood) when the model used them; pass
// nil otherwise.
func Load(path string, custom *Options) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedModel
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("models: %s is not a model file: %w", path, err)
	}
	if s.Format != "gpc-model" {
		return nil, fmt.Errorf("models: %s is not a gpc model file", path)
	}
	if s.Version != FormatVersion {
		return nil, fmt.Errorf("models: %s has format version %d; this gpc reads version %d", path, s.Version, FormatVersion)
	}
	opts := s.Options
	if custom != nil {
		opts.KernelFactory, opts.Likelihood = custom.KernelFactory, custom.Likelihood
	}
	m, err := New(opts)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	if s.D < 1 || s.C < 2 || s.M < 1 || s.N < 1 {
		return nil, fmt.Errorf("models: %s: invalid sizes d=%d c=%d m=%d n=%d", path, s.D, s.C, s.M, s.N)
	}
	// Rebuild the parameter structure on a placeholder data set, then
	// overwrite every parameter with the stored values.
	ph := &datasets.Dataset{Name: "placeholder", N: s.M, D: s.D, C: s.C, X: make([]float64, s.M*s.D), Y: make([]int, s.M)}
	for i := range ph.X {
		ph.X[i] = float64(i%7) - 3
	}
	for i := range ph.Y {
		ph.Y[i] = i % s.C
	}
	// Placeholder variances: training-point noise is not part of a saved
	// model (predictions take the test points' own), but initialisation
	// validates it.
	ph.Noise = make([]float64, len(ph.X))
	for i := range ph.Noise {
		ph.Noise[i] = 1
	}
	m.Opts.Inducing = s.M
	if err := m.initialize(ph, io.Discard); err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	m.N = s.N
	m.Opts.Inducing = opts.Inducing
	byName := map[string]savedParam{}
	for _, p := range s.Params {
		byName[p.Name] = p
	}
	for _, p := range m.params() {
		sp, ok := byName[p.Name]
		if !ok {
			return nil, fmt.Errorf("models: %s has no parameter %q", path, p.Name)
		}
		if len(sp.Data) != len(p.Data) {
			return nil, fmt.Errorf("models: %s: parameter %q has %d values, want %d", path, p.Name, len(sp.Data), len(p.Data))
		}
		for i, v := range sp.Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("models: %s: parameter %q element %d is %v", path, p.Name, i, v)
			}
		}
		copy(p.Data, sp.Data)
	}
	return m, nil
}
