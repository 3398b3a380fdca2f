package models_test

import (
	"context"
	"fmt"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// Train NIMGP on the 1-D toy problem with known input noise and predict.
func Example() {
	prob, _ := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), 0.1, 1)
	_, train := prob.Sample(200, 1)
	_, test := prob.Sample(100, 2)
	m, err := models.New(models.Options{
		Kind: models.NIMGP, Inducing: 20, Epochs: 5, Batch: 50,
		NoiseVar: 0.1, TestSamples: 50, Seed: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
		fmt.Println(err)
		return
	}
	probs, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var sum float64
	for c := 0; c < test.C; c++ {
		sum += probs[c]
	}
	fmt.Printf("%d rows × %d classes; first row sums to %.6f\n", len(probs)/test.C, test.C, sum)
	// Output: 100 rows × 3 classes; first row sums to 1.000000
}
