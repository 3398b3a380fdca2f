package mcmc

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/stat/distuv"
)

// RHat is the rank-normalised split-R̂ of Vehtari, Gelman, Simpson,
// Carpenter and Bürkner (2021) of one quantity's draws, one slice per chain
// (equal lengths; at least 4 draws each): the larger of the bulk R̂ (of the
// rank-normalised draws) and the tail R̂ (of the rank-normalised distances
// from the median). Values near 1 mean the chains agree; 1.01 is the
// threshold the paper recommends.
func RHat(chains [][]float64) float64 {
	split := splitChains(chains)
	if split == nil {
		return math.NaN()
	}
	bulk := rhatOf(rankNormalize(split))
	med := median(split)
	folded := make([][]float64, len(split))
	for i, c := range split {
		folded[i] = make([]float64, len(c))
		for j, v := range c {
			folded[i][j] = math.Abs(v - med)
		}
	}
	tail := rhatOf(rankNormalize(folded))
	return math.Max(bulk, tail)
}

// BulkESS is the bulk effective sample size of Vehtari et al. (2021): the
// effective size of the rank-normalised split chains, with Geyer's initial
// monotone sequence truncating the autocorrelations.
func BulkESS(chains [][]float64) float64 {
	split := splitChains(chains)
	if split == nil {
		return math.NaN()
	}
	return essOf(rankNormalize(split))
}

// splitChains halves each chain (dropping a middle draw of an odd length),
// nil when a chain has fewer than 4 draws.
func splitChains(chains [][]float64) [][]float64 {
	n := math.MaxInt
	for _, c := range chains {
		n = min(n, len(c))
	}
	if len(chains) == 0 || n < 4 {
		return nil
	}
	h := n / 2
	out := make([][]float64, 0, 2*len(chains))
	for _, c := range chains {
		c = c[:n]
		out = append(out, c[:h], c[n-h:])
	}
	return out
}

// rankNormalize replaces the pooled draws by Φ⁻¹((r − 3/8)/(S + 1/4)) of
// their ranks r (ties share their average rank).
func rankNormalize(chains [][]float64) [][]float64 {
	type item struct {
		v    float64
		c, j int
	}
	var all []item
	for c, ch := range chains {
		for j, v := range ch {
			all = append(all, item{v, c, j})
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].v < all[b].v })
	S := float64(len(all))
	out := make([][]float64, len(chains))
	for c, ch := range chains {
		out[c] = make([]float64, len(ch))
	}
	norm := distuv.UnitNormal
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		r := float64(i+j+1) / 2 // average 1-based rank of the tie
		z := norm.Quantile((r - 3.0/8) / (S + 0.25))
		for k := i; k < j; k++ {
			out[all[k].c][all[k].j] = z
		}
		i = j
	}
	return out
}

func median(chains [][]float64) float64 {
	var all []float64
	for _, c := range chains {
		all = append(all, c...)
	}
	sort.Float64s(all)
	n := len(all)
	if n%2 == 1 {
		return all[n/2]
	}
	return 0.5 * (all[n/2-1] + all[n/2])
}

func meanVar(x []float64) (m, v float64) {
	for _, a := range x {
		m += a
	}
	m /= float64(len(x))
	for _, a := range x {
		v += (a - m) * (a - m)
	}
	return m, v / float64(len(x)-1)
}

// rhatOf is the classic R̂ = √(var⁺/W) of equal-length chains.
func rhatOf(chains [][]float64) float64 {
	m, n := float64(len(chains)), float64(len(chains[0]))
	means := make([]float64, len(chains))
	var W float64
	for i, c := range chains {
		mu, v := meanVar(c)
		means[i] = mu
		W += v
	}
	W /= m
	_, B := meanVar(means)
	B *= n
	if W == 0 {
		if B == 0 {
			return 1
		}
		return math.Inf(1)
	}
	vp := (n-1)/n*W + B/n
	return math.Sqrt(vp / W)
}

// essOf is the effective sample size of equal-length chains (Stan's
// estimator: the chains' combined autocorrelation ρ̂_t = 1 − (W − mean of
// the chains' autocovariances at lag t)/var⁺, summed in pairs while the
// pairs stay positive and made monotone).
func essOf(chains [][]float64) float64 {
	m, n := len(chains), len(chains[0])
	means := make([]float64, m)
	vars := make([]float64, m)
	for i, c := range chains {
		means[i], vars[i] = meanVar(c)
	}
	var W float64
	for _, v := range vars {
		W += v
	}
	W /= float64(m)
	_, B := meanVar(means)
	varPlus := W*float64(n-1)/float64(n) + B
	if m == 1 {
		varPlus = W * float64(n-1) / float64(n)
	}
	if !(varPlus > 0) {
		return float64(m * n)
	}
	// The chains' mean autocovariance at every lag (biased, divided by n,
	// as Stan's), by FFT: a sticky chain needs lags up to n, which direct
	// sums would make O(n²) per quantity.
	acov := make([]float64, n)
	for i, c := range chains {
		for t, a := range autocovariance(c, means[i]) {
			acov[t] += a / float64(m)
		}
	}
	rho := func(t int) float64 { return 1 - (W-acov[t])/varPlus }
	// Geyer: P_k = ρ_{2k} + ρ_{2k+1}, summed while positive, monotone.
	sum := 0.0
	prev := math.Inf(1)
	var last float64
	t := 0
	for ; t+1 < n; t += 2 {
		var p float64
		if t == 0 {
			p = 1 + rho(1)
		} else {
			p = rho(t) + rho(t+1)
		}
		if p < 0 {
			break
		}
		p = math.Min(p, prev)
		prev = p
		sum += p
		last = p
	}
	_ = last
	tau := -1 + 2*sum
	tau = math.Max(tau, 1/math.Log10(float64(m*n)))
	return float64(m*n) / tau
}

// autocovariance returns Σ_j (x_j − mean)(x_{j+t} − mean)/n for every lag t.
func autocovariance(x []float64, mean float64) []float64 {
	n := len(x)
	size := 1
	for size < 2*n {
		size *= 2
	}
	buf := make([]float64, size)
	for i, v := range x {
		buf[i] = v - mean
	}
	fft := fourier.NewFFT(size)
	coef := fft.Coefficients(nil, buf)
	for i, c := range coef {
		coef[i] = complex(real(c)*real(c)+imag(c)*imag(c), 0)
	}
	back := fft.Sequence(nil, coef)
	out := make([]float64, n)
	for t := range out {
		out[t] = back[t] / float64(size) / float64(n)
	}
	return out
}
