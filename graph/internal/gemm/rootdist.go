package gemm

// RootDist sets, for the leading elements of c in groups of four,
// d = max(0, (xi + zz_j) − c_j·2), r_j = √(d + 1e-12) and t_j = −a·r_j (the
// Matérn kernel's distances from weighted cross products, and its
// exponent) with the AVX2 kernel, exactly as the scalar loop would, and
// returns how many it did: a multiple of four, 0 without the kernel. The
// square root is most of the loop's time, and four lanes of VSQRTPD cost
// about what one scalar square root does.
func RootDist(r, t, c, zz []float64, xi, a float64) int {
	n := min(len(r), len(t), len(c), len(zz)) / 4
	if n == 0 || !hasExpKernel {
		return 0
	}
	rootDistKernel(&r[0], &t[0], &c[0], &zz[0], n, xi, a)
	return 4 * n
}
