package main

import (
	"context"
	"fmt"
	"log"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

func main() {
train, err := datasets.ReadCSV("train.csv", datasets.CSVOptions{})
if err != nil {
	log.Fatal(err)
}
test, err := datasets.ReadCSV("test.csv", datasets.CSVOptions{NumClasses: train.C})
if err != nil {
	log.Fatal(err)
}
// A preset, or parts: Likelihood, Kernel, Posterior, Inputs, Inference. The zero
// values are gpc train's defaults: inputs standardised, trained to convergence.
m, err := models.New(models.Options{Model: "mgp"})
if err != nil {
	log.Fatal(err)
}
if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
	log.Fatal(err)
}
probs, err := m.Predict(test.X, test.N, nil) // test.N × C probabilities, row-major
if err != nil {
	log.Fatal(err)
}
s := models.Score(probs, test.Y, test.C)
fmt.Printf("test error %.3f, NLL %.3f\n", s.Error, s.NLL)
_ = m.Save("model.json") // gpc predict and gpc plot read it
}
