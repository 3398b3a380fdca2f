package graph

// AllFinite reports whether every value of x is finite, with no branch per
// value: v·0 is ±0 for a finite v and NaN for an infinite or NaN one, and a
// NaN survives the sums. The training loop checks every parameter and
// gradient at every step, and NIMGP's local tables every batch row;
// testing each value with math.IsNaN and math.IsInf took three times as
// long.
func AllFinite(x []float64) bool {
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a0 += x[i] * 0
		a1 += x[i+1] * 0
		a2 += x[i+2] * 0
		a3 += x[i+3] * 0
	}
	for ; i < len(x); i++ {
		a0 += x[i] * 0
	}
	return (a0+a1)+(a2+a3) == 0
}
