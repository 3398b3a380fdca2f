package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Class 2 of the second hardening round: every preset, trained at its
// smallest sizes (two rows per class, one inducing input), saves a file
// that loads and predicts as the trained model does. The size check of
// Load once used settings a model does not have (the amortised networks'
// hidden size) and refused models with fewer than 50 stored numbers.
func TestEveryPresetRoundTripsAtSmallestSizes(t *testing.T) {
	for _, k := range PresetNames() {
		for _, rows := range []int{4, 5} {
			t.Run(fmt.Sprintf("%s/rows=%d", k, rows), func(t *testing.T) {
				o := withNoise(opts(k, 1, 1, rows, 3), 0.1, false)
				o.Inputs.Hidden = []int{1}
				o.Inputs.TestSamples = 2
				m, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				c := 2
				if cc, ok := m.Likelihood().(interface{ Classes() int }); ok {
					c = cc.Classes()
				}
				train := syntheticSet(rows, 1, c, 4)
				for i := range train.Y {
					train.Y[i] = i % c
				}
				if err := m.Fit(context.Background(), train, FitConfig{Warnings: io.Discard}); err != nil {
					t.Fatal(err)
				}
				saveLoad(t, m, syntheticSet(3, 1, c, 5))
			})
		}
	}
}

// Class 3: EP stops within a sweep when the context ends. Its sweeps ran
// inside one evaluation of the L-BFGS objective, which only checked the
// context between evaluations: a slow EP run (here 60 sweeps on 700 rows,
// many seconds) went on to the end after SIGTERM.
func TestEPStopsOnCancel(t *testing.T) {
	for _, preset := range []string{"ep", "ep-fitc"} {
		t.Run(preset, func(t *testing.T) {
			train := scaledBlobs(700, 1, 9)
			o := opts(preset, 200, 5, 700, 1)
			o.EP.Tol, o.EP.MaxSweeps = 1e-300, 60 // never converges: every sweep runs
			m, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			at := make(chan time.Time, 1)
			time.AfterFunc(300*time.Millisecond, func() {
				at <- time.Now()
				cancel()
			})
			err = m.Fit(ctx, train, FitConfig{Warnings: io.Discard})
			stopped := <-at
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Fit returned %v, want the context's error", err)
			}
			if d := time.Since(stopped); d > 3*time.Second {
				t.Errorf("Fit returned %v after the cancellation", d)
			}
		})
	}
}

// tinySaved trains a small model of preset and returns its file as JSON
// to edit.
func tinySaved(t *testing.T, preset string) map[string]any {
	t.Helper()
	o := withNoise(opts(preset, 3, 1, 20, 2), 0.1, false)
	o.Inputs.Standardize, o.Inputs.NoStandardize = true, false
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), syntheticSet(20, 2, 3, 6), FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(mustRead(t, path), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// set assigns v at the path of keys in a decoded JSON object.
func set(s map[string]any, v any, keys ...string) {
	for _, k := range keys[:len(keys)-1] {
		s = s[k].(map[string]any)
	}
	s[keys[len(keys)-1]] = v
}

// Classes 4 and 6: sizes and values of a hand-edited model file are
// checked before use, each with an error naming the field and the limit.
// Before these checks a file with a billion quadrature points died in the
// Go runtime (out of memory), a trillion test samples ran for hours, and
// a duplicated, unknown or overflowing parameter loaded silently.
func TestLoadRefusesHostileFiles(t *testing.T) {
	cases := []struct {
		name string
		edit func(s map[string]any)
		want string
	}{
		{"quadrature", func(s map[string]any) { set(s, 1e9, "options", "Likelihood", "Quadrature") },
			"Likelihood.Quadrature 1000000000 exceeds the limit of 1000 quadrature points"},
		{"test samples", func(s map[string]any) { set(s, 1e12, "options", "Inputs", "TestSamples") },
			"Inputs.TestSamples 1000000000000 exceeds the limit of 100000 test samples"},
		{"likelihood samples", func(s map[string]any) { set(s, 1e12, "options", "Likelihood", "Samples") },
			"Likelihood.Samples 1000000000000 exceeds the limit of 100000 Monte Carlo draws"},
		{"hidden", func(s map[string]any) { set(s, []any{1e8}, "options", "Inputs", "Hidden") },
			"Inputs.Hidden: a layer of 100000000 units exceeds the limit of 65536"},
		{"rows", func(s map[string]any) { set(s, 1e15, "n") },
			"n = 1000000000000000 training rows exceeds the limit of 1099511627776"},
		{"duplicate", func(s map[string]any) {
			ps := s["params"].([]any)
			s["params"] = append(ps, ps[0])
		}, `parameter "k0/lengthscales" is listed twice`},
		{"unknown", func(s map[string]any) {
			s["params"] = append(s["params"].([]any), map[string]any{"name": "extra", "shape": []any{1}, "data": []any{1}})
		}, `"extra" is not a parameter of this model`},
		{"log-scale overflow", func(s map[string]any) {
			s["params"].([]any)[0].(map[string]any)["data"].([]any)[1] = 1e308
		}, `parameter "k0/lengthscales" element 1 is the logarithm 1e+308 of a positive scale, which is +Inf`},
		{"log-scale underflow", func(s map[string]any) {
			s["params"].([]any)[0].(map[string]any)["data"].([]any)[0] = -800.0
		}, `parameter "k0/lengthscales" element 0 is the logarithm -800 of a positive scale, which is 0`},
		{"tiny standardisation scale", func(s map[string]any) {
			s["standardize"].(map[string]any)["scale"].([]any)[1] = 1e-320
		}, "the input standardisation of column 2 (mean"},
		{"negative standardisation scale", func(s map[string]any) {
			s["standardize"].(map[string]any)["scale"].([]any)[0] = -2.0
		}, "the input standardisation of column 1 (mean"},
		{"negative jitter", func(s map[string]any) { set(s, -1.0, "options", "Posterior", "Jitter") }, "negative jitter -1"},
		{"negative test samples", func(s map[string]any) { set(s, -5, "options", "Inputs", "TestSamples") }, "-5 test samples"},
	}
	for _, preset := range []string{"mgp", "nimgp-nn"} {
		for _, c := range cases {
			t.Run(preset+"/"+c.name, func(t *testing.T) {
				s := tinySaved(t, preset)
				c.edit(s)
				b, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), "edited.json")
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				_, err = Load(path, nil)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
					t.Errorf("got %v\nwant an error naming %s and %q", err, path, c.want)
				}
			})
		}
	}
}

