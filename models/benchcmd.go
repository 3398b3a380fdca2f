package models

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
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

// BenchStats is the cost of one training iteration.
type BenchStats struct {
	// Milliseconds is the mean wall time of an iteration.
	Milliseconds float64
	// MultiplyAdds is the number of multiply-adds in the iteration's matrix
	// products (graph.MultiplyAdds), independent of the machine.
	MultiplyAdds int64
}

// BenchStep returns the mean milliseconds per training iteration (one ELBO
// forward and backward pass and one Adam update) of a model on random data
// of the configuration's shape, after two warm-up iterations. The noise
// models learn their noise, as in the paper's MNIST runs.
func BenchStep(kind Kind, config string, iters int) (float64, error) {
	st, err := Bench(kind, config, iters)
	return st.Milliseconds, err
}

// Bench is BenchStep with the iteration's multiply-add count.
func Bench(kind Kind, config string, iters int) (BenchStats, error) {
	cfg, ok := BenchConfigs[config]
	if !ok {
		return BenchStats{}, fmt.Errorf("models: unknown benchmark configuration %q (want waveform or mnist)", config)
	}
	if iters < 1 {
		return BenchStats{}, fmt.Errorf("models: %d benchmark iterations", iters)
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
		return BenchStats{}, err
	}
	if err := m.initialize(ds, io.Discard); err != nil {
		return BenchStats{}, err
	}
	obj, err := m.newObjective(ds)
	if err != nil {
		return BenchStats{}, err
	}
	params := obj.solverParams()
	batches, err := solvers.EpochBatches(cfg.N, cfg.B, 1, 1)
	if err != nil {
		return BenchStats{}, err
	}
	var start time.Time
	var macs int64
	for i := -2; i < iters; i++ {
		if i == 0 {
			start = time.Now()
			macs = graph.MultiplyAdds()
		}
		b := batches[(i+2)%len(batches)]
		_, g, err := obj.Step(b)
		if err != nil {
			return BenchStats{}, err
		}
		if err := obj.adam.Step(params, g); err != nil {
			return BenchStats{}, err
		}
	}
	return BenchStats{
		Milliseconds: float64(time.Since(start).Microseconds()) / 1000 / float64(iters),
		MultiplyAdds: (graph.MultiplyAdds() - macs) / int64(iters),
	}, nil
}
