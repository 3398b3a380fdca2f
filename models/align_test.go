package models

import (
	"io"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/layers/kernels"
	"testing"

	"github.com/gpc-dev/gpc/solvers"
)

// Per-point input-noise variances must travel with their rows through the
// epoch shuffle (the original given-noise code indexed them by batch
// position instead).
func TestGivenNoiseFollowsShuffledRows(t *testing.T) {
	ds := syntheticSet(30, 2, 3, 9)
	ds.Noise = make([]float64, ds.N*ds.D)
	for i := range ds.Noise {
		ds.Noise[i] = float64(i) + 0.5 // unique per entry
	}
	for _, k := range []string{"nimgp", "nimgp-fo"} {
		m, _ := New(opts(k, 5, 1, 8, 0))
		if err := m.initialize(ds, io.Discard); err != nil {
			t.Fatal(err)
		}
		obj, err := m.newObjective(ds)
		if err != nil {
			t.Fatal(err)
		}
		batches, _ := solvers.EpochBatches(ds.N, 8, 4, 2)
		for _, b := range batches {
			obj.Load(b)
			// NIMGP takes the variances as their reciprocals and logarithms.
			name, as := "noise", func(v float64) float64 { return v }
			if k == "nimgp" {
				name, as = "noise precision", func(v float64) float64 { return 1 / v }
			}
			noise, x := obj.Fed(name), obj.Fed("x")
			if len(noise) != len(x) {
				t.Fatalf("%s: %d values fed as %q, want %d", k, len(noise), name, len(x))
			}
			for r, i := range b.Index {
				for d := 0; d < ds.D; d++ {
					if got, want := noise[r*ds.D+d], as(ds.Noise[i*ds.D+d]); got != want {
						t.Fatalf("%s: batch row %d (data row %d) has %s %v, want %v", k, r, i, name, got, want)
					}
					if got, want := x[r*ds.D+d], ds.X[i*ds.D+d]; got != want {
						t.Fatalf("%s: batch row %d has input %v, want %v", k, r, got, want)
					}
				}
			}
		}
	}
}

// NIMGP_FO's Δ from automatic differentiation equals the closed form for the
// SE kernel, ∂μ_c/∂x = −Σ_j α_j k(x, z_j) Λ⁻¹(x − z_j) with α = K_ZZ⁻¹ m_c.
func TestFirstOrderDeltaMatchesClosedForm(t *testing.T) {
	ds := syntheticSet(40, 2, 3, 3)
	m, _ := New(withNoise(opts("nimgp-fo", 6, 1, 50, 2), 0.3, false))
	if err := m.initialize(ds, io.Discard); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for c := range m.post.Mean {
		for i := range m.post.Mean[c].Data {
			m.post.Mean[c].Data[i] = rng.NormFloat64()
		}
	}
	x := ds.X[:10*ds.D]
	_, _, delta, err := m.Marginals(x, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < m.C; c++ {
		se := m.kernels[c].(*kernels.SE)
		z := m.post.Z[c].Data
		M, D := m.post.M, m.D
		// α = K_ZZ⁻¹ m via the same K_ZZ the model uses (σ₀² + jitter on the diagonal).
		K := mat.NewSymDense(M, nil)
		kv := func(a, b []float64) float64 {
			var s float64
			for d := 0; d < D; d++ {
				s += (a[d] - b[d]) * (a[d] - b[d]) / se.Lengthscales.Value(d)
			}
			return se.Variance.Value(0) * math.Exp(-0.5*s)
		}
		for i := 0; i < M; i++ {
			for j := i; j < M; j++ {
				v := kv(z[i*D:(i+1)*D], z[j*D:(j+1)*D])
				if i == j {
					v += se.WhiteNoise.Value(0) + m.Opts.Posterior.Jitter
				}
				K.SetSym(i, j, v)
			}
		}
		var ch mat.Cholesky
		ch.Factorize(K)
		alpha := mat.NewVecDense(M, nil)
		ch.SolveVecTo(alpha, mat.NewVecDense(M, m.post.Mean[c].Data))
		for i := 0; i < 10; i++ {
			xi := x[i*D : (i+1)*D]
			var want float64
			for d := 0; d < D; d++ {
				var g float64
				for j := 0; j < M; j++ {
					zj := z[j*D : (j+1)*D]
					g -= alpha.AtVec(j) * kv(xi, zj) * (xi[d] - zj[d]) / se.Lengthscales.Value(d)
				}
				want += g * g * 0.3
			}
			if got := delta[i*m.C+c]; math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Fatalf("class %d row %d: Δ = %v from autodiff, %v in closed form", c, i, got, want)
			}
		}
	}
}
