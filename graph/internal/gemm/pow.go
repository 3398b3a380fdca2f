package gemm

// PowShift sets out_i = scale·(x_i + shift)^p, times g_i first when g is not
// nil, for the leading multiple of eight elements, eight lanes at a time
// with AVX-512, and returns how many it set (0 without the kernel: the
// caller's loop does the rest). Its products are those of graph's
// binary-exponentiation loop in the same order, so the values are that
// loop's bit for bit. out and g must be as long as x.
func PowShift(out, x, g []float64, p int, shift, scale float64) int {
	n := len(x) / 8 * 8
	if !avx512 || n == 0 || p < 0 {
		return 0
	}
	out, x = out[:n], x[:n] // a short out or g panics here, before the kernel
	flags := 0
	var gp *float64
	if g != nil {
		g = g[:n]
		gp, flags = &g[0], 1
	}
	if shift != 0 {
		flags |= 2
	}
	powKernel512(&out[0], &x[0], gp, n/8, p, shift, scale, flags)
	return n
}

// PowSum2 sets out_i = c0·g0_i·r_i + c1·g1_i·r_i·b_i^d with b = x + shift
// and r = b^p0 (as PowShift raises it), multiplied in d single steps, for
// the leading multiple of eight elements, and returns how many (0 without
// the kernel). out, g0 and g1 must be as long as x.
func PowSum2(out, x, g0, g1 []float64, p0, d int, shift, c0, c1 float64) int {
	n := len(x) / 8 * 8
	if !avx512 || n == 0 || p0 < 0 || d < 0 {
		return 0
	}
	out, x, g0, g1 = out[:n], x[:n], g0[:n], g1[:n]
	flags := 0
	if shift != 0 {
		flags = 2
	}
	powSum2Kernel512(&out[0], &x[0], &g0[0], &g1[0], n/8, p0, d, shift, c0, c1, flags)
	return n
}
