//go:build !purego

package gemm

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

func init() {
	if hasAVX2FMA() {
		microKernel = asmKernel
		KernelName = "avx2-fma"
	}
}

func asmKernel(kc int, a, b, c []float64, ldc int, alpha float64, set bool) {
	kernel6x8(kc, &a[0], &b[0], &c[0], ldc, alpha, set)
}

// expKernel is Exp's loop, in exp_amd64.s.
//
//go:noescape
func expKernel(dst, src *float64, groups int, k *ExpConsts) int

func init() { hasExpKernel = KernelName != "go" }
