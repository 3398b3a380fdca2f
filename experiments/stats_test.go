package experiments

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteWilcoxon enumerates every sign pattern of ranks 1..n.
func bruteWilcoxon(d []float64) float64 {
	n := len(d)
	// ranks of |d| (no ties in the inputs used here)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	rank := make([]float64, n)
	for i := range d {
		r := 1.0
		for j := range d {
			if math.Abs(d[j]) < math.Abs(d[i]) {
				r++
			}
		}
		rank[i] = r
	}
	var w float64
	for i, x := range d {
		if x > 0 {
			w += rank[i]
		}
	}
	total := float64(n*(n+1)) / 2
	obs := math.Min(w, total-w)
	var count float64
	for mask := 0; mask < 1<<n; mask++ {
		var s float64
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				s += float64(i + 1)
			}
		}
		if math.Min(s, total-s) <= obs {
			count++
		}
	}
	return count / math.Pow(2, float64(n))
}

// The exact p-value equals enumeration of all sign patterns, and the
// normal approximation (used with ties or n > 60) is close to it.
func TestWilcoxonSignedRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20; trial++ {
		n := 5 + trial%8
		d := make([]float64, n)
		shift := 0.3 * float64(trial%3)
		for i := range d {
			d[i] = rng.NormFloat64() + shift
		}
		p, m := WilcoxonSignedRank(d)
		if want := bruteWilcoxon(d); m != n || math.Abs(p-want) > 1e-12 {
			t.Fatalf("n=%d: p %g, enumeration %g", n, p, want)
		}
	}
	// A clear shift over 100 paired splits is significant, none is not.
	d := make([]float64, 100)
	for i := range d {
		d[i] = rng.NormFloat64() + 0.5
	}
	if p, _ := WilcoxonSignedRank(d); p > 1e-4 {
		t.Fatalf("shifted: p %g", p)
	}
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	if p, _ := WilcoxonSignedRank(d); p < 0.01 {
		t.Fatalf("unshifted: p %g", p)
	}
	// Ties and zeros: the approximation, zeros dropped.
	p, n := WilcoxonSignedRank([]float64{0, 1, 1, 1, -1, 2, 2, 3, 0, 4, 5, 5})
	if n != 10 || !(p > 0 && p < 0.1) {
		t.Fatalf("tied: p %g over %d", p, n)
	}
	// The approximation against the exact value at n = 40, over W+ values
	// across the distribution.
	for _, w := range []float64{200, 260, 300, 330, 400} {
		const n = 40
		total := float64(n*(n+1)) / 2
		counts := make([]float64, int(total)+1)
		counts[0] = 1
		for r := 1; r <= n; r++ {
			for x := int(total); x >= r; x-- {
				counts[x] += counts[x-r]
			}
		}
		var tail float64
		for x := 0; x <= int(math.Min(w, total-w)); x++ {
			tail += counts[x]
		}
		exact := math.Min(1, 2*tail/math.Pow(2, n))
		if approx := wilcoxonNormal(w, n, 0); math.Abs(approx-exact) > 0.005 {
			t.Fatalf("W+ %g: normal %g, exact %g", w, approx, exact)
		}
	}
}
