package tests

import (
	"context"
	"math"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// The 1-D toy problem of the noisy-input paper (§5.1): three classes from
// latent functions drawn from a GP prior, x uniform on [−3, 3], known input
// noise variance 0.1, 1000 training and 1000 test points, M = 100. The
// noise-aware models' predictive probabilities must be closer to the
// Bayes-optimal ones than MGP's, and MGP must have the worst test NLL, as in
// the paper's Table 1. Fixed seeds; shorter training than the paper's.
func TestToyProblemOrdering(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four models for about a minute")
	}
	prob, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, train := prob.Sample(1000, 2)
	_, test := prob.Sample(1000, 3)
	bayes := prob.BayesPredictive(test)
	type result struct {
		score models.Scores
		kl    float64 // mean KL(Bayes ‖ model) over test points
	}
	res := map[string]*result{}
	for _, k := range noisyPresets {
		res[k] = &result{}
	}
	t.Run("train", func(t *testing.T) {
		for _, k := range noisyPresets {
			t.Run(k, func(t *testing.T) {
				t.Parallel()
				o := models.Options{Model: k, Posterior: models.PosteriorOptions{Inducing: 100}, Train: models.TrainOptions{Epochs: 30, Batch: 50, LR: 0.01, Seed: 5}}
				o.Inputs.Noise.Var, o.Inputs.TestSamples = 0.1, 100
				m, err := models.New(o)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
					t.Fatal(err)
				}
				p, err := m.Predict(test.X, test.N, nil)
				if err != nil {
					t.Fatal(err)
				}
				r := res[k]
				r.score = models.Score(p, test.Y, test.C)
				for i := range bayes {
					if bayes[i] > 0 {
						r.kl += bayes[i] * math.Log(bayes[i]/math.Max(p[i], 1e-300))
					}
				}
				r.kl /= float64(test.N)
			})
		}
	})
	t.Logf("Bayes-optimal: %+v", models.Score(bayes, test.Y, test.C))
	for _, k := range noisyPresets {
		t.Logf("%-9s error %.3f  NLL %.3f  KL to Bayes %.4f", k, res[k].score.Error, res[k].score.NLL, res[k].kl)
	}
	for _, k := range []string{"nimgp", "nimgp-nn"} {
		if !(res[k].kl < res["mgp"].kl) {
			t.Errorf("%s is not closer to the Bayes-optimal probabilities than MGP (KL %.4f vs %.4f)", k, res[k].kl, res["mgp"].kl)
		}
	}
	for _, k := range []string{"nimgp", "nimgp-nn", "nimgp-fo"} {
		if !(res[k].score.NLL < res["mgp"].score.NLL) {
			t.Errorf("%s test NLL %.3f is not below MGP's %.3f", k, res[k].score.NLL, res["mgp"].score.NLL)
		}
	}
}

// noisyPresets are the noisy-input paper's models, in its order.
var noisyPresets = []string{"mgp", "nimgp", "nimgp-nn", "nimgp-fo"}
