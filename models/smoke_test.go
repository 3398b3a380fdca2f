package models

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpc-dev/gpc/datasets"
)

func TestSmoke(t *testing.T) {
	prob, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, train := prob.Sample(1000, 2)
	_, test := prob.Sample(1000, 3)
	bayes := prob.BayesPredictive(test)
	t.Log("bayes", Score(bayes, test.Y, test.C))
	for _, k := range Kinds {
		m, err := New(Options{Kind: k, Inducing: 100, Epochs: 50, Batch: 50, LR: 0.01, NoiseVar: 0.1, TestSamples: 100})
		if err != nil {
			t.Fatal(err)
		}
		st := time.Now()
		if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
			t.Fatal(k, err)
		}
		p, err := m.Predict(test.X, test.N, nil)
		if err != nil {
			t.Fatal(k, err)
		}
		var kl float64
		for i := range bayes {
			if bayes[i] > 0 {
				kl += bayes[i] * math.Log(bayes[i]/math.Max(p[i], 1e-300))
			}
		}
		t.Log(k, Score(p, test.Y, test.C), "KL to Bayes", kl/float64(test.N), time.Since(st))
	}
}
