package svi

import (
	"math/rand/v2"
	"testing"
)

// Batches drawn ahead in the background are the generator's own sequence,
// in order, across many batches.
func TestNormalStreamIsTheSequence(t *testing.T) {
	ref := rand.New(rand.NewPCG(5, 0xe95))
	s := newNormalStream(rand.NewPCG(5, 0xe95))
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
	s := newNormalStream(rand.NewPCG(6, 1))
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

// A stream restored from a state taken mid-sequence (with a batch drawn
// ahead, or before the first) deals out the rest of the sequence.
func TestNormalStreamStateRoundTrip(t *testing.T) {
	for _, before := range []int{0, 3} {
		ref := rand.New(rand.NewPCG(7, 2))
		s := newNormalStream(rand.NewPCG(7, 2))
		dst := make([]float64, 50)
		for range before {
			s.Fill(dst)
			for range dst {
				ref.NormFloat64()
			}
		}
		st, err := s.state()
		if err != nil {
			t.Fatal(err)
		}
		r := newNormalStream(rand.NewPCG(1, 1))
		r.Fill(dst) // a stream that has run must be overwritten too
		if err := r.restore(st); err != nil {
			t.Fatal(err)
		}
		for batch := range 4 {
			r.Fill(dst)
			for i, v := range dst {
				if want := ref.NormFloat64(); v != want {
					t.Fatalf("after %d batches: restored batch %d draw %d = %v, want %v", before, batch, i, v, want)
				}
			}
		}
	}
}
