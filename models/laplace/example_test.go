package laplace_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
	_ "github.com/gpc-dev/gpc/models/laplace" // registers the laplace engine and the htpc preset
)

// Any likelihood runs under the Laplace engine by naming it: here binary
// probit on the full family, its kernel hyper-parameters chosen by the
// Laplace evidence; the Gaussian at the mode is the model's q(f), so
// Predict, Save and Score are the framework's. The HTPC preset is the same
// engine with the heavy-tailed likelihood: models.Options{Model: "htpc"}.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 60
	ds := &datasets.Dataset{N: n, D: 2, C: 2, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := range n {
		ds.Y[i] = i % 2
		ds.X[2*i] = rng.NormFloat64() + 2*float64(ds.Y[i]) - 1
		ds.X[2*i+1] = rng.NormFloat64()
	}
	m, err := models.New(models.Options{
		Likelihood: models.LikelihoodOptions{Name: "probit"},
		Posterior:  models.PosteriorOptions{Family: "full"},
		Inference:  "laplace",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		fmt.Println(err)
		return
	}
	p, err := m.Predict(ds.X, ds.N, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("engine %s, training error %.2f\n", m.Engine().Name(), models.Score(p, ds.Y, 2).Error)
	// Output: engine laplace, training error 0.08
}
