package models

import (
	"math/rand/v2"

	"github.com/gpc-dev/gpc/datasets"
)

// syntheticSet returns n random rows of d features labelled 0..c−1.
func syntheticSet(n, d, c int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	ds := &datasets.Dataset{Name: "random", N: n, D: d, C: c, X: make([]float64, n*d), Y: make([]int, n)}
	for i := range ds.X {
		ds.X[i] = rng.NormFloat64()
	}
	for i := range ds.Y {
		ds.Y[i] = rng.IntN(c)
	}
	return ds
}

// noisyPresets are the noisy-input paper's models.
var noisyPresets = []string{"mgp", "nimgp", "nimgp-nn", "nimgp-fo"}

// opts is a preset with the sizes tests vary most.
func opts(preset string, inducing, epochs, batch int, seed uint64) Options {
	o := Options{Model: preset}
	o.Posterior.Inducing = inducing
	o.Train = TrainOptions{Epochs: epochs, Batch: batch, Seed: seed}
	return pinned(o)
}

// pinned fixes what the library's defaults would choose for the tests
// that are about something else: Adam for the given number of epochs
// (not a preset's L-BFGS or the stopping rule) on the inputs as given.
func pinned(o Options) Options {
	if o.Train.Optimizer == "" {
		o.Train.Optimizer = "adam"
	}
	o.Train.Stop = StopBudget
	o.Inputs.NoStandardize = !o.Inputs.Standardize
	return o
}

// withNoise sets given noise v (learn false) or learned noise.
func withNoise(o Options, v float64, learn bool) Options {
	o.Inputs.Noise.Var, o.Inputs.Noise.Learn = v, learn
	return o
}
