package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// powRef is graph's binary-exponentiation loop (intPowShift) per element.
func powRef(x, g float64, hasG bool, p int, shift, scale float64) float64 {
	b := x
	if shift != 0 {
		b = x + shift
	}
	r, first := 1.0, true
	for e := p; e > 0; e >>= 1 {
		if e&1 == 1 {
			if first {
				r, first = b, false
			} else {
				r *= b
			}
		}
		if e > 1 {
			b *= b
		}
	}
	if hasG {
		return float64(r*g) * scale
	}
	return r * scale
}

func powInputs(rng *rand.Rand, n int) (x, g []float64) {
	x, g = make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], g[i] = rng.NormFloat64()*1.5, rng.NormFloat64()
	}
	if n > 3 {
		x[1], x[2] = 0, math.Copysign(0, -1) // −0 keeps its sign when no shift is added
	}
	return x, g
}

// The kernels equal the Go loop bit for bit, for every power up to 13,
// with and without a shift, a factor and a scale, at lengths with tails.
func TestPowKernels(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512 power kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for _, n := range []int{0, 7, 8, 9, 24, 37} {
		x, g := powInputs(rng, n)
		for p := 0; p <= 13; p++ {
			for _, shift := range []float64{0, 1, -0.5} {
				for _, scale := range []float64{1, 2.5} {
					for _, hasG := range []bool{false, true} {
						out := make([]float64, n)
						var gs []float64
						if hasG {
							gs = g
						}
						done := PowShift(out, x, gs, p, shift, scale)
						if done != n/8*8 {
							t.Fatalf("n %d: PowShift did %d elements", n, done)
						}
						for i := range done {
							want := powRef(x[i], g[i], hasG, p, shift, scale)
							if math.Float64bits(out[i]) != math.Float64bits(want) {
								t.Fatalf("p %d shift %v scale %v g %v: out[%d] = %v, the loop gives %v", p, shift, scale, hasG, i, out[i], want)
							}
						}
					}
				}
			}
			for d := 0; d <= 2; d++ {
				for _, shift := range []float64{0, 1} {
					out := make([]float64, n)
					g1 := make([]float64, n)
					for i := range g1 {
						g1[i] = rng.NormFloat64()
					}
					done := PowSum2(out, x, g, g1, p, d, shift, 72, 9)
					for i := range done {
						r := powRef(x[i], 0, false, p, shift, 1)
						first := float64(r*g[i]) * 72
						b := x[i] + shift
						for range d {
							r *= b
						}
						want := first + float64(r*g1[i])*9
						if math.Float64bits(out[i]) != math.Float64bits(want) {
							t.Fatalf("PowSum2 p %d d %d shift %v: out[%d] = %v, the loop gives %v", p, d, shift, i, out[i], want)
						}
					}
				}
			}
		}
	}
}

func BenchmarkPowShift(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, g := powInputs(rng, 20000)
	out := make([]float64, len(x))
	for b.Loop() {
		PowShift(out, x, g, 7, 1, 72)
	}
}
