package models

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/solvers"
)

// The Monte Carlo softmax likelihood composed with the sparse posterior on
// observed inputs (the additive-noise paper's sampled-softmax SVGP
// baseline) and with latent inputs, whose own draws come from an earlier
// stream: the ELBO's gradient against finite differences at orders 1 and
// 2, the draws held fixed as within one step.
func TestSoftmaxCompositionGradients(t *testing.T) {
	skipFiniteDifferencesUnderRace(t)
	cases := map[string]Options{
		"observed": {Likelihood: LikelihoodOptions{Name: "softmax", Samples: 5}},
		"latent":   withNoise(Options{Likelihood: LikelihoodOptions{Name: "softmax", Samples: 5}, Inputs: InputOptions{Model: "latent"}}, 0, true),
	}
	for name, o := range cases {
		for order := 1; order <= 2; order++ {
			t.Run(fmt.Sprintf("%s/order%d", name, order), func(t *testing.T) {
				rep, err := CheckGradients(o, order, 4)
				if err != nil {
					t.Fatal(err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					t.Errorf("%s", rep.Worst())
				}
			})
		}
	}
}

// The engine gives a Monte Carlo likelihood fresh draws at every step: the
// same batch at the same parameters costs a different amount each time,
// where a likelihood in closed form or by quadrature costs the same. The
// draws are a property of the training seed: a second objective with the
// same seed repeats the first's costs.
func TestSoftmaxFreshDrawsPerStep(t *testing.T) {
	ds := additiveBlobs(60, 2, 3, 1)
	costs := func(lik string, seed uint64) []float64 {
		t.Helper()
		o := Options{Likelihood: LikelihoodOptions{Name: lik, Samples: 10}}
		o.Posterior.Inducing, o.Train.Batch, o.Train.Seed = 10, 20, seed
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if sm, ok := m.Likelihood().(*likelihoods.Softmax); ok && sm.Samples != 10 {
			t.Fatalf("LikelihoodOptions.Samples 10 gave %d draws", sm.Samples)
		}
		if err := m.initialize(ds, io.Discard); err != nil {
			t.Fatal(err)
		}
		obj, err := m.newObjective(ds)
		if err != nil {
			t.Fatal(err)
		}
		defer obj.Close()
		b := solvers.Batch{Index: make([]int, 20), Weight: make([]float64, 20), Real: 20}
		for i := range b.Index {
			b.Index[i], b.Weight[i] = i, 3
		}
		var out []float64
		for range 3 {
			obj.Load(b)
			cost, _, err := obj.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, cost)
		}
		return out
	}
	mc := costs("softmax", 1)
	if mc[0] == mc[1] || mc[1] == mc[2] {
		t.Errorf("softmax: the same cost at successive steps %v: the draws were not renewed", mc)
	}
	if again := costs("softmax", 1); fmt.Sprint(again) != fmt.Sprint(mc) {
		t.Errorf("softmax with the same seed: costs %v, then %v", mc, again)
	}
	if rm := costs("robustmax", 1); rm[0] != rm[1] || rm[1] != rm[2] {
		t.Errorf("robustmax: costs %v differ without any draws", rm)
	}
}

// The sampled-softmax SVGP learns three separated clusters, its
// predictions are probabilities, and a saved model (with its number of
// draws) predicts the same after loading.
func TestSoftmaxTrains(t *testing.T) {
	train, test := additiveBlobs(150, 2, 3, 2), additiveBlobs(90, 2, 3, 3)
	o := Options{Likelihood: LikelihoodOptions{Name: "softmax", Samples: 20}}
	o.Posterior.Inducing = 15
	o.Train = TrainOptions{Epochs: 60, Batch: 50, LR: 0.05, Seed: 1}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	probs, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for i := range test.N {
		row := probs[i*3 : i*3+3]
		best, sum := 0, 0.0
		for c, p := range row {
			sum += p
			if p > row[best] {
				best = c
			}
		}
		if sum < 1-1e-9 || sum > 1+1e-9 {
			t.Fatalf("row %d sums to %v", i, sum)
		}
		if best != test.Y[i] {
			wrong++
		}
	}
	if err := float64(wrong) / float64(test.N); err > 0.05 {
		t.Errorf("test error %.3f on separated clusters", err)
	}
	l := saveLoad(t, m, test)
	if sm := l.Likelihood().(*likelihoods.Softmax); sm.Samples != 20 {
		t.Errorf("loaded model has %d draws, saved 20", sm.Samples)
	}
}
