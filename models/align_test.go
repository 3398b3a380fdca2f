package models

import (
	"testing"

	"github.com/gpc-dev/gpc/solvers"
)

// Per-point input-noise variances must travel with their rows through the
// epoch shuffle (the original given-noise code indexed them by batch
// position instead).
func TestGivenNoiseFollowsShuffledRows(t *testing.T) {
	ds := syntheticSet(30, 2, 3, 9)
	ds.Noise = make([]float64, ds.N*ds.D)
	for i := range ds.Noise {
		ds.Noise[i] = float64(i) + 0.5 // unique per entry
	}
	for _, k := range []Kind{NIMGP, NIMGPFO} {
		m, _ := New(Options{Kind: k, Inducing: 5, Batch: 8})
		if err := m.initialize(ds); err != nil {
			t.Fatal(err)
		}
		obj, err := m.newObjective(ds)
		if err != nil {
			t.Fatal(err)
		}
		batches, _ := solvers.EpochBatches(ds.N, 8, 4, 2)
		for _, b := range batches {
			obj.t.load(obj.data, b.Index, b.Weight, obj.rng)
			for r, i := range b.Index {
				for d := 0; d < ds.D; d++ {
					if got, want := obj.t.v.data[r*ds.D+d], ds.Noise[i*ds.D+d]; got != want {
						t.Fatalf("%s: batch row %d (data row %d) has noise %v, want %v", k, r, i, got, want)
					}
					if got, want := obj.t.x.data[r*ds.D+d], ds.X[i*ds.D+d]; got != want {
						t.Fatalf("%s: batch row %d has input %v, want %v", k, r, got, want)
					}
				}
			}
		}
	}
}
