//go:build !purego

package gemm

import "os"

// cpuid and xgetbv are in cpu_amd64.s.
func cpuid(eax, ecx uint32) (a, b, c, d uint32)
func xgetbv() (eax, edx uint32)

// hasAVX2FMA reports whether the CPU and the OS support the instructions
// of the assembly micro-kernel: AVX2 and FMA3 with the YMM state enabled.
func hasAVX2FMA() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
	)
	if c1&fma == 0 || c1&osxsave == 0 || c1&avx == 0 {
		return false
	}
	if lo, _ := xgetbv(); lo&0x6 != 0x6 { // XMM and YMM state saved by the OS
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	const avx2 = 1 << 5
	return b7&avx2 != 0
}

// kernel6x8 adds alpha·Σ_p a[p·6+r]·b[p·8+c] to c[r·ldc+c] for r<6, c<8,
// reading kc packed steps, or with set stores it there without reading c.
// Implemented in kernel_amd64.s.
//
//go:noescape
func kernel6x8(kc int, a, b, c *float64, ldc int, alpha float64, set bool)

// copyGroups8 copies n groups of 8 doubles, the g-th from
// src[g·srcStride:] to dst[g·dstStride:]: the triangular routines' packing
// of a row into slivers and their copy back. Implemented in
// kernel_amd64.s.
//
//go:noescape
func copyGroups8(dst *float64, dstStride int, src *float64, srcStride int, n int)

func asmGroups8(dst []float64, dstStride int, src []float64, srcStride int, n int) {
	if n > 0 {
		_ = dst[(n-1)*dstStride+7] // the bounds the assembly does not check
		_ = src[(n-1)*srcStride+7]
		copyGroups8(&dst[0], dstStride, &src[0], srcStride, n)
	}
}

// hasAVX512F reports whether the CPU has AVX-512 Foundation and the OS
// saves the opmask and all 32 ZMM registers' state.
func hasAVX512F() bool {
	if !hasAVX2FMA() {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	const avx512f = 1 << 16
	if b7&avx512f == 0 {
		return false
	}
	lo, _ := xgetbv()
	return lo&0xe6 == 0xe6 // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
}

// kernel6x16 is kernel6x8 for two adjacent tiles at once, columns 0–7
// from sliver b0 into c0's rows and 8–15 from b1 into c1's, in AVX-512
// registers. Implemented in kernel512_amd64.s.
//
//go:noescape
func kernel6x16(kc int, a, b0, b1, c0, c1 *float64, ldc int, alpha float64, set bool)

// noAVX512 keeps the AVX2 kernels on a CPU that has AVX-512 (GPC_GEMM=avx2),
// to compare the two on one machine.
var noAVX512 = os.Getenv("GPC_GEMM") == "avx2"

func init() {
	if hasAVX2FMA() {
		microKernel = asmKernel
		groups8 = asmGroups8
		KernelName = "avx2-fma"
	}
	if hasAVX512F() && !noAVX512 {
		pairKernel = asmPair
		KernelName = "avx512"
	}
}

func asmPair(kc int, a, b0, b1, c0, c1 []float64, ldc int, alpha float64, set bool) {
	kernel6x16(kc, &a[0], &b0[0], &b1[0], &c0[0], &c1[0], ldc, alpha, set)
}

func asmKernel(kc int, a, b, c []float64, ldc int, alpha float64, set bool) {
	kernel6x8(kc, &a[0], &b[0], &c[0], ldc, alpha, set)
}

// expKernel is Exp's loop, in exp_amd64.s.
//
//go:noescape
func expKernel(dst, src *float64, groups int, k *ExpConsts) int

func init() { hasExpKernel = KernelName != "go" }

// rootDistKernel is RootDist's loop, in rootdist_amd64.s.
//
//go:noescape
func rootDistKernel(r, t, c, zz *float64, groups int, xi, a float64)

// adamKernel and adamDecayKernel are Adam's loops, in adam_amd64.s.
//
//go:noescape
func adamKernel(x, m, v, grad *float64, groups int, k *AdamConsts)

//go:noescape
func adamDecayKernel(x, m, v *float64, groups int, k *AdamConsts)

// adamKernel512 and adamDecayKernel512 are the same loops eight lanes at a
// time, in adam_amd64.s; used when avx512 is set.
//
//go:noescape
func adamKernel512(x, m, v, grad *float64, groups int, k *AdamConsts)

//go:noescape
func adamDecayKernel512(x, m, v *float64, groups int, k *AdamConsts)

func init() { avx512 = KernelName == "avx512" }

// powKernel512 and powSum2Kernel512 are PowShift's and PowSum2's loops, in
// pow_amd64.s; used when avx512 is set.
//
//go:noescape
func powKernel512(out, x, gr *float64, groups, p int, shift, scale float64, flags int)

//go:noescape
func powSum2Kernel512(out, x, g0, g1 *float64, groups, p0, d int, shift, c0, c1 float64, flags int)

// mulKernel512, mulAddKernel512 and addKernel512 are Mul's, MulAdd's and
// Add's loops, in vec_amd64.s; used when avx512 is set.
//
//go:noescape
func mulKernel512(dst, a, b *float64, groups int)

//go:noescape
func mulAddKernel512(dst, a, b *float64, groups int)

//go:noescape
func addKernel512(dst, a *float64, groups int)

// gather8Kernel512 and gather6Kernel512 are gather8's and gather6's loops
// eight columns at a time (an 8×8 transpose in registers), in
// pack_amd64.s; used when avx512 is set.
//
//go:noescape
func gather8Kernel512(dst *float64, rows *[8]*float64, w *float64, groups int)

//go:noescape
func gather6Kernel512(dst *float64, rows *[6]*float64, groups int)

// strided6Kernel512 copies n groups of six doubles, the g-th from
// src[g·stride:], to dst[6g:], in pack_amd64.s; used when avx512 is set.
//
//go:noescape
func strided6Kernel512(dst, src *float64, stride, n int)

// scaleKernel512 and quadArgKernel512 are Scale's and QuadArg's loops, in
// vec_amd64.s; used when avx512 is set.
//
//go:noescape
func scaleKernel512(dst *float64, v float64, groups int)

//go:noescape
func quadArgKernel512(dst, zz, c *float64, xi float64, groups int)
