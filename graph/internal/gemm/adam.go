package gemm

import "math"

// AdamConsts are one Adam step's constants, laid out for the assembly
// kernel: the moment decays b1 and b2 with their complements nb1 = 1 − b1
// and nb2 = 1 − b2, the bias-corrected step lr/(1 − b1ᵗ), rc2 =
// 1/√(1 − b2ᵗ) and eps.
type AdamConsts struct {
	B1, NB1, B2, NB2, Step, RC2, Eps float64
}

// Adam applies one Adam step to every element of x with moments m and v
// and gradient g (nil: a zero gradient, the step of a parameter that is
// not in the minibatch):
//
//	m ← b1·m + nb1·g,  v ← b2·v + (nb2·g)·g,  x ← x − (step·m)/(√v·rc2 + eps)
//
// m, v and g (when not nil) must be at least as long as x. Groups of four
// go through the AVX2 kernel and groups of eight through the AVX-512 one,
// bit for bit the scalar loop (which does the rest, and all of it without
// a kernel): the square root and division
// four lanes at a time cost about what one does, and they were most of
// the update's time, more than moving the moments through memory.
func Adam(x, m, v, g []float64, k *AdamConsts) {
	n := len(x)
	m, v = m[:n], v[:n]
	if g != nil {
		g = g[:n] // a short gradient panics here, before a kernel reads past it
	}
	done := 0
	switch {
	case avx512 && n >= 8:
		if g != nil {
			adamKernel512(&x[0], &m[0], &v[0], &g[0], n/8, k)
		} else {
			adamDecayKernel512(&x[0], &m[0], &v[0], n/8, k)
		}
		done = n / 8 * 8
	case hasExpKernel && n >= 4:
		if g != nil {
			adamKernel(&x[0], &m[0], &v[0], &g[0], n/4, k)
		} else {
			adamDecayKernel(&x[0], &m[0], &v[0], n/4, k)
		}
		done = n / 4 * 4
	}
	if g != nil {
		adamScalar(x[done:], m[done:], v[done:], g[done:], k)
	} else {
		adamDecayScalar(x[done:], m[done:], v[done:], k)
	}
}

// avx512 selects the eight-lane kernels of Adam, PowShift, PowSum2 and the
// vector loops (set on a CPU with AVX-512, unless GPC_GEMM=avx2 keeps the
// AVX2 ones or, for the others, the Go loops).
var avx512 bool

// adamScalar is Adam's loop in Go. The explicit float64 conversions forbid
// fusing a product into an addition, which the kernel does not do either
// (the Go spec allows fusion; amd64 with GOAMD64=v3 would use it).
func adamScalar(x, m, v, g []float64, k *AdamConsts) {
	b1, nb1, b2, nb2, step, rc2, eps := k.B1, k.NB1, k.B2, k.NB2, k.Step, k.RC2, k.Eps
	for j, gj := range g[:len(x)] {
		mj := float64(b1*m[j]) + float64(nb1*gj)
		vj := float64(b2*v[j]) + float64(float64(nb2*gj)*gj)
		m[j], v[j] = mj, vj
		x[j] -= float64(step*mj) / (float64(math.Sqrt(vj)*rc2) + eps)
	}
}

// adamDecayScalar is adamScalar with a zero gradient.
func adamDecayScalar(x, m, v []float64, k *AdamConsts) {
	b1, b2, step, rc2, eps := k.B1, k.B2, k.Step, k.RC2, k.Eps
	for j := range x {
		mj := b1 * m[j]
		vj := b2 * v[j]
		m[j], v[j] = mj, vj
		x[j] -= float64(step*mj) / (float64(math.Sqrt(vj)*rc2) + eps)
	}
}
