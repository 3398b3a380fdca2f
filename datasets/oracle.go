package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// SyntheticOracle is what the generator of a synthetic problem knows and a
// classifier must learn: the latent functions everywhere in the box, and so
// the Bayes-optimal predictive p(y | x̃) for an input x̃ observed through
// Gaussian noise. Its error and negative log-likelihood on a test set are
// the floor under every method's (the paper's Tables 2/3 read beside it say
// how far from optimal a method is, and how hard a problem is).
//
// The functions were drawn at the problem's n points only; between them the
// oracle uses the GP posterior mean given the draw, k(x, X)(K + jI)⁻¹ f,
// which interpolates f (within the sampler's jitter j) and is the
// draw's most probable continuation. With x ~ U[−Box, Box]^D and
// x̃ | x ~ N(x, V·I), p(x | x̃) ∝ N(x̃ | x, V·I) on the box, and
// p(y = c | x̃) is that posterior's mass where argmax_k f_k(x) = c.
//
// An oracle is safe for concurrent use.
type SyntheticOracle struct {
	// D and C are the problem's input dimension and number of classes.
	D, C int
	// Box is the half-width of the input box.
	Box   float64
	x     []float64   // the n sampled inputs, n×D
	alpha [][]float64 // C vectors (K + jI)⁻¹ f_c
	amp   float64
	sqLs  float64
	seed  uint64

	once   sync.Once
	labels []uint8 // argmax labels at the centres of the quadrature cells (D ≤ 2)
}

// oracleCells is the number of quadrature cells per dimension of the box
// for D ≤ 2: a 5-wide box in cells of 0.025, a fiftieth of the paper's
// length-scale √2. TestOracleCellsConverge bounds the change of the Bayes
// error and NLL when the cells are halved.
var oracleCells = 200

// oracleSamples is the number of Monte Carlo draws from p(x | x̃) per test
// input for D > 2, where a grid over the box would be too large.
const oracleSamples = 2000

// Latent writes f_c(x) for every class into out: x of length D, out of
// length C.
func (o *SyntheticOracle) Latent(x, out []float64) error {
	if len(x) != o.D || len(out) != o.C {
		return fmt.Errorf("datasets: SyntheticOracle.Latent: input of %d values and output of %d, want %d and %d", len(x), len(out), o.D, o.C)
	}
	o.latent(x, out)
	return nil
}

// latent is Latent without the checks.
func (o *SyntheticOracle) latent(x, out []float64) {
	clear(out)
	d := o.D
	n := len(o.x) / d
	for i := range n {
		xi := o.x[i*d : (i+1)*d]
		var s float64
		for j, v := range x {
			t := v - xi[j]
			s += t * t
		}
		k := o.amp * math.Exp(-0.5*s/o.sqLs)
		for c := range out {
			out[c] += k * o.alpha[c][i]
		}
	}
}

// Label returns argmax_c f_c(x) for an x of length D, the lowest class on
// ties (the generator's labelling rule).
func (o *SyntheticOracle) Label(x []float64) (int, error) {
	if len(x) != o.D {
		return 0, fmt.Errorf("datasets: SyntheticOracle.Label: input of %d values, want %d", len(x), o.D)
	}
	return o.label(x), nil
}

func (o *SyntheticOracle) label(x []float64) int {
	f := make([]float64, o.C)
	o.latent(x, f)
	return argmaxOf(f)
}

func argmaxOf(f []float64) int {
	best := 0
	for c := 1; c < len(f); c++ {
		if f[c] > f[best] {
			best = c
		}
	}
	return best
}

// BayesProbs writes p(y = c | x̃) into out (length C) for an input x̃
// observed with noise of variance noiseVar in every dimension. For D ≤ 2
// the posterior's mass on each label is summed over square cells (each
// cell's mass exact, a product of normal-CDF differences; its label read
// at its centre); for D > 2 it is estimated from oracleSamples draws of the
// truncated posterior (r; nil means a stream fixed by the problem and x̃),
// with half a draw added to every class so that no probability is zero.
// With noiseVar = 0, or x̃ so far outside the box that the posterior's mass
// underflows, x̃ is the nearest point of the box and out is one-hot.
func (o *SyntheticOracle) BayesProbs(xt []float64, noiseVar float64, out []float64, r *rand.Rand) error {
	if len(xt) != o.D || len(out) != o.C {
		return fmt.Errorf("datasets: SyntheticOracle.BayesProbs: input of %d values and output of %d, want %d and %d", len(xt), len(out), o.D, o.C)
	}
	if !(noiseVar >= 0) || math.IsInf(noiseVar, 0) {
		return fmt.Errorf("datasets: SyntheticOracle.BayesProbs: noise variance %v must be finite and ≥ 0", noiseVar)
	}
	for j, v := range xt {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("datasets: SyntheticOracle.BayesProbs: input %d is %v", j, v)
		}
	}
	clear(out)
	if noiseVar > 0 {
		var ok bool
		if o.D <= 2 {
			ok = o.gridProbs(xt, math.Sqrt(noiseVar), out)
		} else {
			if r == nil {
				r = newRand(o.seed, streamOracle^math.Float64bits(xt[0]))
			}
			ok = o.sampleProbs(xt, math.Sqrt(noiseVar), out, r)
		}
		if ok {
			return nil
		}
		clear(out)
	}
	p := make([]float64, o.D)
	for j, v := range xt {
		p[j] = min(max(v, -o.Box), o.Box)
	}
	out[o.label(p)] = 1
	return nil
}

