package mcmc_test

import (
	"context"
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/mcmc"
)

// A probit classifier of one input sampled by MCMC: the engine is chosen
// by name (importing the package registers it), its settings are engine
// settings of the options, and the fitted model predicts by averaging over
// the draws and reports its chains' diagnostics.
func Example() {
	n := 60
	ds := &datasets.Dataset{Name: "steps", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
	for i := range ds.X {
		ds.X[i] = -3 + 6*float64(i)/float64(n-1)
		if math.Sin(1.3*ds.X[i]) > 0 {
			ds.Y[i] = 1
		}
		if i%5 == 0 { // label noise: no latent function separates the classes
			ds.Y[i] = 1 - ds.Y[i]
		}
	}
	m, err := models.New(models.Options{
		Likelihood: models.LikelihoodOptions{Name: "probit"},
		Posterior:  models.PosteriorOptions{Family: "full"}, // MCMC samples f at Z = X
		Inference:  "mcmc",
		Train:      models.TrainOptions{Seed: 1},
		// Hyper-parameters held at EP's fit; ellipses around EP's Gaussian.
		Settings: map[string]string{"mcmc.chains": "4", "mcmc.samples": "1000", "mcmc.warmup": "300", "mcmc.fit": "ep", "mcmc.proposal": "fit"},
	})
	if err != nil {
		panic(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		panic(err)
	}
	p, err := m.Predict([]float64{-2, 1}, 2, nil)
	if err != nil {
		panic(err)
	}
	d := mcmc.StateOf(m).Diagnostics
	fmt.Printf("p(y=1 | x=-2) < 0.5: %v, p(y=1 | x=1) > 0.5: %v\n", p[1] < 0.5, p[3] > 0.5)
	fmt.Printf("%d draws, max split-R-hat below 1.01: %v\n", d.Draws, d.MaxRHat < 1.01)
	// Output:
	// p(y=1 | x=-2) < 0.5: true, p(y=1 | x=1) > 0.5: true
	// 4000 draws, max split-R-hat below 1.01: true
}
