package models

import (
	"context"
	"math"
	"slices"
	"testing"
)

// Trace follows every evaluation of the full-batch engines with the
// posterior of that evaluation: its evaluations count from 1 without gaps,
// the posterior it scores moves, and at the evaluation with the lowest
// loss (the point L-BFGS keeps) it scores what the fitted model scores.
func TestTraceFollowsEveryEvaluation(t *testing.T) {
	train, test := blobs(120, 11), blobs(200, 12)
	for _, preset := range []string{"svgp", "ep-fitc", "mfsp", "ep"} {
		o := opts(preset, 6, 25, 120, 1)
		o.Train.Optimizer = "lbfgs"
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		var evals []int
		var nll []float64
		best, bestNLL := math.Inf(1), 0.0
		err = m.Fit(context.Background(), train, FitConfig{Trace: func(eval int, loss float64) error {
			evals = append(evals, eval)
			p, err := m.Predict(test.X, test.N, nil)
			if err != nil {
				return err
			}
			nll = append(nll, Score(p, test.Y, test.C).NLL)
			if loss < best {
				best, bestNLL = loss, nll[len(nll)-1]
			}
			return nil
		}})
		if err != nil {
			t.Fatalf("%s: %v", preset, err)
		}
		if len(evals) < 5 {
			t.Fatalf("%s: %d traced evaluations", preset, len(evals))
		}
		for i, e := range evals {
			if e != i+1 && preset != "svgp" { // svgp restarts its count after the freeze phase
				t.Fatalf("%s: evaluation %d traced as %d", preset, i+1, e)
			}
		}
		if slices.Min(nll) == slices.Max(nll) {
			t.Errorf("%s: the traced posterior never moved (NLL %.4f throughout)", preset, nll[0])
		}
		p, err := m.Predict(test.X, test.N, nil)
		if err != nil {
			t.Fatal(err)
		}
		if final := Score(p, test.Y, test.C).NLL; math.Abs(final-bestNLL) > 1e-3*(1+final) {
			t.Errorf("%s: the fitted model's hold-out NLL %.6f, the trace's at its best evaluation %.6f", preset, final, bestNLL)
		}
	}
}
