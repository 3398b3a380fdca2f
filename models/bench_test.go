package models

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/solvers"
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

func benchStep(b *testing.B, kind Kind, n, d, c, batch, m int, kernel string) {
	ds := syntheticSet(n, d, c, 1)
	mod, err := New(Options{Kind: kind, Inducing: m, Batch: batch, Kernel: kernel, NoiseVar: 0.1, LearnNoise: kind != MGP})
	if err != nil {
		b.Fatal(err)
	}
	if err := mod.initialize(ds, io.Discard); err != nil {
		b.Fatal(err)
	}
	obj, err := mod.newObjective(ds)
	if err != nil {
		b.Fatal(err)
	}
	batches, _ := solvers.EpochBatches(n, batch, 1, 1)
	params := obj.solverParams()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt := batches[i%len(batches)]
		_, g, err := obj.Step(bt)
		if err != nil {
			b.Fatal(err)
		}
		if err := obj.adam.Step(params, g); err != nil {
			b.Fatal(err)
		}
	}
}

// One ELBO forward+backward step and Adam update: waveform-sized
// (B=50, M=50, C=3, d=21) and MNIST-sized (B=200, M=100, C=10, d=784).
func BenchmarkStepWaveform(b *testing.B) {
	for _, k := range Kinds {
		b.Run(string(k), func(b *testing.B) { benchStep(b, k, 1000, 21, 3, 50, 50, "se") })
	}
}

func BenchmarkStepMNIST(b *testing.B) {
	for _, k := range Kinds {
		b.Run(string(k), func(b *testing.B) { benchStep(b, k, 2000, 784, 10, 200, 100, "poly") })
	}
}
