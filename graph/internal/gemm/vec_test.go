package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Mul, MulAdd and Add equal their Go loops bit for bit at every length
// around the eight-lane groups, on either path.
func TestVecLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	for n := 0; n <= 35; n++ {
		a, b, d := make([]float64, n+3), make([]float64, n+3), make([]float64, n)
		for i := range a {
			a[i], b[i] = rng.NormFloat64()*1e3, rng.NormFloat64()*1e-3
		}
		for i := range d {
			d[i] = rng.NormFloat64()
		}
		mul, mad, add := make([]float64, n), append([]float64(nil), d...), append([]float64(nil), d...)
		Mul(mul, a, b)
		MulAdd(mad, a, b)
		Add(add, a)
		for i := range n {
			p := a[i] * b[i]
			if math.Float64bits(mul[i]) != math.Float64bits(p) ||
				math.Float64bits(mad[i]) != math.Float64bits(d[i]+p) ||
				math.Float64bits(add[i]) != math.Float64bits(d[i]+a[i]) {
				t.Fatalf("n %d, element %d: Mul %v MulAdd %v Add %v, loops %v %v %v", n, i, mul[i], mad[i], add[i], p, d[i]+p, d[i]+a[i])
			}
		}
	}
}

// Scale and QuadArg equal their Go loops bit for bit at every length
// around the eight-lane groups, including where 2c overflows and at NaN.
func TestScaleQuadArg(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 94))
	for n := 0; n <= 35; n++ {
		zz, c := make([]float64, n+3), make([]float64, n+3)
		for i := range zz {
			zz[i], c[i] = math.Abs(rng.NormFloat64())*10, rng.NormFloat64()*5
		}
		if n > 3 {
			c[1], c[2], zz[3] = math.MaxFloat64, math.NaN(), math.Inf(1)
		}
		xi, v := math.Abs(rng.NormFloat64())*7, rng.NormFloat64()
		q := make([]float64, n)
		QuadArg(q, zz, c, xi)
		s := append([]float64(nil), zz[:n]...)
		Scale(s, v)
		for j := range n {
			want := ((xi + zz[j]) - c[j]*2) * -0.5
			if math.Float64bits(q[j]) != math.Float64bits(want) && !(math.IsNaN(q[j]) && math.IsNaN(want)) {
				t.Fatalf("n %d, element %d: QuadArg %v, loop %v", n, j, q[j], want)
			}
			if math.Float64bits(s[j]) != math.Float64bits(zz[j]*v) {
				t.Fatalf("n %d, element %d: Scale %v, loop %v", n, j, s[j], zz[j]*v)
			}
		}
	}
}

func BenchmarkMulAdd(b *testing.B) {
	x, y, d := make([]float64, 784), make([]float64, 784), make([]float64, 784)
	for i := range x {
		x[i], y[i] = float64(i), 1/float64(i+1)
	}
	for b.Loop() {
		MulAdd(d, x, y)
	}
}