// Class 6: a model holding a value JSON cannot write is refused by Save
// with the parameter named, and nothing is written.
func TestSaveNamesUnsaveableValue(t *testing.T) {
	m, err := New(withNoise(opts("mgp", 3, 1, 20, 2), 0.1, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), syntheticSet(20, 2, 3, 6), FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	m.post.Mean[0].Data[1] = math.Inf(1)
	path := filepath.Join(t.TempDir(), "m.json")
	err = m.Save(path)
	if err == nil || !strings.Contains(err.Error(), `parameter "q/m0" element 1 is +Inf`) {
		t.Errorf("Save: %v", err)
	}
	if _, serr := os.Stat(path); serr == nil {
		t.Errorf("a file was written")
	}
}

// Class 4: a fit whose dense matrices cannot fit in the machine's memory
// is a *MemoryError naming the rows and latent functions, returned before
// anything of that size is allocated (it used to die in the Go runtime).
func TestFitRefusesBeyondMachineMemory(t *testing.T) {
	have, ok := MachineMemory()
	if !ok {
		t.Skip("no /proc/meminfo")
	}
	// The full family holds n×n matrices: n rows with 8n² > have.
	n := int(math.Sqrt(float64(have)/8)) + 1000
	ds := syntheticSet(n, 1, 2, 3)
	o := opts("svgp-kl", 1, 1, 100, 1)
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard})
	var me *MemoryError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), fmt.Sprintf("svgp-kl on %d rows × 1 latent functions", n)) || !strings.Contains(err.Error(), "use the sparse family") {
		t.Errorf("Fit: %v", err)
	}
}

// Class 1: the size gpc train checks room for before training is of the
// order of the file Save writes (not below it, within a small factor).
func TestSavedSizeEstimate(t *testing.T) {
	for _, preset := range []string{"mgp", "nimgp-nn", "svgp", "ep"} {
		o := withNoise(opts(preset, 20, 1, 50, 2), 0.1, false)
		o.Inputs.Hidden = []int{8}
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		c := 3
		if cc, ok := m.Likelihood().(interface{ Classes() int }); ok {
			c = cc.Classes()
		}
		ds := syntheticSet(60, 4, c, 8)
		if err := m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.json")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if est := m.SavedSizeEstimate(ds.N, ds.D, ds.C); est < st.Size() || est > 20*st.Size() {
			t.Errorf("%s: estimate %d bytes for a file of %d", preset, est, st.Size())
		}
	}
}

// Class 6: inputs of ±1e308 (finite, but their squares overflow) train
// into a model that saves and loads: the standardisation is computed
// without overflow, and nothing non-finite reaches the file.
func TestExtremeInputsSave(t *testing.T) {
	for _, preset := range []string{"mgp", "svgp", "ep"} {
		t.Run(preset, func(t *testing.T) {
			ds := scaledBlobs(30, 1, 4)
			ds.X[0], ds.X[1], ds.X[2], ds.X[3] = 1e308, -1e308, -1.7e308, 1.7e308
			o := opts(preset, 5, 2, 30, 1)
			o.Inputs.Standardize, o.Inputs.NoStandardize = true, false
			m, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
				t.Fatal(err)
			}
			saveLoad(t, m, scaledBlobs(6, 1, 5))
		})
	}
}
