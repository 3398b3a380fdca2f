package graph

import "github.com/gpc-dev/gpc/graph/internal/gemm"

// AdamConsts are one Adam step's constants: the moment decays B1 and B2,
// their complements NB1 = 1 − B1 and NB2 = 1 − B2, the bias-corrected step
// Step = lr/(1 − B1ᵗ), RC2 = 1/√(1 − B2ᵗ) and Eps.
type AdamConsts = gemm.AdamConsts

// AdamUpdate applies one Adam step to each element of x, with moments m
// and v and gradient g, or a zero gradient when g is nil (a per-row
// parameter outside the minibatch):
//
//	m ← B1·m + NB1·g,  v ← B2·v + (NB2·g)·g,  x ← x − (Step·m)/(√v·RC2 + Eps)
//
// m, v and a non-nil g must be at least as long as x. It is the optimisers'
// one update loop (solvers.Adam, the per-row tables of layers/local): with
// AVX2 four elements go at a time, bit for bit the scalar loop, as the
// square root and division were most of the update's time.
func AdamUpdate(x, m, v, g []float64, k *AdamConsts) { gemm.Adam(x, m, v, g, k) }
