package svi

import "math/rand/v2"

// normalStream deals out a generator's standard normal draws in batches of
// fixed size, drawing the next batch in the background while the caller
// trains on the current one. The draws are exactly the generator's
// sequence, as if drawn on demand; an MNIST step needs 157 000 of them
// (B×D for the sample of q(x)), ≈1.5 ms on one core that the step would
// otherwise wait for.
type normalStream struct {
	pcg   *rand.PCG // rng's source, kept to save and restore its state
	rng   *rand.Rand
	ready chan []float64 // the next batch, drawn or being drawn
}

func newNormalStream(pcg *rand.PCG) *normalStream {
	return &normalStream{pcg: pcg, rng: rand.New(pcg)}
}

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

// streamState is a stream's checkpoint: the generator's state after the
// batch drawn ahead, and that batch (nil when none was drawn yet).
type streamState struct {
	PCG   []byte
	Ready []float64
}

// state waits for the batch being drawn ahead, so that the generator is
// idle, and records it; the batch stays the next one Fill deals out.
func (s *normalStream) state() (streamState, error) {
	var st streamState
	if s.ready != nil {
		buf := <-s.ready
		st.Ready = append([]float64(nil), buf...)
		s.ready = make(chan []float64, 1)
		s.ready <- buf
	}
	b, err := s.pcg.MarshalBinary()
	st.PCG = b
	return st, err
}

// restore puts a state from state in place: the generator continues from
// it and the saved batch is dealt out next, as it would have been.
func (s *normalStream) restore(st streamState) error {
	if s.ready != nil {
		<-s.ready // the generator must be idle before it is overwritten
		s.ready = nil
	}
	if err := s.pcg.UnmarshalBinary(st.PCG); err != nil {
		return err
	}
	if st.Ready != nil {
		s.ready = make(chan []float64, 1)
		s.ready <- append([]float64(nil), st.Ready...)
	}
	return nil
}
