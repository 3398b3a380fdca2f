package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Stream constants make every operation draw from its own PCG stream, so
// that using the same seed for, say, a split and a noise injection does not
// correlate them (PCG's second word selects an independent sequence).
const (
	streamSplit     = 0x5350_4c49_5400_0001 // "SPLIT"
	streamNoise     = 0x4e4f_4953_4500_0002 // "NOISE"
	streamFlip      = 0x464c_4950_0000_0003 // "FLIP"
	streamBootstrap = 0x424f_4f54_0000_0004 // "BOOT"
	streamToyFuncs  = 0x544f_5946_0000_0005 // toy latent functions
	streamToySample = 0x544f_5953_0000_0006 // toy inputs and input noise
	streamSynthX    = 0x5359_4e58_0000_0007 // synthetic inputs
	streamSynthF    = 0x5359_4e46_0000_0008 // synthetic latent functions
	streamOracle    = 0x4f52_4143_0000_0100 // "ORAC": the oracle's Monte Carlo draws (plus a row index)
)

func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// Split returns a random train/test partition of 0..n−1, the papers'
// protocol: the training set is the first floor((1−testFrac)·n) entries of a
// uniformly random permutation and the test set the rest — for testFrac 0.1
// this is the noisy-inputs paper's int(0.9·N) (e.g. glass 192/22), for 1/3
// the robust-classification paper's 2/3–1/3. Both slices are in permutation
// order. A tiny tolerance absorbs floating-point error in (1−testFrac)·n so
// that, e.g., 0.7·10 counts as 7. It panics unless 0 ≤ testFrac ≤ 1, a
// programming error.
func Split(n int, testFrac float64, seed uint64) (train, test []int) {
	if !(testFrac >= 0 && testFrac <= 1) || n < 0 {
		panic(fmt.Sprintf("datasets: Split(n=%d, testFrac=%v): need n ≥ 0 and 0 ≤ testFrac ≤ 1", n, testFrac))
	}
	perm := newRand(seed, streamSplit).Perm(n)
	nTrain := min(n, int(math.Floor((1-testFrac)*float64(n)+1e-9)))
	return perm[:nTrain:nTrain], perm[nTrain:]
}

// Scaler is an affine per-column transform x' = (x − Mean[j]) / Scale[j],
// fitted on training data and applied unchanged to every other set, so no
// test information leaks into preprocessing.
type Scaler struct {
	Mean  []float64 // training column means
	Scale []float64 // training population standard deviations (1 for constant columns)
}

// constantTol decides when a column counts as constant: its standard
// deviation is below 1e-12 times its magnitude (or absolute 1e-12), which
// absorbs the rounding left when a constant column is averaged.
const constantTol = 1e-12

// FitScaler computes the training mean and population standard deviation of
// each column (np.std, as the authors' code uses). A constant column gets
// Scale 1: it is centred but left unscaled, because dividing by ~0 would
// turn rounding noise into huge values (the authors' MNIST code makes the
// same choice; their UCI code has no guard because no UCI column is constant).
func FitScaler(train *Dataset) *Scaler {
	d := train.D
	s := &Scaler{Mean: make([]float64, d), Scale: make([]float64, d)}
	if train.N == 0 {
		for j := range s.Scale {
			s.Scale[j] = 1
		}
		return s
	}
	for i := range train.N {
		for j, v := range train.Row(i) {
			s.Mean[j] += v
		}
	}
	for j := range d {
		s.Mean[j] /= float64(train.N)
	}
	for i := range train.N {
		for j, v := range train.Row(i) {
			dv := v - s.Mean[j]
			s.Scale[j] += dv * dv
		}
	}
	for j := range d {
		sd := math.Sqrt(s.Scale[j] / float64(train.N))
		if sd <= constantTol*math.Max(1, math.Abs(s.Mean[j])) {
			sd = 1
		}
		s.Scale[j] = sd
	}
	return s
}

// Apply returns a standardised copy of ds. Noise variances are divided by
// Scale², the variance of the transformed noise, which is how the
// astrophysics error bars become (error / training std)².
func (s *Scaler) Apply(ds *Dataset) *Dataset {
	if ds.D != len(s.Mean) {
		panic(fmt.Sprintf("datasets: Scaler fitted on %d columns applied to %q with %d", len(s.Mean), ds.Name, ds.D))
	}
	out := ds.Clone()
	for i := range out.N {
		row := out.Row(i)
		for j := range row {
			row[j] = (row[j] - s.Mean[j]) / s.Scale[j]
		}
		if nr := out.NoiseRow(i); nr != nil {
			for j := range nr {
				nr[j] /= s.Scale[j] * s.Scale[j]
			}
		}
	}
	return out
}

