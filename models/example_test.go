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
	opts := models.Options{Model: "nimgp"}
	opts.Posterior.Inducing = 20
	opts.Inputs.Noise.Var, opts.Inputs.TestSamples = 0.1, 50
	opts.Train = models.TrainOptions{Epochs: 5, Batch: 50, Seed: 1}
	m, err := models.New(opts)
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

// Compose a model from parts instead of a preset: a binary logit likelihood
// on the non-sparse posterior (Z = X held fixed), trained on two blobs.
func Example_composition() {
	ds := &datasets.Dataset{Name: "blobs", N: 60, D: 1, C: 2, X: make([]float64, 60), Y: make([]int, 60)}
	for i := range ds.X {
		ds.Y[i] = i % 2
		ds.X[i] = float64(i%2)*4 - 2 + float64(i%7)/7
	}
	opts := models.Options{
		Likelihood: models.LikelihoodOptions{Name: "logit"},
		Posterior:  models.PosteriorOptions{Family: "full"},
		Train:      models.TrainOptions{Epochs: 20, Batch: 60, LR: 0.05, Seed: 1},
	}
	m, err := models.New(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		fmt.Println(err)
		return
	}
	probs, _ := m.Predict([]float64{-2, 2}, 2, nil)
	fmt.Println("model:", m.Name(), "inputs:", m.Inputs().Name(), "input noise:", m.InputNoise() != nil)
	fmt.Printf("p(y=1 | x=-2) < 0.5: %v, p(y=1 | x=2) > 0.5: %v\n", probs[1] < 0.5, probs[3] > 0.5)
	// Output:
	// model: custom inputs: observed input noise: false
	// p(y=1 | x=-2) < 0.5: true, p(y=1 | x=2) > 0.5: true
}
