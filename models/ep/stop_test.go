package ep

import (
	"context"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// A cancelled context stops Run and RunFITC before their first site update
// with an error wrapping the context's, leaving the sites at their start.
func TestRunStopsOnCancelledContext(t *testing.T) {
	const n = 40
	K, _ := seKernel(n, 3)
	y := make([]float64, n)
	for i := range y {
		y[i] = float64(2*(i%2) - 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := Config{Context: ctx}
	lik := likelihoods.NewGaussian("g", 0.3)
	sites := NewSites(n)
	if _, err := Run(K, y, lik, sites, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want the context's error", err)
	}
	for i := range sites.Tau {
		if sites.Tau[i] != 0 || sites.Nu[i] != 0 {
			t.Fatalf("Run moved site %d before stopping", i)
		}
	}
	lr := LowRank{Lambda: make([]float64, n), V: mat.NewDense(2, n, nil)}
	for i := range lr.Lambda {
		lr.Lambda[i] = 1
		lr.V.Set(i%2, i, 0.5)
	}
	if _, err := RunFITC(lr, y, lik, sites, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("RunFITC: %v, want the context's error", err)
	}
}