// Standardize fits a Scaler on train (mean and population standard
// deviation per column; constant columns centred but left unscaled) and
// applies it to train and to each of others. It returns the standardised
// copies — result[0] is train, result[k] is others[k−1] — and the Scaler, so
// later data (e.g. an active-learning pool) can be transformed the same way.
// The inputs are not modified.
func Standardize(train *Dataset, others ...*Dataset) ([]*Dataset, *Scaler) {
	s := FitScaler(train)
	out := make([]*Dataset, 0, 1+len(others))
	out = append(out, s.Apply(train))
	for _, o := range others {
		out = append(out, s.Apply(o))
	}
	return out, s
}

// AddInputNoise returns a copy of ds with independent Gaussian noise of the
// given variance added to every input, x̃ = x + N(0, variance), and records
// the variance in Noise (added to any variance already there, since
// independent noises add). This is the papers' noise injection; apply it
// after Standardize, as the noisy-inputs paper does, so the variance is in
// standardised units. Variance 0 returns an exact copy with Noise set to
// zeros. It panics on a negative or non-finite variance.
func AddInputNoise(ds *Dataset, variance float64, seed uint64) *Dataset {
	if !(variance >= 0) || math.IsInf(variance, 0) {
		panic(fmt.Sprintf("datasets: AddInputNoise: variance %v must be finite and ≥ 0", variance))
	}
	out := ds.Clone()
	if out.Noise == nil {
		out.Noise = make([]float64, len(out.X))
	}
	r := newRand(seed, streamNoise)
	sd := math.Sqrt(variance)
	for k := range out.X {
		out.X[k] += sd * r.NormFloat64()
		out.Noise[k] += variance
	}
	return out
}

// FlipLabels returns a copy of ds in which round(frac·N) distinct rows,
// chosen uniformly at random, get a label drawn uniformly from all C
// classes. This is the label-noise protocol of the robust-classification
// paper (Hernández-Lobato et al. 2011, §4.1: "the labels of η of the
// training instances are selected uniformly at random from C"; see
// shared/docs/rmgpc-ep-hernandez-lobato2011.md §4.0 and ambiguity 9): the new
// label may equal the old one, so the expected fraction of labels that
// actually change is frac·(C−1)/C. Apply it to training sets only. It panics
// unless 0 ≤ frac ≤ 1.
func FlipLabels(ds *Dataset, frac float64, seed uint64) *Dataset {
	out, _ := FlipLabelsWithIndices(ds, frac, seed)
	return out
}

// FlipLabelsWithIndices is FlipLabels that also returns the rows whose
// labels were redrawn (whether or not the draw changed them), for
// experiments that report which points were corrupted.
func FlipLabelsWithIndices(ds *Dataset, frac float64, seed uint64) (*Dataset, []int) {
	if !(frac >= 0 && frac <= 1) {
		panic(fmt.Sprintf("datasets: FlipLabels: fraction %v must be in [0,1]", frac))
	}
	out := ds.Clone()
	k := int(math.Round(frac * float64(ds.N)))
	r := newRand(seed, streamFlip)
	idx := r.Perm(ds.N)[:k]
	for _, i := range idx {
		out.Y[i] = r.IntN(ds.C)
	}
	return out, idx
}

// Bootstrap returns the mean of values and its bootstrap standard error: the
// standard deviation of the means of reps resamples (with replacement, same
// size). The noisy-inputs paper's Table 1 reports its error bars this way.
// reps ≤ 0 means 1000. An empty input gives (NaN, NaN): there is no mean.
func Bootstrap(values []float64, reps int, seed uint64) (mean, stderr float64) {
	n := len(values)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	if reps <= 0 {
		reps = 1000
	}
	for _, v := range values {
		mean += v
	}
	mean /= float64(n)
	r := newRand(seed, streamBootstrap)
	means := make([]float64, reps)
	var mb float64
	for b := range means {
		var m float64
		for range n {
			m += values[r.IntN(n)]
		}
		means[b] = m / float64(n)
		mb += means[b]
	}
	mb /= float64(reps)
	if reps == 1 {
		return mean, 0
	}
	var v float64
	for _, m := range means {
		v += (m - mb) * (m - mb)
	}
	return mean, math.Sqrt(v / float64(reps-1))
}
