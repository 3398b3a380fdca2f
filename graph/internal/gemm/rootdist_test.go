package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// RootDist's lanes equal the scalar loop bit for bit, for distances that
// are positive, clamped (negative), zero of either sign, huge and NaN.
func TestRootDistMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const n = 203
	c, zz := make([]float64, n), make([]float64, n)
	for i := range c {
		c[i], zz[i] = rng.NormFloat64(), math.Abs(rng.NormFloat64())*3
	}
	c[5], zz[5] = 40, 1         // negative: clamped to 0
	c[6], zz[6] = 0.25, -0.5    // xi + zz − 2c = −0 or 0
	c[7], zz[7] = math.NaN(), 1 // NaN stays NaN
	c[8], zz[8] = -1e150, 1e300 // large
	c[9] = math.Inf(-1)         // +Inf distance
	for _, xi := range []float64{0, 1.25, -3} {
		r, tt := make([]float64, n), make([]float64, n)
		done := RootDist(r, tt, c, zz, xi, math.Sqrt(5))
		if hasExpKernel && done != n/4*4 {
			t.Fatalf("done %d of %d", done, n)
		}
		for j := 0; j < n; j++ {
			d := max(0, (xi+zz[j])-c[j]*2)
			wr := math.Sqrt(d + 1e-12)
			wt := -math.Sqrt(5) * wr
			if j >= done {
				continue
			}
			if math.Float64bits(r[j]) != math.Float64bits(wr) || math.Float64bits(tt[j]) != math.Float64bits(wt) {
				t.Fatalf("xi %v, j %d: r %v t %v, scalar %v %v", xi, j, r[j], tt[j], wr, wt)
			}
		}
	}
}
