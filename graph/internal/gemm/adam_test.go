package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adamRef is the textbook loop of solvers.Adam and the row tables' dense
// update, written out independently of adamScalar.
func adamRef(x, m, v, g []float64, k *AdamConsts) {
	for j := range x {
		var gj float64
		if g != nil {
			gj = g[j]
		}
		mj := k.B1*m[j] + k.NB1*gj
		vj := k.B2*v[j] + k.NB2*gj*gj
		if g == nil {
			mj, vj = k.B1*m[j], k.B2*v[j]
		}
		m[j], v[j] = mj, vj
		x[j] -= k.Step * mj / (math.Sqrt(vj)*k.RC2 + k.Eps)
	}
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// Adam equals the scalar loop bit for bit, with and without a gradient,
// at every length (the kernel's groups and the tail), for ordinary values
// and for zero moments, signed zeros, huge, tiny, infinite and NaN
// gradients.
func TestAdamMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	k := &AdamConsts{B1: 0.9, NB1: 1 - 0.9, B2: 0.999, NB2: 1 - 0.999, Step: 0.01 / (1 - math.Pow(0.9, 7)), RC2: 1 / math.Sqrt(1-math.Pow(0.999, 7)), Eps: 1e-8}
	special := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 1e200, -1e200, math.Inf(1), math.Inf(-1), math.NaN(), 5e-324}
	for n := 0; n <= 37; n++ {
		for _, withG := range []bool{true, false} {
			x, m, v, g := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for j := range x {
				x[j], m[j], v[j], g[j] = rng.NormFloat64(), 1e-2*rng.NormFloat64(), 1e-4*rng.ExpFloat64(), rng.NormFloat64()
				switch j % 5 {
				case 1:
					g[j] = special[rng.IntN(len(special))]
				case 2:
					m[j], v[j] = 0, 0
				case 3:
					v[j] = special[rng.IntN(6)] // zeros and tiny/huge magnitudes, made positive below
					v[j] = math.Abs(v[j])
				}
			}
			gg := g
			if !withG {
				gg = nil
			}
			x2, m2, v2 := append([]float64(nil), x...), append([]float64(nil), m...), append([]float64(nil), v...)
			Adam(x, m, v, gg, k)
			adamRef(x2, m2, v2, gg, k)
			for j := range x {
				if !sameBits(x[j], x2[j]) || !sameBits(m[j], m2[j]) || !sameBits(v[j], v2[j]) {
					t.Fatalf("n %d, gradient %v, element %d: x %v m %v v %v, scalar %v %v %v", n, withG, j, x[j], m[j], v[j], x2[j], m2[j], v2[j])
				}
			}
		}
	}
}

func BenchmarkAdam(b *testing.B) {
	const n = 1 << 20
	x, m, v, g := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for j := range x {
		x[j], m[j], v[j], g[j] = 1, 1e-3, 1e-4, 0.5
	}
	k := &AdamConsts{B1: 0.9, NB1: 0.1, B2: 0.999, NB2: 0.001, Step: 0.01, RC2: 1.2, Eps: 1e-8}
	b.Run("kernel", func(b *testing.B) {
		for range b.N {
			Adam(x, m, v, g, k)
		}
	})
	b.Run("kernel-decay", func(b *testing.B) {
		for range b.N {
			Adam(x, m, v, nil, k)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for range b.N {
			adamScalar(x, m, v, g, k)
		}
	})
	b.Run("scalar-decay", func(b *testing.B) {
		for range b.N {
			adamDecayScalar(x, m, v, k)
		}
	})
}

// A gradient shorter than x panics before any kernel reads past its end,
// leaving x, m and v as they were.
func TestAdamShortGradient(t *testing.T) {
	k := &AdamConsts{B1: 0.9, NB1: 0.1, B2: 0.999, NB2: 0.001, Step: 0.01, RC2: 1.2, Eps: 1e-8}
	x, m, v := make([]float64, 16), make([]float64, 16), make([]float64, 16)
	for i := range x {
		x[i], m[i], v[i] = 1, 1e-3, 1e-4
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a short gradient did not panic")
			}
		}()
		Adam(x, m, v, make([]float64, 8), k)
	}()
	for i := range x {
		if x[i] != 1 || m[i] != 1e-3 || v[i] != 1e-4 {
			t.Fatalf("element %d changed to x %v, m %v, v %v before the panic", i, x[i], m[i], v[i])
		}
	}
}
