package models

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// Identical inputs make all inducing points equal, so the linear kernel's
// K_ZZ is c·11ᵀ + jitter·I, whose second Cholesky pivot is exactly zero
// when the jitter (1e-300) vanishes against c: the factorisation fails and
// training raises the jitter (with a warning) instead of stopping.
func TestCholeskyFailureRaisesJitter(t *testing.T) {
	ds := syntheticSet(60, 2, 3, 1)
	for i := range ds.X {
		ds.X[i] = 1
	}
	// Unwhitened, the failure comes when q(u) is set to the prior; whitened
	// (q(v) = N(0, I) needs no factorisation), in the first training step.
	for _, whitened := range []bool{false, true} {
		o := opts("mgp", 10, 2, 30, 0)
		o.Kernel.Name, o.Posterior.Jitter, o.Posterior.Whitened = "linear", 1e-300, whitened
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		var warn bytes.Buffer
		if err := m.Fit(context.Background(), ds, FitConfig{Warnings: &warn}); err != nil {
			t.Fatalf("whitened=%v: training stopped: %v", whitened, err)
		}
		if !strings.Contains(warn.String(), "jitter raised") {
			t.Fatalf("whitened=%v: no jitter warning; warnings: %q", whitened, warn.String())
		}
		if j := m.post.JitterParam.Data[0]; !(j >= 1e-6) {
			t.Fatalf("whitened=%v: jitter is still %g", whitened, j)
		}
		t.Logf("whitened=%v: %s", whitened, strings.TrimSpace(warn.String()))
	}
}

// TestGivenNoiseMustBeUsable: zero variances given with the data are
// refused by the models that divide by them and accepted by NIMGP_FO
// (Δ = 0); with none given at all, every noise-aware model learns them,
// as gpc train does.
func TestGivenNoiseMustBeUsable(t *testing.T) {
	ds := syntheticSet(20, 2, 3, 1)
	zero := ds.Clone()
	zero.Noise = make([]float64, ds.N*ds.D)
	for _, k := range []string{"nimgp", "nimgp-nn"} {
		m, _ := New(opts(k, 4, 1, 50, 0))
		err := m.Fit(context.Background(), zero, FitConfig{})
		if err == nil || !strings.Contains(err.Error(), "positive input-noise variances") {
			t.Errorf("%s with zero noise variances: got %v", k, err)
		}
		m, _ = New(opts(k, 4, 1, 50, 0))
		if err := m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil || m.LearnedNoise() == nil || !m.Opts.Inputs.Noise.Learn {
			t.Errorf("%s without noise variances: %v, learned %v", k, err, m.LearnedNoise())
		}
	}
	m, _ := New(opts("nimgp-fo", 4, 1, 50, 0))
	if err := m.Fit(context.Background(), zero, FitConfig{Warnings: io.Discard}); err != nil {
		t.Errorf("NIMGP_FO with zero noise (Δ = 0): %v", err)
	}
}
