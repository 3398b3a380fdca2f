package local

import (
	"math"
	"sync"

	"github.com/gpc-dev/gpc/graph"
)

// The zero-gradient steps a row owes are applied in closed form when there
// are many. From its state (x, m, v) after step f, Adam's step t = f+j
// with a zero gradient moves an element by
//
//	m·A_t / (B_t·√v + ε),  A_t = lr/(1−β1ᵗ)·β1ʲ,  B_t = β2^(j/2)/√(1−β2ᵗ),
//
// and scales m by β1 and v by β2. Summed over the steps owed, the move is
// a function of √v alone, which a series in ε/√v (when √v ≫ ε) or in √v/ε
// (when √v ≪ ε) gives from eight weights per series, shared by the row's
// elements: one square root and one division an element instead of one of
// each per element and step. On NIMGP's MNIST table (60 000 rows of 1 568
// values, a row read once an epoch of 300 steps) applying the steps one by
// one was half of the training time.
//
// The elements in neither regime (√v within two orders of magnitude of ε
// either side, from gradients of magnitude 1e-9 to 1e-5) take the steps one
// by one, gathered into one vector. The closed form is exact in real
// arithmetic; in floating point it differs from the
// steps taken one by one by rounding (relative 1e-13 at most on the move,
// TestClosedSettleMatchesSteps), which is why a checkpoint saves the rows
// unsettled (State): a resumed fit settles them at the same steps as an
// uninterrupted one, and so ends bit for bit where it does.

// closedMin is the fewest owed steps settled in closed form; fewer are
// taken one by one, which then costs less than the weights.
const closedMin = 8

// closedTermsOf is how many steps the weights sum. The terms of weight p
// fall like rate_p^j, rate_p = β1/β2^((p+1)/2), times a bias correction
// that grows early in training (by at most 1e12 over the first thousand
// steps): with the slowest, rate = rate_7 (0.904 for β1 = 0.9, β2 = 0.999:
// 387 steps), the tail dropped is below 1e-11 of each weight's largest
// term, and weight p enters the move multiplied by (ε/√v)^p ≤ 1e-2p or
// (√v/ε)^p, so the move's error stays below 1e-13
// (TestClosedSettleMatchesSteps, from step 1 on). Decays too slow for the
// sum to end soon (rate above 0.95, not Adam's defaults) take the steps
// one by one.
func closedTermsOf(b1, b2 float64) int {
	rate := b1 / math.Pow(b2, seriesTerms/2)
	if !(rate < 0.95) {
		return 0
	}
	return int(math.Ceil(math.Log(1e-17) / math.Log(rate)))
}

// closedTerms returns closedTermsOf the optimiser's decays, and whether
// the closed form applies to them.
func (r *RowAdam) closedTerms() (int, bool) { return r.terms, r.terms > 0 }

// seriesTerms is the number of terms of each series, and seriesTol the
// largest ratio of consecutive terms it is used at: the truncation error
// is then below seriesTol^seriesTerms = 1e-16 of the move.
const (
	seriesTerms = 8
	seriesTol   = 1e-2
)

// decay holds the weights of the steps from+1..to for a row's elements.
type decay struct {
	// large[p] = Σ A_t/B_t^(p+1), the series in ε/√v; small[p] = Σ A_t·B_t^p,
	// the series in √v/ε.
	large, small [seriesTerms]float64
	// bMin and bMax bound B_t over the steps summed.
	bMin, bMax float64
	// p1 and p2 are β1 and β2 to the number of steps.
	p1, p2 float64
}

// decayOver returns the weights of the zero-gradient steps from+1..to.
func (r *RowAdam) decayOver(from, to, terms int) decay {
	d := decay{bMin: math.Inf(1)}
	rb2 := math.Sqrt(r.b2)
	pb1, pr := 1.0, 1.0
	for t := from + 1; t <= min(to, from+terms); t++ {
		pb1 *= r.b1
		pr *= rb2
		k := r.consts(t)
		a, b := k.Step*pb1, pr*k.RC2
		d.bMin, d.bMax = min(d.bMin, b), max(d.bMax, b)
		ib := 1 / b
		l, s := a*ib, a
		for p := range seriesTerms {
			d.large[p] += l
			d.small[p] += s
			l *= ib
			s *= b
		}
	}
	n := float64(to - from)
	d.p1, d.p2 = math.Pow(r.b1, n), math.Pow(r.b2, n)
	return d
}

// settleClosed applies the zero-gradient steps from+1..to to a row's
// values x with moments m and v.
func (r *RowAdam) settleClosed(x, m, v []float64, from, to int) {
	terms, ok := r.closedTerms()
	if !ok {
		r.settleSteps(x, m, v, from, to)
		return
	}
	d := r.decayOver(from, to, terms)
	eps := r.eps
	largeAt, smallAt := seriesTol*d.bMin, seriesTol/d.bMax
	l, sm := d.large, d.small
	var between *scratch
	for c, mc := range m[:len(x)] {
		vc := v[c]
		s := math.Sqrt(vc)
		switch {
		case eps <= largeAt*s:
			is := 1 / s
			u := eps * is
			x[c] -= mc * is * horner(&l, u)
		case mc == 0:
			// No momentum: x stays.
		case s <= smallAt*eps:
			x[c] -= mc / eps * horner(&sm, s/eps)
		default:
			if between == nil {
				between = scratches.Get().(*scratch)
				between.reset()
			}
			between.add(c, x[c], mc, vc)
			continue
		}
		m[c], v[c] = mc*d.p1, vc*d.p2
	}
	if between != nil {
		// Gathered, the elements in neither regime take the steps as one
		// vector.
		b := between
		r.settleSteps(b.x, b.m, b.v, from, to)
		for k, c := range b.at {
			x[c], m[c], v[c] = b.x[k], b.m[k], b.v[k]
		}
		scratches.Put(b)
	}
}

// horner is Σ_p (−u)^p w[p], written out for the compiler.
func horner(w *[seriesTerms]float64, u float64) float64 {
	return w[0] - u*(w[1]-u*(w[2]-u*(w[3]-u*(w[4]-u*(w[5]-u*(w[6]-u*w[7]))))))
}

// scratch gathers a row's elements in neither regime.
type scratch struct {
	at      []int
	x, m, v []float64
}

func (s *scratch) reset() {
	s.at, s.x, s.m, s.v = s.at[:0], s.x[:0], s.m[:0], s.v[:0]
}

func (s *scratch) add(c int, x, m, v float64) {
	s.at = append(s.at, c)
	s.x, s.m, s.v = append(s.x, x), append(s.m, m), append(s.v, v)
}

// scratches are reused across settles, which run on several cores at once.
var scratches = sync.Pool{New: func() any { return new(scratch) }}

// settleSteps applies the zero-gradient steps from+1..to one by one.
func (r *RowAdam) settleSteps(x, m, v []float64, from, to int) {
	for s := from + 1; s <= to; s++ {
		graph.AdamUpdate(x, m, v, nil, r.consts(s))
	}
}
