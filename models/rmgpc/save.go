package rmgpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/gpc-dev/gpc/datasets"
)

// FileFormat and FileVersion identify the JSON files Save writes.
const (
	FileFormat  = "gpc-rmgpc"
	FileVersion = 1
)

type savedParam struct {
	Name string    `json:"name"`
	Data []float64 `json:"data"`
}

// savedModel holds what prediction and the outlier posterior need: the
// training inputs, labels and sites (from which one O(l·n³) factorisation
// rebuilds the posterior, instead of storing l dense n×n matrices), the
// standardisation and the hyper-parameters in their raw (log) storage.
type savedModel struct {
	Format  string       `json:"format"`
	Version int          `json:"version"`
	Config  Config       `json:"config"`
	D       int          `json:"d"`
	C       int          `json:"c"`
	N       int          `json:"n"`
	X       []float64    `json:"x"`
	Y       []int        `json:"y"`
	Shift   []float64    `json:"shift,omitempty"`
	Scale   []float64    `json:"scale,omitempty"`
	Params  []savedParam `json:"params"`
	Sites   *Sites       `json:"sites"`
	LogZ    float64      `json:"log_z"`
	Fit     FitInfo      `json:"fit"`
	// Outliers duplicates P(z_i = 1 | y, X) for readers other than Load.
	Outliers []float64 `json:"outliers,omitempty"`
}

// Save writes the model as JSON to path atomically (a temporary file in the
// same directory renamed over path, so a reader never sees half a model).
// A model with a custom Config.Kernel cannot be saved.
func (m *Model) Save(path string) error {
	if m.Post == nil {
		return errors.New("rmgpc: cannot save an unfitted model")
	}
	if m.custom {
		return errors.New("rmgpc: a model with a custom kernel cannot be saved")
	}
	s := savedModel{Format: FileFormat, Version: FileVersion, Config: m.Config, D: m.D, C: m.C, N: m.N,
		X: m.X, Y: m.Y, Shift: m.Shift, Scale: m.Scale, Sites: m.Sites, LogZ: m.Post.LogZ, Fit: m.Fit}
	if !m.Config.SMGPC {
		s.Outliers = m.Outliers()
	}
	for _, p := range m.params() {
		s.Params = append(s.Params, savedParam{Name: p.Name, Data: p.Data})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("rmgpc: saving %s: %w", path, err)
	}
	if err := datasets.WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("rmgpc: saving %s: %w", path, err)
	}
	return nil
}

// Load reads a model written by Save and rebuilds its EP posterior from the
// stored sites (no EP sweeps), so Predict and Outliers give what they gave
// before saving.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rmgpc: %w", err)
	}
	var s savedModel
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("rmgpc: reading %s: %w", path, err)
	}
	if s.Format != FileFormat {
		return nil, fmt.Errorf("rmgpc: %s is not an RMGPC model (format %q)", path, s.Format)
	}
	if s.Version != FileVersion {
		return nil, fmt.Errorf("rmgpc: %s has format version %d; this build reads %d", path, s.Version, FileVersion)
	}
	if s.Sites == nil || s.C < 2 || s.N < 1 || s.D < 1 || len(s.X) != s.N*s.D || len(s.Y) != s.N {
		return nil, fmt.Errorf("rmgpc: %s is malformed", path)
	}
	if (s.Shift == nil) != (s.Scale == nil) || s.Shift != nil && (len(s.Shift) != s.D || len(s.Scale) != s.D) {
		return nil, fmt.Errorf("rmgpc: %s has a malformed standardisation", path)
	}
	m := &Model{Config: s.Config, D: s.D, C: s.C, N: s.N, X: s.X, Y: s.Y, Shift: s.Shift, Scale: s.Scale, Sites: s.Sites, Fit: s.Fit}
	if err := m.initParams(); err != nil {
		return nil, err
	}
	byName := map[string][]float64{}
	for _, p := range s.Params {
		byName[p.Name] = p.Data
	}
	for _, p := range m.params() {
		d, ok := byName[p.Name]
		if !ok || len(d) != len(p.Data) {
			return nil, fmt.Errorf("rmgpc: %s lacks parameter %s", path, p.Name)
		}
		copy(p.Data, d)
	}
	if err := m.rebuild(); err != nil {
		return nil, fmt.Errorf("rmgpc: %s: %w", path, err)
	}
	return m, nil
}

// rebuild recomputes the posterior at the stored sites without sweeping.
func (m *Model) rebuild() error {
	f, err := newFitter(m)
	if err != nil {
		return err
	}
	pr, err := f.prior()
	if err != nil {
		return err
	}
	cfg := m.Config
	cfg.MaxSweeps = 0
	post, err := runEP(pr, m.Y, m.Sites, cfg)
	if err != nil {
		return err
	}
	m.Post = post
	return nil
}
