package graph

import (
	"fmt"
	"math"
	"testing"
)

// AllFinite finds a NaN or an infinity at any position of the unrolled
// loop and of its tail, and passes finite values of any size (signed
// zeros, the largest, the smallest subnormal).
func TestAllFinite(t *testing.T) {
	for n := range 11 {
		x := make([]float64, n)
		for i := range x {
			x[i] = []float64{math.MaxFloat64, -math.MaxFloat64, math.Copysign(0, -1), 5e-324, 1}[i%5]
		}
		if !AllFinite(x) {
			t.Fatalf("finite values of length %d reported non-finite", n)
		}
		for i := range x {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				y := append([]float64(nil), x...)
				y[i] = bad
				if AllFinite(y) {
					t.Fatalf("%v at %d of %d not found", bad, i, n)
				}
			}
		}
	}
}

func ExampleAllFinite() {
	fmt.Println(AllFinite([]float64{1, -2, 3e300}), AllFinite([]float64{1, math.Inf(1)}), AllFinite([]float64{math.NaN()}))
	// Output: true false false
}