// gridProbs is BayesProbs for D ≤ 2 by cells; false if the mass underflows.
func (o *SyntheticOracle) gridProbs(xt []float64, sd float64, out []float64) bool {
	o.once.Do(o.buildLabels)
	clear(out)
	nc := oracleCells
	h := 2 * o.Box / float64(nc)
	mass := make([][]float64, o.D)
	lo, hi := make([]int, o.D), make([]int, o.D)
	for j := range o.D {
		mass[j] = make([]float64, nc)
		// Cells beyond 9 standard deviations hold under 1e-19 of the mass.
		lo[j] = max(0, int(math.Floor((xt[j]-9*sd+o.Box)/h)))
		hi[j] = min(nc, int(math.Ceil((xt[j]+9*sd+o.Box)/h)))
		for i := lo[j]; i < hi[j]; i++ {
			a := -o.Box + float64(i)*h
			mass[j][i] = normMass((a-xt[j])/sd, (a+h-xt[j])/sd)
		}
	}
	var total float64
	if o.D == 1 {
		for i := lo[0]; i < hi[0]; i++ {
			out[o.labels[i]] += mass[0][i]
		}
	} else {
		for i := lo[0]; i < hi[0]; i++ {
			row := o.labels[i*nc : (i+1)*nc]
			mi := mass[0][i]
			for k := lo[1]; k < hi[1]; k++ {
				out[row[k]] += mi * mass[1][k]
			}
		}
	}
	for _, v := range out {
		total += v
	}
	if !(total > 0) {
		return false
	}
	for c := range out {
		out[c] /= total
	}
	return true
}

// buildLabels labels the centres of the D ≤ 2 quadrature cells.
func (o *SyntheticOracle) buildLabels() {
	nc := oracleCells
	h := 2 * o.Box / float64(nc)
	centre := func(i int) float64 { return -o.Box + (float64(i)+0.5)*h }
	f := make([]float64, o.C)
	if o.D == 1 {
		o.labels = make([]uint8, nc)
		for i := range nc {
			o.latent([]float64{centre(i)}, f)
			o.labels[i] = uint8(argmaxOf(f))
		}
		return
	}
	o.labels = make([]uint8, nc*nc)
	p := make([]float64, 2)
	for i := range nc {
		for k := range nc {
			p[0], p[1] = centre(i), centre(k)
			o.latent(p, f)
			o.labels[i*nc+k] = uint8(argmaxOf(f))
		}
	}
}

// sampleProbs is BayesProbs for D > 2 by Monte Carlo: each coordinate of x
// is drawn from its normal posterior truncated to [−Box, Box] (the box and
// the noise are products over dimensions) by inverting the CDF.
func (o *SyntheticOracle) sampleProbs(xt []float64, sd float64, out []float64, r *rand.Rand) bool {
	lo, hi := make([]float64, o.D), make([]float64, o.D)
	for j, v := range xt {
		lo[j] = normCDF((-o.Box - v) / sd)
		hi[j] = normCDF((o.Box - v) / sd)
		if !(hi[j] > lo[j]) {
			return false
		}
	}
	x, f := make([]float64, o.D), make([]float64, o.C)
	clear(out)
	for range oracleSamples {
		for j, v := range xt {
			u := lo[j] + (hi[j]-lo[j])*r.Float64()
			x[j] = min(max(v+sd*math.Sqrt2*math.Erfinv(2*u-1), -o.Box), o.Box)
		}
		o.latent(x, f)
		out[argmaxOf(f)]++
	}
	for c := range out {
		out[c] = (out[c] + 0.5) / (oracleSamples + 0.5*float64(o.C))
	}
	return true
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// BayesPredictive returns the N×C row-major Bayes-optimal probabilities
// p(y | x̃_i) for the rows of ds (noisy inputs of this problem), each
// observed with noise of variance noiseVar.
func (o *SyntheticOracle) BayesPredictive(ds *Dataset, noiseVar float64) ([]float64, error) {
	if ds.D != o.D || ds.C != o.C {
		return nil, fmt.Errorf("datasets: SyntheticOracle.BayesPredictive: data of D = %d, C = %d for a problem of D = %d, C = %d", ds.D, ds.C, o.D, o.C)
	}
	if ds.N < 0 || len(ds.X) != ds.N*ds.D {
		return nil, fmt.Errorf("datasets: SyntheticOracle.BayesPredictive: %d input values for N = %d rows of D = %d", len(ds.X), ds.N, ds.D)
	}
	out := make([]float64, ds.N*o.C)
	for i := range ds.N {
		r := newRand(o.seed, streamOracle+uint64(i))
		if err := o.BayesProbs(ds.X[i*o.D:(i+1)*o.D], noiseVar, out[i*o.C:(i+1)*o.C], r); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	return out, nil
}
