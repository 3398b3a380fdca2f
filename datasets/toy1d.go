package datasets

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Toy1DConfig describes the 1-D toy problem of the noisy-inputs paper
// (§5.1, Figures 1–2, Table 1).
//
// The paper says the three latent functions are drawn from the GP prior
// "using specific hyper-parameter values" but never gives them (both
// versions; see shared/docs/noisy-inputs-paper-versions-and-tables.md, T1),
// and the authors' repository has no script for this experiment. §5.2 says
// its 2-D problems are generated "as in the case of the one-dimensional data
// set" with σ² = 0.5, σ0² = 0, ℓ_j = 2, so those values are the defaults
// here. With noise-free argmax labels the amplitude does not change the
// labels; only the length-scale does, and ℓ = 2 (length-scale √2) gives
// about three class boundaries in [−3, 3], consistent with the ≈0.125 test
// error of Table 1 at input-noise variance 0.1.
type Toy1DConfig struct {
	Classes       int     // number of classes / latent functions (paper: 3)
	Lo, Hi        float64 // inputs are uniform on [Lo, Hi] (paper: [−3, 3])
	GridLo        float64 // the latent functions are drawn on a grid over [GridLo, GridHi] ⊇ [Lo, Hi]
	GridHi        float64 // (a margin beyond [Lo, Hi] keeps interpolation away from the grid ends)
	GridSize      int     // number of grid points (the functions are linear in between)
	Amplitude     float64 // kernel amplitude σ²
	SqLengthscale float64 // kernel ℓ, dividing the squared distance (a squared length-scale)
}

// DefaultToy1DConfig returns the settings described on Toy1DConfig: 3
// classes, x ~ U[−3, 3], σ² = 0.5, ℓ = 2, latent functions on 2000 grid
// points over [−3.5, 3.5] (spacing 0.0035, far below the length-scale, so
// linear interpolation is accurate to ~1e-6 of the amplitude).
func DefaultToy1DConfig() Toy1DConfig {
	return Toy1DConfig{Classes: 3, Lo: -3, Hi: 3, GridLo: -3.5, GridHi: 3.5, GridSize: 2000, Amplitude: 0.5, SqLengthscale: 2}
}

// Toy1DProblem is one draw of the toy problem's latent functions. Train and
// test sets must come from the same functions, so the functions live here
// and Sample draws as many data sets from them as needed.
type Toy1DProblem struct {
	Config   Toy1DConfig // the settings the functions were drawn with
	NoiseVar float64     // variance of the Gaussian input noise x̃ = x + N(0, NoiseVar)
	Grid     []float64   // grid locations
	F        [][]float64 // F[c][g]: latent function c at Grid[g]
	// Segments partitions [Lo, Hi] into maximal intervals with a constant
	// label, computed exactly for the piecewise-linear latent functions.
	Segments []Toy1DSegment
}

// Toy1DSegment is an interval [A, B] of inputs whose label is Class.
type Toy1DSegment struct {
	A, B  float64 // interval ends, A < B
	Class int     // argmax_c f_c(x) for every x in (A, B)
}

// NewToy1DProblem draws the latent functions of a toy problem from the GP
// prior (exact Cholesky on the grid, with jitter) using seed, and records
// the input-noise variance used by Sample and BayesProbs. The paper's Table
// 1 uses noiseVar = 0.1 (its text says "standard deviation", a typo: V_i is
// a variance everywhere else, as the docs note).
func NewToy1DProblem(cfg Toy1DConfig, noiseVar float64, seed uint64) (*Toy1DProblem, error) {
	switch {
	case cfg.Classes < 2:
		return nil, fmt.Errorf("datasets: Toy1D needs at least 2 classes, got %d", cfg.Classes)
	case !(cfg.Lo < cfg.Hi) || !(cfg.GridLo <= cfg.Lo) || !(cfg.GridHi >= cfg.Hi):
		return nil, fmt.Errorf("datasets: Toy1D needs Lo < Hi inside [GridLo, GridHi], got [%v,%v] in [%v,%v]", cfg.Lo, cfg.Hi, cfg.GridLo, cfg.GridHi)
	case cfg.GridSize < 2 || cfg.GridSize > 20000:
		return nil, fmt.Errorf("datasets: Toy1D grid size %d must be in 2..20000", cfg.GridSize)
	case !(cfg.Amplitude > 0) || !(cfg.SqLengthscale > 0):
		return nil, fmt.Errorf("datasets: Toy1D needs positive amplitude and length-scale, got %v and %v", cfg.Amplitude, cfg.SqLengthscale)
	case !(noiseVar >= 0) || math.IsInf(noiseVar, 0):
		return nil, fmt.Errorf("datasets: Toy1D noise variance %v must be finite and ≥ 0", noiseVar)
	}
	p := &Toy1DProblem{Config: cfg, NoiseVar: noiseVar, Grid: make([]float64, cfg.GridSize)}
	h := (cfg.GridHi - cfg.GridLo) / float64(cfg.GridSize-1)
	for g := range p.Grid {
		p.Grid[g] = cfg.GridLo + float64(g)*h
	}
	p.Grid[cfg.GridSize-1] = cfg.GridHi
	f, _, _, err := sampleGP(context.Background(), p.Grid, cfg.GridSize, 1, cfg.Amplitude, cfg.SqLengthscale, 0, cfg.Classes, newRand(seed, streamToyFuncs))
	if err != nil {
		return nil, err
	}
	p.F = f
	p.Segments = p.segments()
	return p, nil
}

