package models

import (
	"context"
	"math/rand/v2"
	"sync"

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
//
// The graphs hold (graph.Program.Hold) everything that does not depend on
// the drawn inputs or their noise, so the posterior's M×M work is done once
// per graph rather than once per run, and the runs of a batch are spread
// over one graph per core. The draws are taken from rng in the per-draw
// loop's order and summed in that order whichever graph ran them, so the
// result does not depend on the number of cores.
func (m *Model) predictSampled(ctx context.Context, s inputs.Sampler, x []float64, n int, noise []float64) ([]float64, error) {
	rows := min(n, predictBatch)
	samples := s.Samples()
	out := make([]float64, 0, n*m.C)
	rng := rand.New(rand.NewPCG(m.Opts.Train.Seed, 0x9ed))
	var pgs []*testGraph
	var real, k int // the shape of the graphs: k draws of real rows
	closeAll := func() {
		for _, pg := range pgs {
			pg.prog.Close()
		}
		pgs = nil
	}
	defer closeAll()
	for start := 0; start < n; start += rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := min(rows, n-start)
		if pgs == nil || r != real {
			closeAll()
			real, k = r, stackedDraws(r, samples)
			runs := (samples + k - 1) / k
			graphs := min(graph.Cores(), runs)
			for range graphs {
				g, err := interruptibly(ctx, func() (*testGraph, error) { return m.buildPredict(k * real) })
				if err != nil {
					return nil, err
				}
				pgs = append(pgs, g)
				// Nothing changes the parameters while predicting, so the
				// scalar ones are copied into the graph once, not per run,
				// and the work on them alone is kept from the first run.
				if err := g.s.Sync(); err != nil {
					return nil, err
				}
				g.prog.Hold(g.x.node, g.v.node)
				if graphs > 1 { // the runs of a wave already use every core
					g.prog.Sequential()
				}
			}
		}
		acc, err := m.sampleStacked(ctx, pgs, s, x, noise, start, rows, real, k, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, acc...)
	}
	return out, nil
}

// sampleStacked averages the probabilities of rows start … start+real−1
// over the draws, k per run of a graph, taking from rng what sampleInputs
// takes for a batch of rows rows: the normals of its padded rows are drawn
// and dropped. The graphs run one wave of len(pgs) runs at a time, in
// parallel.
func (m *Model) sampleStacked(ctx context.Context, pgs []*testGraph, s inputs.Sampler, x, noise []float64, start, rows, real, k int, rng *rand.Rand) ([]float64, error) {
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
	for _, pg := range pgs {
		if pg.v.node != nil {
			for j := range pg.v.data {
				pg.v.data[j] = m.noiseAt(noise, start+j/D%real, j%D)
			}
		}
	}
	block := real * D
	acc := make([]float64, real*C)
	draws := make([]int, len(pgs))
	errs := make([]error, len(pgs))
	probs := make([][]float64, len(pgs))
	for first := 0; first < samples; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		wave := 0
		for ; wave < len(pgs) && first < samples; wave++ {
			pg := pgs[wave]
			draws[wave] = min(k, samples-first)
			first += draws[wave]
			for q := range draws[wave] {
				xq := pg.x.data[q*block : (q+1)*block]
				for j := range rows * D {
					z := rng.NormFloat64()
					if j < block {
						xq[j] = mean[j] + sd[j]*z
					}
				}
			}
		}
		// Only the last run can be short; its blocks past the last draw
		// still hold an earlier run's draws, evaluated and not added.
		var wg sync.WaitGroup
		for w := 1; w < wave; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				probs[w], errs[w] = pgs[w].runHeld()
			}()
		}
		probs[0], errs[0] = pgs[0].runHeld()
		wg.Wait()
		for w := range wave {
			if errs[w] != nil {
				return nil, errs[w]
			}
			for q := range draws[w] {
				pq := probs[w][q*real*C : (q+1)*real*C]
				for j := range acc {
					acc[j] += pq[j]
				}
			}
		}
	}
	for j := range acc {
		acc[j] /= float64(samples)
	}
	return acc, nil
}

// runHeld runs the graph without syncing its parameters (predictSampled
// synced them once) and returns its probabilities, owned by the program.
func (t *testGraph) runHeld() ([]float64, error) {
	if err := t.prog.Run(); err != nil {
		return nil, err
	}
	val, err := t.prog.Value(t.probs)
	if err != nil {
		return nil, err
	}
	return graph.Float64s(val)
}
