package svi

import (
	"math/rand/v2"
	"testing"
)

// Batches drawn ahead in the background are the generator's own sequence,
// in order, across many batches.
func TestNormalStreamIsTheSequence(t *testing.T) {
	ref := rand.New(rand.NewPCG(5, 0xe95))
	s := newNormalStream(rand.New(rand.NewPCG(5, 0xe95)))
	dst := make([]float64, 1001)
	for batch := 0; batch < 20; batch++ {
		s.Fill(dst)
		for i, v := range dst {
			if want := ref.NormFloat64(); v != want {
				t.Fatalf("batch %d draw %d = %v, want %v", batch, i, v, want)
			}
		}
	}
}

// A graph rebuilt for a larger batch asks for more draws per step: the
// sequence continues unbroken.
func TestNormalStreamGrows(t *testing.T) {
	ref := rand.New(rand.NewPCG(6, 1))
	s := newNormalStream(rand.New(rand.NewPCG(6, 1)))
	for batch, n := range []int{10, 10, 15, 15, 15} {
		dst := make([]float64, n)
		s.Fill(dst)
		for i, v := range dst {
			if want := ref.NormFloat64(); v != want {
				t.Fatalf("batch %d (length %d) draw %d = %v, want %v", batch, n, i, v, want)
			}
		}
	}
}