// cell returns the grid cell index g with Grid[g] ≤ x ≤ Grid[g+1], clamped.
func (p *Toy1DProblem) cell(x float64) int {
	h := (p.Config.GridHi - p.Config.GridLo) / float64(len(p.Grid)-1)
	g := int(math.Floor((x - p.Config.GridLo) / h))
	return min(max(g, 0), len(p.Grid)-2)
}

// Latent returns latent function c at x by linear interpolation between grid
// points (constant extrapolation outside the grid).
func (p *Toy1DProblem) Latent(c int, x float64) float64 {
	x = min(max(x, p.Config.GridLo), p.Config.GridHi)
	g := p.cell(x)
	t := (x - p.Grid[g]) / (p.Grid[g+1] - p.Grid[g])
	return p.F[c][g] + t*(p.F[c][g+1]-p.F[c][g])
}

// Label returns the noise-free label argmax_c f_c(x) (lowest c on ties).
func (p *Toy1DProblem) Label(x float64) int {
	best, bv := 0, p.Latent(0, x)
	for c := 1; c < p.Config.Classes; c++ {
		if v := p.Latent(c, x); v > bv {
			best, bv = c, v
		}
	}
	return best
}

// segments finds the label intervals over [Lo, Hi]. Inside a grid cell the
// functions are linear, so the argmax can only change where two of them
// cross; those crossings are solved in closed form and the label of each
// piece is read at its midpoint. The Bayes integral over each piece is then
// exact for the interpolated functions.
func (p *Toy1DProblem) segments() []Toy1DSegment {
	cfg := p.Config
	var segs []Toy1DSegment
	add := func(a, b float64) {
		if !(b > a) {
			return
		}
		c := p.Label(0.5 * (a + b))
		if n := len(segs); n > 0 && segs[n-1].Class == c {
			segs[n-1].B = b
			return
		}
		segs = append(segs, Toy1DSegment{a, b, c})
	}
	for g := p.cell(cfg.Lo); g < len(p.Grid)-1 && p.Grid[g] < cfg.Hi; g++ {
		u, v := max(p.Grid[g], cfg.Lo), min(p.Grid[g+1], cfg.Hi)
		if !(v > u) {
			continue
		}
		x0, h := p.Grid[g], p.Grid[g+1]-p.Grid[g]
		cuts := []float64{u, v}
		for a := range cfg.Classes {
			for b := a + 1; b < cfg.Classes; b++ {
				sa := (p.F[a][g+1] - p.F[a][g]) / h
				sb := (p.F[b][g+1] - p.F[b][g]) / h
				if sa == sb {
					continue
				}
				x := x0 + (p.F[b][g]-p.F[a][g])/(sa-sb)
				if x > u && x < v {
					cuts = append(cuts, x)
				}
			}
		}
		slices.Sort(cuts)
		for k := 0; k+1 < len(cuts); k++ {
			add(cuts[k], cuts[k+1])
		}
	}
	return segs
}

