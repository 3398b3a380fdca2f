package models

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
)

// toyModel trains preset briefly on the T1 toy (1-D, 3 classes, input-noise
// variance 0.1) with m inducing points and returns it with n test rows.
func toyModel(tb testing.TB, preset string, nTrain, m, epochs, nTest, samples int) (*Model, *datasets.Dataset) {
	tb.Helper()
	prob, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), 0.1, 1)
	if err != nil {
		tb.Fatal(err)
	}
	_, train := prob.Sample(nTrain, 2)
	_, test := prob.Sample(nTest, 3)
	o := withNoise(opts(preset, m, epochs, 50, 1), 0.1, false)
	o.Inputs.TestSamples = samples
	mod, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := mod.Fit(context.Background(), train, FitConfig{}); err != nil {
		tb.Fatal(err)
	}
	return mod, test
}

// BenchmarkPredictMC is the Monte Carlo prediction of the T1 demo's
// noisy-input models: M = 100, S = 500 draws, for 500 test rows (two
// batches, the second padded) and for 20 (one batch, 12 draws per run).
func BenchmarkPredictMC(b *testing.B) { benchPredictMC(b, (*Model).predict) }

// BenchmarkPredictMCPerDraw is BenchmarkPredictMC with one graph run per
// draw, the reference it is compared with.
func BenchmarkPredictMCPerDraw(b *testing.B) { benchPredictMC(b, (*Model).predictBatches) }

func benchPredictMC(b *testing.B, predict func(*Model, context.Context, []float64, int, []float64) ([]float64, error)) {
	for _, preset := range []string{"nimgp", "nimgp-nn"} {
		m, test := toyModel(b, preset, 1000, 100, 1, 500, 500)
		for _, n := range []int{500, 20} {
			b.Run(fmt.Sprintf("%s/rows=%d", preset, n), func(b *testing.B) {
				for range b.N {
					if _, err := predict(m, context.Background(), test.X[:n], n, test.Noise[:n]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// Stacking the draws (predictSampled) changes how the graph is run, not what
// it computes: the probabilities equal the per-draw loop's, with the same
// draws from the same generator, for NIMGP and NIMGP_NN, for one row, for
// fewer rows than a batch and for a padded last batch, with the noise given
// and not; S = 37 leaves the last run of a stacked batch part empty.
func TestPredictSampledMatchesPerDraw(t *testing.T) {
	for _, preset := range []string{"nimgp", "nimgp-nn"} {
		m, test := toyModel(t, preset, 120, 10, 2, 300, 37)
		for _, n := range []int{1, 40, 300} {
			for _, given := range []bool{false, true} {
				var noise []float64
				if given {
					noise = test.Noise[:n*test.D]
				}
				x := test.X[:n*test.D]
				got, err := m.Predict(x, n, noise)
				if err != nil {
					t.Fatal(err)
				}
				want, err := m.predictBatches(context.Background(), x, n, noise)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) || len(got) != n*m.C {
					t.Fatalf("%s, %d rows: %d probabilities, the per-draw loop %d", preset, n, len(got), len(want))
				}
				worst := 0.0
				for i := range got {
					worst = max(worst, math.Abs(got[i]-want[i]))
				}
				if worst > 1e-10 {
					t.Errorf("%s, %d rows, noise given %v: differs from the per-draw loop by %g", preset, n, given, worst)
				}
				for i := range n {
					sum := 0.0
					for _, p := range got[i*m.C : (i+1)*m.C] {
						if !(p > 0) {
							t.Fatalf("%s: row %d has probability %v", preset, i, p)
						}
						sum += p
					}
					if math.Abs(sum-1) > 1e-12 {
						t.Errorf("%s: row %d sums to %v", preset, i, sum)
					}
				}
			}
		}
	}
}

// Prediction over several batches keeps the work on the parameters alone
// from its first batch (Program.Hold); each batch must still get exactly
// the probabilities a graph of its own computes, for a closed-form
// multi-class model and one with the input noise.
func TestPredictBatchesHoldMatchesFreshGraphs(t *testing.T) {
	for _, preset := range []string{"mgp", "nimgp-fo"} {
		m, test := toyModel(t, preset, 120, 10, 2, 3*predictBatch, 1)
		n := 3 * predictBatch
		got, err := m.Predict(test.X[:n*test.D], n, test.Noise[:n*test.D])
		if err != nil {
			t.Fatal(err)
		}
		for b := range 3 {
			lo, hi := b*predictBatch, (b+1)*predictBatch
			want, err := m.Predict(test.X[lo*test.D:hi*test.D], predictBatch, test.Noise[lo*test.D:hi*test.D])
			if err != nil {
				t.Fatal(err)
			}
			for j, w := range want {
				if g := got[lo*m.C+j]; g != w {
					t.Fatalf("%s: batch %d, value %d: %v in one call, %v alone", preset, b, j, g, w)
				}
			}
		}
	}
}

// While every core runs a fit of its own (graph.OneCorePerRun), a Monte
// Carlo prediction builds one graph instead of one per core, and predicts
// the same probabilities, bit for bit.
func TestPredictSampledOneCore(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: the prediction builds one graph either way")
	}
	// 60 rows stack 4 draws a run: 10 runs, spread over two graphs or more.
	m, test := toyModel(t, "nimgp", 200, 20, 1, 60, 40)
	spread, err := m.predict(context.Background(), test.X, test.N, test.Noise)
	if err != nil {
		t.Fatal(err)
	}
	release := graph.OneCorePerRun()
	one, err := m.predict(context.Background(), test.X, test.N, test.Noise)
	release()
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != len(spread) {
		t.Fatalf("%d and %d probabilities", len(one), len(spread))
	}
	for i := range one {
		if math.Float64bits(one[i]) != math.Float64bits(spread[i]) {
			t.Fatalf("p[%d] = %v on one core, %v spread", i, one[i], spread[i])
		}
	}
}
