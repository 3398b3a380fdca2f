package models

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/solvers"
)

// BenchConfig describes one of the paper's timing configurations.
type BenchConfig struct {
	Name          string
	N, D, C, B, M int
	Kernel        string
}

// BenchConfigs are the two configurations timed by `gpc bench`: Waveform
// (B=50, M=50, C=3, d=21, SE) and MNIST (B=200, M=100, C=10, d=784,
// polynomial kernel of degree 9).
var BenchConfigs = map[string]BenchConfig{
	"waveform": {Name: "waveform", N: 1000, D: 21, C: 3, B: 50, M: 50, Kernel: "se"},
	"mnist":    {Name: "mnist", N: 2000, D: 784, C: 10, B: 200, M: 100, Kernel: "poly"},
}

// BenchStep returns the mean milliseconds per training iteration (one ELBO
// forward and backward pass and one Adam update) of a model on random data
// of the configuration's shape, after two warm-up iterations. The noise
// models learn their noise, as in the paper's MNIST runs.
func BenchStep(kind Kind, config string, iters int) (float64, error) {
	cfg, ok := BenchConfigs[config]
	if !ok {
		return 0, fmt.Errorf("models: unknown benchmark configuration %q (want waveform or mnist)", config)
	}
	if iters < 1 {
		return 0, fmt.Errorf("models: %d benchmark iterations", iters)
	}
	rng := rand.New(rand.NewPCG(1, 7))
	ds := &datasets.Dataset{Name: cfg.Name, N: cfg.N, D: cfg.D, C: cfg.C, X: make([]float64, cfg.N*cfg.D), Y: make([]int, cfg.N)}
	for i := range ds.X {
		ds.X[i] = rng.NormFloat64()
	}
	for i := range ds.Y {
		ds.Y[i] = rng.IntN(cfg.C)
	}
	m, err := New(Options{Kind: kind, Inducing: cfg.M, Batch: cfg.B, Kernel: cfg.Kernel, LearnNoise: kind != MGP})
	if err != nil {
		return 0, err
	}
	if err := m.initialize(ds, io.Discard); err != nil {
		return 0, err
	}
	obj, err := m.newObjective(ds)
	if err != nil {
		return 0, err
	}
	params := obj.solverParams()
	batches, err := solvers.EpochBatches(cfg.N, cfg.B, 1, 1)
	if err != nil {
		return 0, err
	}
	var start time.Time
	for i := -2; i < iters; i++ {
		if i == 0 {
			start = time.Now()
		}
		b := batches[(i+2)%len(batches)]
		_, g, err := obj.Step(b)
		if err != nil {
			return 0, err
		}
		if err := obj.adam.Step(params, g); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(iters), nil
}