// Sample draws n points from the problem: x ~ U[Lo, Hi], y = argmax_c f_c(x)
// (the paper's labelling rule (1), without label noise — the toy's labels
// are generated noise-free), and x̃ = x + N(0, NoiseVar). clean holds x and
// noisy holds x̃ with Noise = NoiseVar on every row; both share Y. Different
// seeds give independent samples of the same problem (use one for training
// and another for testing). It panics if n < 0.
func (p *Toy1DProblem) Sample(n int, seed uint64) (clean, noisy *Dataset) {
	if n < 0 {
		panic(fmt.Sprintf("datasets: Toy1DProblem.Sample: n = %d < 0", n))
	}
	cfg := p.Config
	r := newRand(seed, streamToySample)
	clean = &Dataset{Name: "toy1d-clean", X: make([]float64, n), N: n, D: 1, Y: make([]int, n), C: cfg.Classes, FeatureNames: []string{"x"}}
	for i := range n {
		x := cfg.Lo + (cfg.Hi-cfg.Lo)*r.Float64()
		clean.X[i] = x
		clean.Y[i] = p.Label(x)
	}
	noisy = clean.Clone()
	noisy.Name = "toy1d-noisy"
	noisy.Noise = make([]float64, n)
	sd := math.Sqrt(p.NoiseVar)
	for i := range n {
		noisy.X[i] += sd * r.NormFloat64()
		noisy.Noise[i] = p.NoiseVar
	}
	return clean, noisy
}

// normMass returns Φ(b) − Φ(a) for a ≤ b, computed with erfc on the side
// away from the bulk so that far-tail masses keep their relative accuracy
// instead of cancelling to 0.
func normMass(a, b float64) float64 {
	const s = math.Sqrt2
	switch {
	case a >= 0:
		return 0.5 * (math.Erfc(a/s) - math.Erfc(b/s))
	case b <= 0:
		return 0.5 * (math.Erfc(-b/s) - math.Erfc(-a/s))
	default:
		return 1 - 0.5*math.Erfc(b/s) - 0.5*math.Erfc(-a/s)
	}
}

// BayesProbs writes into out (length C) the Bayes-optimal predictive
// p(y = c | x̃) for an observed noisy input x̃, the dashed curves of the
// paper's Figure 2. Since x ~ U[Lo, Hi] and x̃ | x ~ N(x, NoiseVar), the
// posterior is p(x | x̃) ∝ 1[Lo ≤ x ≤ Hi]·N(x̃ | x, NoiseVar), and
// p(y = c | x̃) is its mass on the inputs labelled c. Integrating that
// truncated Gaussian over each label segment is exact (Φ differences), so
// no grid quadrature error is added on top of the linear interpolation of
// the latent functions. When the posterior mass underflows (x̃ more than
// ~38 noise standard deviations outside [Lo, Hi]) or NoiseVar is 0, the
// posterior is a point at the nearest admissible x and out is one-hot.
func (p *Toy1DProblem) BayesProbs(xt float64, out []float64) {
	clear(out)
	sd := math.Sqrt(p.NoiseVar)
	if sd > 0 {
		var total float64
		for _, s := range p.Segments {
			m := normMass((s.A-xt)/sd, (s.B-xt)/sd)
			out[s.Class] += m
			total += m
		}
		if total > 0 {
			for c := range out {
				out[c] /= total
			}
			return
		}
		clear(out)
	}
	out[p.Label(min(max(xt, p.Config.Lo), p.Config.Hi))] = 1
}

// BayesPredictive returns the N×C row-major Bayes-optimal probabilities
// p(y | x̃_i) for the rows of a 1-column dataset (typically the noisy output
// of Sample).
func (p *Toy1DProblem) BayesPredictive(ds *Dataset) []float64 {
	c := p.Config.Classes
	out := make([]float64, ds.N*c)
	for i := range ds.N {
		p.BayesProbs(ds.X[i*ds.D], out[i*c:(i+1)*c])
	}
	return out
}

// Toy1D builds the paper's 1-D toy data in one call: it draws a problem
// with DefaultToy1DConfig from seed, samples n points from it, and returns
// the clean inputs, the noisy inputs (Noise = noiseVar) and the n×C
// Bayes-optimal p(y | x̃) for the noisy inputs. The latent functions and the
// sample use separate random streams of the same seed. For a train/test pair
// that shares latent functions use NewToy1DProblem and call Sample twice
// with different seeds.
func Toy1D(n int, seed uint64, noiseVar float64) (clean, noisy *Dataset, bayes []float64, err error) {
	if n < 0 {
		return nil, nil, nil, fmt.Errorf("datasets: Toy1D: n = %d < 0", n)
	}
	p, err := NewToy1DProblem(DefaultToy1DConfig(), noiseVar, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	clean, noisy = p.Sample(n, seed)
	return clean, noisy, p.BayesPredictive(noisy), nil
}
