package mcmc

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// benchChain returns one chain of a probit model on n random rows of 10
// features, started.
func benchChain(b *testing.B, n int) *chain {
	rng := rand.New(rand.NewPCG(1, 1))
	ds := &datasets.Dataset{Name: "bench", N: n, D: 10, C: 2, X: make([]float64, n*10), Y: make([]int, n)}
	for i := range ds.X {
		ds.X[i] = rng.NormFloat64()
	}
	for i := range ds.Y {
		if ds.X[i*10] > 0 {
			ds.Y[i] = 1
		}
	}
	o := smallOpts("samples", "1", "warmup", "0", "chains", "1")
	m, err := models.New(o)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		b.Fatal(err)
	}
	y, w := m.Likelihood().Targets(ds.Y, 2)
	t, err := newTarget(m, y, w, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := newChain(0, 1, t)
	if err := c.start(); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkLogLik is one evaluation of log p(y|f) (400 rows, probit).
func BenchmarkLogLik(b *testing.B) {
	c := benchChain(b, 400)
	defer c.t.close()
	b.ResetTimer()
	for range b.N {
		if _, err := c.t.logLik(c.f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkESSStep is one elliptical slice step (400 rows, probit).
func BenchmarkESSStep(b *testing.B) {
	c := benchChain(b, 400)
	defer c.t.close()
	b.ResetTimer()
	for range b.N {
		if err := c.ellipticalSlice(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.shrinks)/float64(c.steps), "shrinks/step")
}

// BenchmarkFactor is one evaluation and factorisation of the prior (400 rows).
func BenchmarkFactor(b *testing.B) {
	c := benchChain(b, 400)
	defer c.t.close()
	b.ResetTimer()
	for range b.N {
		if err := c.t.factor(); err != nil {
			b.Fatal(err)
		}
	}
}
