package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// predictBatch is the largest number of rows one prediction graph holds.
const predictBatch = 256

// predictGraph maps inputs (and, for NIMGP_FO, their noise variances) to
// class probabilities for a fixed number of rows.
type predictGraph struct {
	s     *layers.Scope
	x, v  feed
	probs *G.Node
	prog  *graph.Program
}

func (m *Model) buildPredict(rows int) (*predictGraph, error) {
	g := G.NewGraph()
	p := &predictGraph{s: layers.NewScope(g)}
	p.x = newFeed(g, "x", rows, m.D)
	b, err := m.post.Build(p.s)
	if err != nil {
		return nil, err
	}
	var mu, v *G.Node
	if m.Opts.Kind == NIMGPFO {
		p.v = newFeed(g, "noise", rows, m.D)
		mu, v, err = firstOrder(b, p.x.node, p.v.node)
	} else {
		mu, v, err = b.Marginals(p.x.node)
	}
	if err != nil {
		return nil, err
	}
	if p.probs, err = m.lik.Predict(p.s, mu, v); err != nil {
		return nil, err
	}
	if p.prog, err = graph.Compile(g, p.probs); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *predictGraph) run() ([]float64, error) {
	if err := p.s.Sync(); err != nil {
		return nil, err
	}
	if err := p.prog.Run(); err != nil {
		return nil, err
	}
	return p.prog.Float64s(p.probs)
}

// Predict returns the n×C matrix (row-major) of class probabilities for the
// n rows of x (n×D). noise holds the test inputs' variances (n×D) for the
// noise-aware models; nil uses the learned variances or Options.NoiseVar.
//
// MGP and NIMGP_FO are closed form at x̃* (quadrature over f); NIMGP and
// NIMGP_NN average over Options.TestSamples draws of
// x* ~ N(V*ˣ V*⁻¹ x̃*, V*ˣ) with V*ˣ = (V*⁻¹ + I/s)⁻¹, the same draws for every
// class, so each row sums to one.
func (m *Model) Predict(x []float64, n int, noise []float64) ([]float64, error) {
	if m.post == nil {
		return nil, errors.New("models: the model is not trained")
	}
	if len(x) != n*m.D {
		return nil, fmt.Errorf("models: %d values for %d rows of %d features", len(x), n, m.D)
	}
	if noise != nil && len(noise) != n*m.D {
		return nil, fmt.Errorf("models: %d noise variances for %d rows of %d features", len(noise), n, m.D)
	}
	for i, v := range noise {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("models: noise variance %v at row %d, column %d is not positive and finite", v, i/m.D, i%m.D)
		}
	}
	rows := min(n, predictBatch)
	pg, err := m.buildPredict(rows)
	if err != nil {
		return nil, err
	}
	defer pg.prog.Close()
	out := make([]float64, 0, n*m.C)
	rng := rand.New(rand.NewPCG(m.Opts.Seed, 0x9ed))
	for start := 0; start < n; start += rows {
		real := min(rows, n-start)
		// Pad the last batch by repeating its first row; padded outputs are dropped.
		for r := 0; r < rows; r++ {
			i := start + r%real
			copy(pg.x.data[r*m.D:(r+1)*m.D], x[i*m.D:(i+1)*m.D])
			if pg.v.node != nil {
				for d := 0; d < m.D; d++ {
					pg.v.data[r*m.D+d] = m.noiseAt(noise, i, d)
				}
			}
		}
		var probs []float64
		if m.Opts.Kind.latentInputs() {
			probs, err = m.sampleInputs(pg, x, noise, start, real, rng)
		} else {
			probs, err = pg.run()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, probs[:real*m.C]...)
	}
	return out, nil
}

// noiseAt is the input-noise variance of test row i, dimension d.
func (m *Model) noiseAt(noise []float64, i, d int) float64 {
	switch {
	case noise != nil:
		return noise[i*m.D+d]
	case m.logNoise != nil:
		return m.logNoise.Value(d)
	}
	return m.Opts.NoiseVar
}

// sampleInputs averages the probabilities over draws of the noiseless inputs.
func (m *Model) sampleInputs(pg *predictGraph, x, noise []float64, start, real int, rng *rand.Rand) ([]float64, error) {
	rows, D, s := len(pg.x.data)/m.D, m.D, m.Opts.PriorVar
	mean := make([]float64, rows*D)
	sd := make([]float64, rows*D)
	for r := 0; r < rows; r++ {
		i := start + r%real
		for d := 0; d < D; d++ {
			v := m.noiseAt(noise, i, d)
			if !(v > 0) {
				// Without input noise the posterior over x* is a point mass at x̃*.
				mean[r*D+d] = x[i*D+d]
				continue
			}
			vx := 1 / (1/v + 1/s)
			mean[r*D+d] = vx * x[i*D+d] / v
			sd[r*D+d] = math.Sqrt(vx)
		}
	}
	acc := make([]float64, rows*m.C)
	for k := 0; k < m.Opts.TestSamples; k++ {
		for j := range pg.x.data {
			pg.x.data[j] = mean[j] + sd[j]*rng.NormFloat64()
		}
		p, err := pg.run()
		if err != nil {
			return nil, err
		}
		for j := range acc {
			acc[j] += p[j]
		}
	}
	for j := range acc {
		acc[j] /= float64(m.Opts.TestSamples)
	}
	return acc, nil
}

// Scores are a prediction's test error and mean negative log-likelihood.
type Scores struct {
	Error float64 `json:"error"`
	NLL   float64 `json:"nll"`
}

// Score evaluates n×C probabilities against labels.
func Score(probs []float64, labels []int, c int) Scores {
	var s Scores
	for i, y := range labels {
		row := probs[i*c : (i+1)*c]
		arg := 0
		for j := range row {
			if row[j] > row[arg] {
				arg = j
			}
		}
		if arg != y {
			s.Error++
		}
		s.NLL -= math.Log(math.Max(row[y], 1e-300))
	}
	n := float64(len(labels))
	s.Error /= n
	s.NLL /= n
	return s
}
