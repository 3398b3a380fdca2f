package models

import (
	"context"
	"math/rand/v2"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers/inputs"
)

// Monte Carlo prediction of a sampling input model evaluates the prediction
// graph once per draw of the test inputs. Rows of that graph are
// independent, so when a batch has fewer rows than a graph holds, several
// draws of it are stacked into one run: predicting a few rows no longer
// pays, per draw, for the posterior's M×M work (Cholesky factors, solves
// for the mean) and for every op's fixed cost. Draws are generated in the
// order of the per-draw loop (sampleInputs) and summed in draw order, so
// the probabilities are that loop's to rounding (the matrix kernels may
// round a row differently in a graph of another height).
//
// Full batches gain little or nothing from stacking: their time is in work
// per row (the kernel rows, M×M products per row, the robust-max
// quadrature). Graphs of 1024 rows saved about a tenth of the time per row
// with Gorgonia's elementwise ops and none with the graph package's own
// loops, which slowed as their intermediates left the cache, while memory
// grows with the height (65 MB at 1024 rows of 3 classes, M = 100). So a
// sampling graph holds at most predictBatch rows, as a plain one does.

// stackedDraws is the number of draws of real rows one sampling graph
// holds: as many as predictBatch rows allow, spread evenly over the runs
// that the samples need, so that the last run is nearly full.
func stackedDraws(real, samples int) int {
	k := max(1, predictBatch/real)
	if k >= samples {
		return samples
	}
	runs := (samples + k - 1) / k
	return (samples + runs - 1) / runs
}

// predictSampled is predict for a sampling input model: the class
// probabilities averaged over s.Samples() draws of the noiseless test
// inputs, as predictBatches computes them with one graph run per draw.
func (m *Model) predictSampled(ctx context.Context, s inputs.Sampler, x []float64, n int, noise []float64) ([]float64, error) {
	rows := min(n, predictBatch)
	samples := s.Samples()
	out := make([]float64, 0, n*m.C)
	rng := rand.New(rand.NewPCG(m.Opts.Train.Seed, 0x9ed))
	var pg *testGraph
	var real, k int // the shape of pg: k draws of real rows
	defer func() {
		if pg != nil {
			pg.prog.Close()
		}
	}()
	for start := 0; start < n; start += rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := min(rows, n-start)
		if pg == nil || r != real {
			if pg != nil {
				pg.prog.Close()
				pg = nil
			}
			real, k = r, stackedDraws(r, samples)
			g, err := interruptibly(ctx, func() (*testGraph, error) { return m.buildPredict(k * real) })
			if err != nil {
				return nil, err
			}
			pg = g
			// Nothing changes the parameters while predicting, so the
			// scalar ones are copied into the graph once, not per run.
			if err := pg.s.Sync(); err != nil {
				return nil, err
			}
		}
		acc, err := m.sampleStacked(ctx, pg, s, x, noise, start, rows, real, k, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, acc...)
	}
	return out, nil
}

// sampleStacked averages the probabilities of rows start … start+real−1
// over the draws, k per run of pg, taking from rng what sampleInputs takes
// for a batch of rows rows: the normals of its padded rows are drawn and
// dropped.
func (m *Model) sampleStacked(ctx context.Context, pg *testGraph, s inputs.Sampler, x, noise []float64, start, rows, real, k int, rng *rand.Rand) ([]float64, error) {
	D, C, samples := m.D, m.C, s.Samples()
	mean := make([]float64, real*D)
	sd := make([]float64, real*D)
	v := make([]float64, D)
	for r := 0; r < real; r++ {
		i := start + r
		for d := range v {
			v[d] = m.noiseAt(noise, i, d)
		}
		s.TestPosterior(x[i*D:(i+1)*D], v, mean[r*D:(r+1)*D], sd[r*D:(r+1)*D])
	}
	if pg.v.node != nil {
		for j := range pg.v.data {
			pg.v.data[j] = m.noiseAt(noise, start+j/D%real, j%D)
		}
	}
	block := real * D
	acc := make([]float64, real*C)
	for first := 0; first < samples; first += k {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		draws := min(k, samples-first)
		for q := range draws {
			xq := pg.x.data[q*block : (q+1)*block]
			for j := range rows * D {
				z := rng.NormFloat64()
				if j < block {
					xq[j] = mean[j] + sd[j]*z
				}
			}
		}
		// Only the last run can be short; its blocks past the last draw
		// still hold the previous run's draws, evaluated and not added.
		if err := pg.prog.Run(); err != nil {
			return nil, err
		}
		val, err := pg.prog.Value(pg.probs)
		if err != nil {
			return nil, err
		}
		p, err := graph.Float64s(val)
		if err != nil {
			return nil, err
		}
		for q := range draws {
			pq := p[q*real*C : (q+1)*real*C]
			for j := range acc {
				acc[j] += pq[j]
			}
		}
	}
	for j := range acc {
		acc[j] /= float64(samples)
	}
	return acc, nil
}
