package models

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gpc-dev/gpc/datasets"
)

// LegacyLoader converts a model file of a retired format, its contents b
// (path names it in messages), to today's model, which Save then writes as
// a gpc-model file.
type LegacyLoader func(b []byte, path string) (*Model, error)

var (
	legacyMu      sync.RWMutex
	legacyFormats = map[string]LegacyLoader{}
)

// RegisterLegacyFormat makes Load read files whose "format" field is
// format through load; it fails on an empty or taken format, or on
// "gpc-model" itself. Register from an init function.
func RegisterLegacyFormat(format string, load LegacyLoader) error {
	if format == "" || format == "gpc-model" || load == nil {
		return fmt.Errorf("models: RegisterLegacyFormat(%q): want a retired format's name and a loader", format)
	}
	legacyMu.Lock()
	defer legacyMu.Unlock()
	if _, ok := legacyFormats[format]; ok {
		return fmt.Errorf("models: legacy format %q is already registered", format)
	}
	legacyFormats[format] = load
	return nil
}

func legacyLoader(format string) (LegacyLoader, bool) {
	legacyMu.RLock()
	defer legacyMu.RUnlock()
	l, ok := legacyFormats[format]
	return l, ok
}

// Restore returns the model of options o with its parameters allocated for
// d inputs, c classes, n training rows and M inducing inputs per latent
// function, at placeholder values, as Load builds a model before reading
// a file's: for a LegacyLoader to fill (TrainableParams, Posterior,
// SetStandardization) before it rebuilds the engine's state.
func Restore(o Options, d, c, n, M int) (*Model, error) {
	o.Inputs.NoStandardize = !o.Inputs.Standardize
	m, err := New(o)
	if err != nil {
		return nil, err
	}
	if d < 1 || c < 2 || n < 1 || M < 1 || n > MaxSavedRows {
		return nil, fmt.Errorf("models: Restore: invalid sizes d=%d c=%d n=%d m=%d", d, c, n, M)
	}
	if err := m.allocate(d, c, n, M); err != nil {
		return nil, err
	}
	return m, nil
}

// SetStandardization sets the input standardisation x' = (x − mean)/scale
// that a model whose options standardise applies before it predicts.
func (m *Model) SetStandardization(mean, scale []float64) error {
	if !m.Opts.Inputs.Standardize {
		return errors.New("models: SetStandardization on a model whose options do not standardise")
	}
	if len(mean) != m.D || len(scale) != m.D {
		return fmt.Errorf("models: a standardisation of %d means and %d scales for %d features", len(mean), len(scale), m.D)
	}
	for j := range mean {
		if err := checkScale("standardisation", j, mean[j], scale[j]); err != nil {
			return err
		}
	}
	m.scaler = &datasets.Scaler{Mean: append([]float64(nil), mean...), Scale: append([]float64(nil), scale...)}
	return nil
}
