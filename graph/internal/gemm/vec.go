package gemm

// Elementwise loops of the fused adjoints (graph's Map of products and
// their column sums), eight lanes at a time with AVX-512 and otherwise in
// Go. Each lane rounds as the Go loop does (a product, then a sum; no fused
// multiply-add), so values are the same bit for bit either way. The Go
// compiler does not vectorise these loops; on MNIST's inducing inputs
// (ten 100×784 matrices, three products each) they were a tenth of a step.

// Mul sets dst_i = a_i·b_i; a and b must be at least as long as dst.
func Mul(dst, a, b []float64) {
	n := len(dst)
	a, b = a[:n], b[:n]
	done := 0
	if avx512 && n >= 8 {
		done = n / 8 * 8
		mulKernel512(&dst[0], &a[0], &b[0], n/8)
	}
	for i := done; i < n; i++ {
		dst[i] = a[i] * b[i]
	}
}

// MulAdd adds a_i·b_i to dst_i; a and b must be at least as long as dst.
func MulAdd(dst, a, b []float64) {
	n := len(dst)
	a, b = a[:n], b[:n]
	done := 0
	if avx512 && n >= 8 {
		done = n / 8 * 8
		mulAddKernel512(&dst[0], &a[0], &b[0], n/8)
	}
	for i := done; i < n; i++ {
		dst[i] += a[i] * b[i]
	}
}

// Add adds a_i to dst_i; a must be at least as long as dst.
func Add(dst, a []float64) {
	n := len(dst)
	a = a[:n]
	done := 0
	if avx512 && n >= 8 {
		done = n / 8 * 8
		addKernel512(&dst[0], &a[0], n/8)
	}
	for i := done; i < n; i++ {
		dst[i] += a[i]
	}
}

// Scale multiplies dst_i by v.
func Scale(dst []float64, v float64) {
	n := len(dst)
	done := 0
	if avx512 && n >= 8 {
		done = n / 8 * 8
		scaleKernel512(&dst[0], v, n/8)
	}
	for i := done; i < n; i++ {
		dst[i] *= v
	}
}

// QuadArg sets dst_j = ((xi + zz_j) − 2c_j)·(−½), the exponent of a squared
// exponential kernel's entry from the squared norms and the cross product;
// zz and c must be at least as long as dst.
func QuadArg(dst, zz, c []float64, xi float64) {
	n := len(dst)
	zz, c = zz[:n], c[:n]
	done := 0
	if avx512 && n >= 8 {
		done = n / 8 * 8
		quadArgKernel512(&dst[0], &zz[0], &c[0], xi, n/8)
	}
	for j := done; j < n; j++ {
		dst[j] = ((xi + zz[j]) - c[j]*2) * -0.5
	}
}
