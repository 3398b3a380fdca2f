package gemm

import "math"

// hasExpKernel says whether Exp has its assembly kernel.
var hasExpKernel bool

// ExpConsts is the table of broadcast constants the vector exponential
// reads (see Exp).
type ExpConsts [20][4]float64

// NewExpConsts builds the table from the scalar exponential's constants:
// log2e, ln2Hi, ln2Lo and the Taylor coefficients c[2] … c[13].
func NewExpConsts(log2e, ln2Hi, ln2Lo float64, c *[14]float64) *ExpConsts {
	var k ExpConsts
	vals := []float64{log2e, 0.5, ln2Hi, ln2Lo, 1}
	vals = append(vals, c[2:]...)
	for i, v := range vals {
		k[i] = [4]float64{v, v, v, v}
	}
	bias := math.Float64frombits(1023)
	k[17] = [4]float64{bias, bias, bias, bias}
	k[18] = [4]float64{-708, -708, -708, -708}
	k[19] = [4]float64{709, 709, 709, 709}
	return &k
}

// Exp writes eˣ of src's leading elements into dst four at a time with the
// AVX2 kernel, exactly as the scalar exponential whose constants k holds
// would, and returns how many it did: a multiple of four, stopping before
// the first group of four with an element outside (−708, 709) or NaN, or
// before fewer than four remain; 0 without the kernel (KernelName "go").
// dst may be src.
func Exp(dst, src []float64, k *ExpConsts) int {
	n := min(len(dst), len(src)) / 4
	if n == 0 || !hasExpKernel {
		return 0
	}
	return expKernel(&dst[0], &src[0], n, k)
}
