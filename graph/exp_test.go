package graph

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps is |got − want| in units of want's last place.
func ulps(got, want float64) float64 {
	if got == want {
		return 0
	}
	w := math.Abs(want)
	return math.Abs(got-want) / (math.Nextafter(w, math.Inf(1)) - w)
}

// exp stays within 3 ulp of math.Exp over its whole fast range (uniform
// and near zero), at the range's edges and reduction boundaries, and is
// math.Exp outside it.
func TestExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	worst, at := 0.0, 0.0
	check := func(x float64) {
		if u := ulps(exp(x), math.Exp(x)); u > worst || math.IsNaN(u) {
			worst, at = u, x
		}
	}
	for i := 0; i < 2_000_000; i++ {
		check(rng.Float64()*1417 - 708)
		check(rng.NormFloat64() * 3)
	}
	for k := -1020.0; k <= 1020; k++ { // x near multiples of ln 2/2
		x := k * math.Ln2 / 2
		check(x)
		check(math.Nextafter(x, 0))
		check(math.Nextafter(x, math.Inf(1)))
	}
	for _, x := range []float64{0, -0.0, 1, -1, 1e-300, -1e-300, 707.9, -707.9} {
		check(x)
	}
	if !(worst <= 3) {
		t.Fatalf("exp(%v) is %.1f ulp from math.Exp", at, worst)
	}
	t.Logf("worst %.0f ulp (at %v)", worst, at)
	for _, x := range []float64{709, 709.7, 710, -708, -745, -746, math.Inf(1), math.Inf(-1), math.NaN()} {
		if got, want := exp(x), math.Exp(x); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("exp(%v) = %v, want math.Exp's %v", x, got, want)
		}
	}
}

func BenchmarkExp(b *testing.B) {
	x := make([]float64, 200*784)
	for i := range x {
		x[i] = -float64(i%1000)/50 + 5
	}
	out := make([]float64, len(x))
	b.Run("gpc", func(b *testing.B) {
		for range b.N {
			for i, v := range x {
				out[i] = exp(v)
			}
		}
	})
	b.Run("math", func(b *testing.B) {
		for range b.N {
			for i, v := range x {
				out[i] = math.Exp(v)
			}
		}
	})
}
