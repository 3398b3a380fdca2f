//go:build !openblas

package graph

import (
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// The default build routes every Dgemm (gpc's ops and Gorgonia's own
// products) through gpc's packed AVX2/FMA kernel, 5–7× faster than gonum's
// on the MNIST-sized products, without cgo. All other BLAS routines stay
// gonum's.
func init() {
	blas64.Use(gemm.Implementation{})
	G.Use(gemm.Implementation{})
}

// fusedSums lets a sum of products run as one gemm.DgemmSum.
const fusedSums = true

// ownTriangular lets a triangular solve or product read its right-hand
// side from the input and write the result to its own buffer in one pass
// (gemm.TrsmTo, gemm.TrmmTo) instead of copying it first.
const ownTriangular = true

// BLAS names the BLAS implementation in use: gonum with gpc's Dgemm by
// default ("gonum+gemm/avx2-fma"; plain "gonum" on CPUs without AVX2/FMA
// or with the purego tag), OpenBLAS when built with the openblas tag.
var BLAS = blasName()

func blasName() string {
	if gemm.KernelName == "go" {
		return "gonum"
	}
	return "gonum+gemm/" + gemm.KernelName
}
