// Package gemm is gpc's matrix-multiply kernel: a packed, cache-blocked,
// two-level parallel Dgemm whose inner 6×8 micro-kernel is AVX2/FMA
// assembly on amd64 (portable Go elsewhere or on CPUs without FMA), with
// two adjacent tiles per call in AVX-512 registers where the CPU has them
// (6×16, about 1.6× the AVX2 kernel's rate; GPC_GEMM=avx2 keeps AVX2).
//
// Why it exists: the kernel products K(Z,X), their gradients and the MLP
// layers are ≥80% of a training step on MNIST-sized problems, and gonum's
// pure-Go Dgemm (SSE2 dot/axpy loops) peaks near 3 G multiply-adds/s on
// two cores. Implementation plugs this Dgemm into gonum's blas64 (and
// hence into every gpc op and Gorgonia's own products) without cgo.
// The package also holds gpc's other AVX2 kernel, a four-lane exponential
// (Exp) that shares the CPU detection: the squared-exponential kernel is an
// exponential per entry, and a Monte Carlo prediction evaluates tens of
// millions of them. The purego build tag disables the assembly.
package gemm
