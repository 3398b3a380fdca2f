//go:build !openblas

package graph

// BLAS names the BLAS implementation in use: gonum's pure Go by default,
// OpenBLAS when built with the openblas tag.
const BLAS = "gonum"
