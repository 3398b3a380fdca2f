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
	b.Run("slice", func(b *testing.B) {
		for range b.N {
			expSlice(out, x)
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

// expSlice equals exp bit for bit, in place and not, at every length and
// alignment, with out-of-range values, infinities and NaN in any lane.
func TestExpSliceMatchesExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float64{-708, 709, -745, 710, math.Inf(1), math.Inf(-1), math.NaN(), 0, -0.0}
	for n := 0; n < 70; n++ {
		for trial := range 20 {
			src := make([]float64, n)
			for i := range src {
				src[i] = (rng.Float64() - 0.5) * 1400
				if trial%3 == 0 && rng.IntN(9) == 0 {
					src[i] = special[rng.IntN(len(special))]
				}
			}
			dst := make([]float64, n)
			expSlice(dst, src)
			in := append([]float64(nil), src...)
			expSlice(in, in)
			for i, x := range src {
				want := exp(x)
				if math.Float64bits(dst[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(dst[i])) {
					t.Fatalf("n=%d: expSlice(%v) = %v, exp = %v", n, x, dst[i], want)
				}
				if math.Float64bits(in[i]) != math.Float64bits(dst[i]) {
					t.Fatalf("n=%d: in place %v, out of place %v at %v", n, in[i], dst[i], x)
				}
			}
		}
	}
	// A million lanes of the vector kernels (eight and four wide) against
	// the scalar exp, over the fast range and the kernels' usual inputs.
	src := make([]float64, 1<<20)
	for i := range src {
		src[i] = rng.Float64()*1416 - 707.9
		if i%2 == 0 {
			src[i] = -rng.ExpFloat64() * 5
		}
	}
	dst := make([]float64, len(src))
	expSlice(dst, src)
	for i, x := range src {
		if math.Float64bits(dst[i]) != math.Float64bits(exp(x)) {
			t.Fatalf("expSlice(%v) = %v, exp = %v", x, dst[i], exp(x))
		}
	}
}
