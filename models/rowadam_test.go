package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/solvers"
)

// A row updated at every step must follow exactly the same path as the
// solvers' Adam on the same gradients; a row left out of a step must not move.
func TestRowAdamMatchesAdam(t *testing.T) {
	const width, lr = 4, 0.05
	rng := rand.New(rand.NewPCG(1, 2))
	ra := newRowAdam(lr, 3, width)
	rows := make([]float64, 3*width)
	for i := range rows {
		rows[i] = rng.NormFloat64()
	}
	ref := append([]float64(nil), rows[width:2*width]...)
	untouched := append([]float64(nil), rows[2*width:]...)
	adam := solvers.NewAdam(lr)
	g := make([]float64, width)
	for step := 0; step < 25; step++ {
		for k := range g {
			g[k] = rng.NormFloat64() + 0.1*float64(step)
		}
		// Row 1 is split across two slices, as q(x) means and log-variances are.
		ra.step(1, g, rows[width:width+2], rows[width+2:2*width])
		if err := adam.Step([]solvers.Param{{Name: "row", Data: ref}}, [][]float64{append([]float64(nil), g...)}); err != nil {
			t.Fatal(err)
		}
		for k := range ref {
			if d := math.Abs(rows[width+k] - ref[k]); d > 1e-12 {
				t.Fatalf("step %d element %d: row Adam %v, Adam %v", step, k, rows[width+k], ref[k])
			}
		}
	}
	for k, v := range untouched {
		if rows[2*width+k] != v {
			t.Fatalf("row 2 moved without being in a batch")
		}
	}
}
