package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
)

// predictBatch is the largest number of rows one prediction graph holds.
const predictBatch = 256

// feed is a graph input whose backing array is rewritten before each run.
type feed struct {
	node *G.Node
	data []float64
}

func newFeed(g *G.ExprGraph, name string, shape ...int) feed {
	data := make([]float64, tensor.Shape(shape).TotalSize())
	return feed{graph.Input(g, name, shape, data), data}
}

// testGraph maps a fixed number of inputs (and, when the input model asks,
// their noise variances) to marginals or class probabilities; it
// implements inputs.Test.
type testGraph struct {
	g     *G.ExprGraph
	s     *layers.Scope
	rows  int
	x, v  feed
	probs *G.Node
	prog  *graph.Program
}

func (t *testGraph) Scope() *layers.Scope { return t.s }
func (t *testGraph) X() *G.Node           { return t.x.node }
func (t *testGraph) Noise() *G.Node {
	if t.v.node == nil {
		t.v = newFeed(t.g, "noise", t.rows, len(t.x.data)/t.rows)
	}
	return t.v.node
}

func (m *Model) newTestGraph(rows int) *testGraph {
	g := G.NewGraph()
	t := &testGraph{g: g, s: layers.NewScope(g), rows: rows}
	t.x = newFeed(g, "x", rows, m.D)
	return t
}

func (m *Model) buildPredict(rows int) (*testGraph, error) {
	t := m.newTestGraph(rows)
	post, err := m.post.Bind(t.s)
	if err != nil {
		return nil, err
	}
	mu, v, err := m.inputs.Predict(t, post)
	if err != nil {
		return nil, err
	}
	if t.probs, err = m.lik.Predict(t.s, mu, v); err != nil {
		return nil, err
	}
	if t.prog, err = graph.Compile(t.g, t.probs); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *testGraph) run() ([]float64, error) {
	if err := t.s.Sync(); err != nil {
		return nil, err
	}
	if err := t.prog.Run(); err != nil {
		return nil, err
	}
	return t.prog.Float64s(t.probs)
}

// checkTest validates prediction inputs.
func (m *Model) checkTest(x []float64, n int, noise []float64) error {
	if m.post == nil {
		return errors.New("models: the model is not trained")
	}
	if len(x) != n*m.D {
		return fmt.Errorf("models: %d values for %d rows of %d features", len(x), n, m.D)
	}
	if noise != nil && len(noise) != n*m.D {
		return fmt.Errorf("models: %d noise variances for %d rows of %d features", len(noise), n, m.D)
	}
	for i, v := range noise {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("models: noise variance %v at row %d, column %d is not positive and finite", v, i/m.D, i%m.D)
		}
	}
	return nil
}

// noiseAt is the input-noise variance of test row i, dimension d: given,
// else the noise part's (learned or configured); 0 without a noise part.
func (m *Model) noiseAt(noise []float64, i, d int) float64 {
	if n := m.InputNoise(); n != nil {
		return n.At(noise, i, d)
	}
	if noise != nil {
		return noise[i*m.D+d]
	}
	return 0
}

// Predict returns the n×C matrix (row-major) of class probabilities for the
// n rows of x (n×D). noise holds the test inputs' variances (n×D) for the
// models with input noise; nil uses the learned variances or the
// configured value.
//
// The input model decides how: in closed form at x̃* (observed,
// first-order: quadrature over f), or, for an inputs.Sampler (latent,
// amortised), averaged over its draws of x* ~ p(x* | x̃*), the same draws for
// every class, so that each row sums to one.
//
// The inputs and noise variances are in the units of the training data;
// a model fitted with Options.Inputs.Standardize applies its transform.
func (m *Model) Predict(x []float64, n int, noise []float64) ([]float64, error) {
	return m.PredictContext(context.Background(), x, n, noise)
}

// PredictContext is Predict stopping with ctx's error as soon as ctx is
// cancelled: while it builds the prediction graph, between batches of rows
// and between the graph runs over the draws of a sampling input model
// (however many draws Options.Inputs.TestSamples asks for). A kernel matrix that is not
// positive definite is returned as a *NotPositiveDefiniteError.
func (m *Model) PredictContext(ctx context.Context, x []float64, n int, noise []float64) ([]float64, error) {
	if err := m.checkTest(x, n, noise); err != nil {
		return nil, err
	}
	x, noise = m.standardizeTest(x, n, noise)
	out, err := m.predict(ctx, x, n, noise)
	return out, m.explain("prediction", err)
}

