package graph

import (
	"math"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// exp's range reduction x = k·ln2 + r, which the vector kernel shares.
const (
	log2e = 1.44269504088896338700e+00
	ln2Hi = 6.93147180369123816490e-01 // ln2Hi·k is exact for |k| < 2¹⁰
	ln2Lo = 1.90821492927058770002e-10
)

// expTaylor holds 1/k! for the polynomial of exp on [−ln2/2, ln2/2].
var expTaylor = func() (c [14]float64) {
	f := 1.0
	for k := range c {
		if k > 0 {
			f *= float64(k)
		}
		c[k] = 1 / f
	}
	return c
}()

// exp is eˣ within 3 ulp of math.Exp (in a loop about as fast as math.Exp
// on the 2026-11-26 machines, BenchmarkExp; expSlice's four lanes
// reproduce it bit for bit at four times the rate): x =
// k·ln2 + r with |r| ≤ ln2/2, eʳ by its Taylor polynomial to degree 13
// (truncation below 1e-17) evaluated by Estrin's scheme, whose short
// dependency chains let neighbouring elements overlap, and 2ᵏ built in the
// exponent bits. Outside (−708, 709), where 2ᵏ would leave the normal
// range, and for NaN, it is math.Exp.
func exp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return math.Exp(x)
	}
	k := math.Floor(x*log2e + 0.5)
	r := (x - k*ln2Hi) - k*ln2Lo
	c := &expTaylor
	r2 := r * r
	r4 := r2 * r2
	p01 := 1 + r
	p23 := c[2] + c[3]*r
	p45 := c[4] + c[5]*r
	p67 := c[6] + c[7]*r
	p89 := c[8] + c[9]*r
	pab := c[10] + c[11]*r
	pcd := c[12] + c[13]*r
	q0 := p01 + p23*r2
	q1 := p45 + p67*r2
	q2 := p89 + pab*r2
	p := (q0 + q1*r4) + (q2+pcd*r4)*(r4*r4)
	return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
}

// ExpValue is eˣ for a number as the Exp op computes it: within 3 ulp of
// math.Exp (see exp and ExpValues for speed).
func ExpValue(x float64) float64 { return exp(x) }

// expConsts is the vector kernel's copy of exp's constants.
var expConsts = gemm.NewExpConsts(log2e, ln2Hi, ln2Lo, &expTaylor)

// expSlice sets dst[i] = exp(src[i]), bit for bit, four elements at a time
// with the AVX2 kernel where the CPU has it (about four times the scalar
// loop's rate, which is bound near 5 ns an element by the polynomial's
// arithmetic); groups with an element outside the fast range, and the last
// few elements, take the scalar path. dst may be src.
func expSlice(dst, src []float64) {
	src = src[:len(dst)]
	i := 0
	for i+4 <= len(src) {
		i += gemm.Exp(dst[i:], src[i:], expConsts)
		if i+4 > len(src) {
			break
		}
		for j := i; j < i+4; j++ { // the group the kernel stopped at, or all without it
			dst[j] = exp(src[j])
		}
		i += 4
	}
	for ; i < len(src); i++ {
		dst[i] = exp(src[i])
	}
}

// ExpValues sets dst[i] = eˣ of src[i] as ExpValue would, four at a time
// where the CPU allows; dst may be src.
func ExpValues(dst, src []float64) { expSlice(dst, src) }
