package local

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/graph"
)

// The closed-form settle moves every element as taking the owed steps one
// by one does, to 1e-13 of the move (from x = 0: from elsewhere the steps'
// rounding of x is larger than the move's error), in both series' regimes and between
// them (where it takes them one by one), for few and many owed steps, early
// in training (large bias corrections) and late, and across the limit of
// the remembered step constants.
func TestClosedSettleMatchesSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const width = 400
	closed := 0 // elements whose move differs in its bits from the steps'
	for _, c := range []struct{ from, to int }{
		{1, 9}, {3, 40}, {1, 395}, {1, 2000}, {10, 310}, {500, 800}, {2000, 2450}, {100, 100 + recentSteps + 300},
	} {
		r := NewRowAdam(0.01, 1, width)
		r.Dense = true
		// The constants of the last recentSteps steps remembered, as
		// training leaves them; older ones are computed afresh.
		r.recent = make([]graph.AdamConsts, recentSteps)
		r.recentFrom = 1
		for s := 1; s <= c.to; s++ {
			r.steps = s
			r.recent[s%recentSteps] = graph.NewAdamConsts(r.lr, r.b1, r.b2, r.eps, s)
		}
		x := make([]float64, width)
		m := make([]float64, width)
		v := make([]float64, width)
		// x starts at 0, so that the move is not lost in the rounding of x.
		for k := range x {
			m[k] = rng.NormFloat64() * math.Pow(10, -8*rng.Float64())
			// √v from 1e-22 to 1e2: ε = 1e-8 sits in the middle.
			v[k] = math.Pow(10, -44+48*rng.Float64())
		}
		m[0], v[1], m[2], v[2] = 0, 0, 0, 0
		xs, ms, vs := append([]float64(nil), x...), append([]float64(nil), m...), append([]float64(nil), v...)
		r.settleSteps(xs, ms, vs, c.from, c.to)
		xc, mc, vc := append([]float64(nil), x...), append([]float64(nil), m...), append([]float64(nil), v...)
		r.settleClosed(xc, mc, vc, c.from, c.to)
		regimes := map[string]int{}
		for k := range x {
			s := math.Sqrt(v[k])
			switch {
			case s > 1e4*r.eps:
				regimes["large"]++
			case s < 1e-6*r.eps:
				regimes["small"]++
			case s > 1e-3*r.eps && s < 1e3*r.eps:
				regimes["between"]++
			}
			move := xs[k] - x[k]
			if math.Float64bits(xc[k]) != math.Float64bits(xs[k]) {
				closed++
			}
			if d := math.Abs((xc[k] - x[k]) - move); d > 1e-13*math.Abs(move)+1e-300 {
				t.Fatalf("steps %d..%d, element %d (m %g, √v %g): moved %g in closed form, %g step by step", c.from, c.to, k, m[k], s, xc[k]-x[k], move)
			}
			// Step by step a moment takes a rounding a step; in closed form, one.
			for _, q := range [][2]float64{{mc[k], ms[k]}, {vc[k], vs[k]}} {
				if d := math.Abs(q[0] - q[1]); d > 2.3e-16*float64(c.to-c.from)*math.Abs(q[1]) {
					t.Fatalf("steps %d..%d, element %d: moment %g in closed form, %g step by step", c.from, c.to, k, q[0], q[1])
				}
			}
		}
		if regimes["large"] < 20 || regimes["small"] < 20 || regimes["between"] < 20 {
			t.Fatalf("the elements do not cover the regimes: %v", regimes)
		}
	}
	// Equal bits everywhere would mean the closed form never ran.
	if closed < 1000 {
		t.Fatalf("only %d moves differ in their bits from the steps': the closed form hardly ran", closed)
	}
}

// With moment decays whose weights fall too slowly for a short sum (β1 =
// 0.99), the owed steps are taken one by one: the same bits as the steps.
func TestClosedSettleSlowDecay(t *testing.T) {
	r := newRowAdam(0.01, 0.99, 0.999, 1e-8, 5)
	r.steps = 300
	x, m, v := []float64{0, 0, 0, 0, 0}, []float64{1, -2, 3e-3, 0, 5}, []float64{1, 4e-20, 1e-6, 1, 0}
	xs, ms, vs := append([]float64(nil), x...), append([]float64(nil), m...), append([]float64(nil), v...)
	r.settleSteps(xs, ms, vs, 10, 300)
	r.settleClosed(x, m, v, 10, 300)
	for k := range x {
		if math.Float64bits(x[k]) != math.Float64bits(xs[k]) || m[k] != ms[k] || v[k] != vs[k] {
			t.Fatalf("element %d: (%v, %v, %v) against the steps' (%v, %v, %v)", k, x[k], m[k], v[k], xs[k], ms[k], vs[k])
		}
	}
	if n, ok := NewRowAdam(0.01, 1, 1).closedTerms(); !ok || n < 300 || n > 450 {
		t.Fatalf("Adam's defaults sum %d steps (%v), want a few hundred", n, ok)
	}
}
