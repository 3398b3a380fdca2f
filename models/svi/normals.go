package svi

import "math/rand/v2"

// normalStream deals out a generator's standard normal draws in batches of
// fixed size, drawing the next batch in the background while the caller
// trains on the current one. The draws are exactly the generator's
// sequence, as if drawn on demand; an MNIST step needs 157 000 of them
// (B×D for the sample of q(x)), ≈1.5 ms on one core that the step would
// otherwise wait for.
type normalStream struct {
	rng   *rand.Rand
	ready chan []float64 // the next batch, drawn or being drawn
}

func newNormalStream(rng *rand.Rand) *normalStream { return &normalStream{rng: rng} }

// Fill copies the next len(dst) draws into dst. When the length changes (a
// graph rebuilt for a larger batch), the batch drawn ahead is used as far as
// it goes and the rest drawn on demand, so the sequence is unbroken.
func (s *normalStream) Fill(dst []float64) {
	if s.ready == nil {
		s.ready = s.draw(make([]float64, len(dst)))
	}
	buf := <-s.ready
	n := copy(dst, buf)
	for i := n; i < len(dst); i++ {
		dst[i] = s.rng.NormFloat64()
	}
	if len(buf) != len(dst) {
		buf = make([]float64, len(dst))
	}
	s.ready = s.draw(buf)
}

// draw fills buf in a new goroutine and sends it on the returned channel,
// which has room for it: a batch nobody collects does not leak a blocked
// goroutine. Only that goroutine touches rng until the batch is received.
func (s *normalStream) draw(buf []float64) chan []float64 {
	ch := make(chan []float64, 1)
	go func() {
		for i := range buf {
			buf[i] = s.rng.NormFloat64()
		}
		ch <- buf
	}()
	return ch
}