func (m *Model) predict(ctx context.Context, x []float64, n int, noise []float64) ([]float64, error) {
	if p, ok := m.engine.(Predictor); ok {
		return p.Predict(ctx, m, x, n, noise)
	}
	return m.PredictPosterior(ctx, x, n, noise)
}

// PredictPosterior predicts through q(u) by the framework's rule, whatever
// the engine: a Predictor engine whose own rule serves only some fits (say,
// a joint predictive over several latent functions that the engine kept
// for some likelihoods) hands the others back here. Like
// Predictor.Predict, it takes the test inputs in the model's units
// (standardised when the model standardises).
func (m *Model) PredictPosterior(ctx context.Context, x []float64, n int, noise []float64) ([]float64, error) {
	if s, ok := m.inputs.(inputs.Sampler); ok {
		return m.predictSampled(ctx, s, x, n, noise)
	}
	return m.predictBatches(ctx, x, n, noise)
}

// predictBatches is predict one batch of rows at a time. For a sampling
// input model it runs the graph once per draw (sampleInputs): the
// reference that predictSampled must reproduce, kept for its tests and
// benchmark.
func (m *Model) predictBatches(ctx context.Context, x []float64, n int, noise []float64) ([]float64, error) {
	rows := min(n, predictBatch)
	pg, err := interruptibly(ctx, func() (*testGraph, error) { return m.buildPredict(rows) })
	if err != nil {
		return nil, err
	}
	defer pg.prog.Close()
	out := make([]float64, 0, n*m.C)
	rng := rand.New(rand.NewPCG(m.Opts.Train.Seed, 0x9ed))
	sampler, _ := m.inputs.(inputs.Sampler)
	if m.meanSamples == nil {
		// The parameters stay put from batch to batch (averageMeans alone
		// swaps q(u)'s mean between runs), so the work on them alone (every
		// class's K_ZZ, its factor and solves: a third of an MNIST batch) is
		// done by the first run and kept.
		pg.prog.Hold(pg.x.node, pg.v.node)
	}
	for start := 0; start < n; start += rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
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
		switch {
		case sampler != nil:
			probs, err = m.sampleInputs(ctx, pg, sampler, x, noise, start, real, rng)
		case m.meanSamples != nil:
			probs, err = m.averageMeans(ctx, pg)
		default:
			probs, err = pg.run()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, probs[:real*m.C]...)
	}
	return out, nil
}

// sampleInputs averages the probabilities over draws of the noiseless inputs.
func (m *Model) sampleInputs(ctx context.Context, pg *testGraph, s inputs.Sampler, x, noise []float64, start, real int, rng *rand.Rand) ([]float64, error) {
	rows, D := len(pg.x.data)/m.D, m.D
	mean := make([]float64, rows*D)
	sd := make([]float64, rows*D)
	v := make([]float64, D)
	for r := 0; r < rows; r++ {
		i := start + r%real
		for d := range v {
			v[d] = m.noiseAt(noise, i, d)
		}
		s.TestPosterior(x[i*D:(i+1)*D], v, mean[r*D:(r+1)*D], sd[r*D:(r+1)*D])
	}
	acc := make([]float64, rows*m.C)
	for k := 0; k < s.Samples(); k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
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
		acc[j] /= float64(s.Samples())
	}
	return acc, nil
}

// averageMeans averages the probabilities over the stored draws of q(u)'s
// mean, restoring the mean afterwards.
func (m *Model) averageMeans(ctx context.Context, pg *testGraph) ([]float64, error) {
	// A draw holds every latent function's mean, in order.
	var keep []float64
	for _, p := range m.post.Mean {
		keep = append(keep, p.Data...)
	}
	set := func(s []float64) {
		for _, p := range m.post.Mean {
			s = s[copy(p.Data, s):]
		}
	}
	defer set(keep)
	var acc []float64
	for _, s := range m.meanSamples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		set(s)
		p, err := pg.run()
		if err != nil {
			return nil, err
		}
		if acc == nil {
			acc = make([]float64, len(p))
		}
		for j := range acc {
			acc[j] += p[j]
		}
	}
	for j := range acc {
		acc[j] /= float64(len(m.meanSamples))
	}
	return acc, nil
}

// SetTestSamples sets the number of draws of the noiseless test inputs that
// predictions average over, for input models that sample them; for others
// it does nothing (their predictions are closed form).
func (m *Model) SetTestSamples(n int) error {
	if n < 1 || n > MaxTestSamples {
		return fmt.Errorf("models: %d test samples (want 1 to %d)", n, MaxTestSamples)
	}
	m.Opts.Inputs.TestSamples = n
	if s, ok := m.inputs.(inputs.Sampler); ok {
		s.SetSamples(n)
	}
	return nil
}
