//go:build !amd64 || purego

package gemm

func expKernel(dst, src *float64, groups int, k *ExpConsts) int { return 0 }

func rootDistKernel(r, t, c, zz *float64, groups int, xi, a float64) {}

func adamKernel(x, m, v, grad *float64, groups int, k *AdamConsts) {}

func adamDecayKernel(x, m, v *float64, groups int, k *AdamConsts) {}

func adamKernel512(x, m, v, grad *float64, groups int, k *AdamConsts) {}

func adamDecayKernel512(x, m, v *float64, groups int, k *AdamConsts) {}

func powKernel512(out, x, gr *float64, groups, p int, shift, scale float64, flags int) {}

func powSum2Kernel512(out, x, g0, g1 *float64, groups, p0, d int, shift, c0, c1 float64, flags int) {
}

func mulKernel512(dst, a, b *float64, groups int) {}

func mulAddKernel512(dst, a, b *float64, groups int) {}

func addKernel512(dst, a *float64, groups int) {}

func gather8Kernel512(dst *float64, rows *[8]*float64, w *float64, groups int) {}

func gather6Kernel512(dst *float64, rows *[6]*float64, groups int) {}

func strided6Kernel512(dst, src *float64, stride, n int) {}

func scaleKernel512(dst *float64, v float64, groups int) {}

func quadArgKernel512(dst, zz, c *float64, xi float64, groups int) {}
