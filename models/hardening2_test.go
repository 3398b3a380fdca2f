package models

import (
	"context"
	"fmt"
	"io"
	"testing"
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
