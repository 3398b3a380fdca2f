//go:build !amd64 || purego

package gemm

func expKernel(dst, src *float64, groups int, k *ExpConsts) int { return 0 }
