package models

import (
	"context"
	"errors"
	"fmt"
	"io"
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
