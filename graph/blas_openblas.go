//go:build openblas

package graph

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// With the openblas build tag every matrix product, triangular solve and
// Cholesky factorisation in gpc (and in Gorgonia's own ops) calls OpenBLAS
// through cgo instead of gonum's pure-Go BLAS: about ten times faster on
// the MNIST-sized products. Needs libopenblas-dev and
// CGO_LDFLAGS=-lopenblas; see the README.
func init() {
	blas64.Use(netlib.Implementation{})
	G.Use(netlib.Implementation{})
}

// fusedSums is off: every product of a sum goes to OpenBLAS.
const fusedSums = false

// ownTriangular is off: triangular routines go to OpenBLAS.
const ownTriangular = false

// BLAS names the BLAS implementation in use.
var BLAS = "openblas"
