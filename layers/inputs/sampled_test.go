package inputs

import (
	"math"
	"testing"
)

// The sampled-mc model draws test inputs from N(x̃, V) (a uniform prior's
// posterior), as many as its TestSamples; the sampled one draws none.
func TestSampledMCIsASampler(t *testing.T) {
	m, err := New("sampled-mc", Config{Noise: NoiseConfig{Var: 0.25}, TestSamples: 7})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := m.(Sampler)
	if !ok || m.Name() != "sampled-mc" {
		t.Fatalf("%T (%s) is not a Sampler", m, m.Name())
	}
	if s.Samples() != 7 {
		t.Errorf("Samples() = %d, want 7", s.Samples())
	}
	mean, sd := make([]float64, 3), make([]float64, 3)
	s.TestPosterior([]float64{1, -2, 0.5}, []float64{0.25, 0, 4}, mean, sd)
	for k, want := range [][2]float64{{1, 0.5}, {-2, 0}, {0.5, 2}} {
		if mean[k] != want[0] || math.Abs(sd[k]-want[1]) > 1e-15 {
			t.Errorf("dimension %d: N(%v, %v²), want N(%v, %v²)", k, mean[k], sd[k], want[0], want[1])
		}
	}
	plain, err := New("sampled", Config{Noise: NoiseConfig{Var: 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.(Sampler); ok {
		t.Error("the sampled model predicts by drawing inputs; it should predict at the observed ones")
	}
}
