package tests

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
	_ "github.com/gpc-dev/gpc/models/laplace"
)

// The user's likelihood (CLogLog, written outside the library with only
// ExpectedLogLik and Predict) trains under every engine that can take it,
// with no change to any preset: svi on the full variational Gaussian by
// L-BFGS, and laplace, whose Newton steps and evidence gradient come from
// automatic differentiation of its log p(y | f) at zero variance, and ep,
// whose tilted moments come by quadrature of that log p(y | f) (CLogLog
// gives none). On a held-out split the three predictive NLLs agree within
// 0.02.
func TestUserLikelihoodUnderEngines(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	gen := func(n int) *datasets.Dataset {
		ds := &datasets.Dataset{Name: "cloglog", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
		for i := 0; i < n; i++ {
			x := 6*rng.Float64() - 3
			p1 := 1 - math.Exp(-math.Exp(1.5*math.Sin(1.5*x)))
			ds.X[i] = x
			if rng.Float64() < p1 {
				ds.Y[i] = 1
			}
		}
		return ds
	}
	train, test := gen(150), gen(400)
	nll := map[string]float64{}
	for _, engine := range []string{"svi", "laplace", "ep"} {
		o := models.Options{
			Likelihood: models.LikelihoodOptions{Custom: CLogLog{Points: 20}},
			Posterior:  models.PosteriorOptions{Family: "full"},
			Inference:  engine,
			Train:      models.TrainOptions{Optimizer: "lbfgs", Epochs: 300, Seed: 1},
		}
		m, err := models.New(o)
		if err != nil {
			t.Fatal(engine, err)
		}
		if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
			t.Fatal(engine, err)
		}
		p, err := m.Predict(test.X, test.N, nil)
		if err != nil {
			t.Fatal(engine, err)
		}
		sc := models.Score(p, test.Y, 2)
		nll[engine] = sc.NLL
		t.Logf("%s: test NLL %.4f, error %.3f", engine, sc.NLL, sc.Error)
	}
	if len(nll) != 3 {
		t.Fatalf("NLLs of %d engines, want svi, laplace and ep", len(nll))
	}
	for e, v := range nll {
		if d := math.Abs(v - nll["svi"]); d > 0.02 {
			t.Errorf("%s's test NLL %.4f is %.4f from svi's %.4f", e, v, d, nll["svi"])
		}
	}
}
