package experiments

import (
	"math"
	"sort"
)

// WilcoxonSignedRank is the two-sided p-value of the Wilcoxon signed-rank
// test that the paired differences d have a distribution symmetric about
// zero (zeros dropped, ties given their average rank). Without ties and
// for at most 60 non-zero differences the p-value is exact (the null
// distribution of W+ by dynamic programming over the ranks); otherwise it
// is the normal approximation with the tie correction and a continuity
// correction. n is the number of non-zero differences; with none, p is 1.
func WilcoxonSignedRank(d []float64) (p float64, n int) {
	type obs struct{ abs, sign float64 }
	var o []obs
	for _, x := range d {
		if x != 0 && !math.IsNaN(x) {
			o = append(o, obs{math.Abs(x), math.Copysign(1, x)})
		}
	}
	n = len(o)
	if n == 0 {
		return 1, 0
	}
	sort.Slice(o, func(i, j int) bool { return o[i].abs < o[j].abs })
	ranks := make([]float64, n)
	ties := false
	var tieTerm float64 // Σ (t³ − t) over tie groups
	for i := 0; i < n; {
		j := i
		for j+1 < n && o[j+1].abs == o[i].abs {
			j++
		}
		for k := i; k <= j; k++ {
			ranks[k] = float64(i+j)/2 + 1
		}
		if t := float64(j - i + 1); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j + 1
	}
	var wPlus float64
	for i, ob := range o {
		if ob.sign > 0 {
			wPlus += ranks[i]
		}
	}
	total := float64(n*(n+1)) / 2
	if !ties && n <= 60 {
		// counts[w] = number of sign patterns with W+ = w; all 2^n equally likely.
		counts := make([]float64, int(total)+1)
		counts[0] = 1
		for r := 1; r <= n; r++ {
			for w := int(total); w >= r; w-- {
				counts[w] += counts[w-r]
			}
		}
		lo := math.Min(wPlus, total-wPlus)
		var tail float64
		for w := 0; w <= int(lo); w++ {
			tail += counts[w]
		}
		return math.Min(1, 2*tail/math.Pow(2, float64(n))), n
	}
	return wilcoxonNormal(wPlus, n, tieTerm), n
}

// wilcoxonNormal is the two-sided p-value of W+ by the normal
// approximation, with the tie correction and a continuity correction.
func wilcoxonNormal(wPlus float64, n int, tieTerm float64) float64 {
	mean := float64(n*(n+1)) / 4
	sd := math.Sqrt(float64(n*(n+1)*(2*n+1))/24 - tieTerm/48)
	if sd == 0 {
		return 1
	}
	z := (math.Abs(wPlus-mean) - 0.5) / sd
	if z < 0 {
		z = 0
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}
