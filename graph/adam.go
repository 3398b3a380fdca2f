package graph

import (
	"math"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// AdamConsts are one Adam step's constants: the moment decays B1 and B2,
// their complements NB1 = 1 − B1 and NB2 = 1 − B2, the bias-corrected step
// Step = lr/(1 − B1ᵗ), RC2 = 1/√(1 − B2ᵗ) and Eps.
type AdamConsts = gemm.AdamConsts

// NewAdamConsts returns the constants of step t (from 1) of Adam with
// learning rate lr, decays b1 and b2 and eps. The bias corrections undo
// the zero start of m and v (without them the early steps would be about
// (1−b1)/√(1−b2) ≈ 3.2 times lr with the default decays); folded into
// Step and RC2 they cost one division and one square root per element
// where lr·m̂/(√v̂ + eps) takes three divisions and one.
func NewAdamConsts(lr, b1, b2, eps float64, t int) AdamConsts {
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	return AdamConsts{B1: b1, NB1: 1 - b1, B2: b2, NB2: 1 - b2, Step: lr / c1, RC2: 1 / math.Sqrt(c2), Eps: eps}
}

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
