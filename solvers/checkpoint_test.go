package solvers

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// noisyLinReg is linReg with gradient noise from its own generator: state
// that only a Stateful objective carries across a checkpoint.
type noisyLinReg struct {
	*linReg
	pcg *rand.PCG
	rng *rand.Rand
}

func newNoisyLinReg() *noisyLinReg {
	pcg := rand.NewPCG(3, 4)
	return &noisyLinReg{linReg: newLinReg(40, 9), pcg: pcg, rng: rand.New(pcg)}
}

func (n *noisyLinReg) Step(b Batch) (float64, [][]float64, error) {
	loss, g, err := n.linReg.Step(b)
	for i := range g[0] {
		g[0][i] += 0.1 * n.rng.NormFloat64()
	}
	return loss, g, err
}

func (n *noisyLinReg) MarshalState() ([]byte, error) { return n.pcg.MarshalBinary() }
func (n *noisyLinReg) UnmarshalState(b []byte) error { return n.pcg.UnmarshalBinary(b) }

// withoutDurations drops the wall times, the one part of a history that
// differs between two runs of the same computation.
func withoutDurations(h History) History {
	h = slices.Clone(h)
	for i := range h {
		h[i].Duration = 0
	}
	return h
}

// roundTrip passes a snapshot through gob, as a checkpoint file would.
func roundTrip(t *testing.T, s *Snapshot) *Snapshot {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		t.Fatal(err)
	}
	var out Snapshot
	if err := gob.NewDecoder(&buf).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// A run stopped after 3 epochs and resumed from its last checkpoint ends
// with exactly the params and history of a run of 6 epochs straight, for
// both optimisers, with a Stateful objective, and with MaxIterations
// counted across the sessions.
func TestTrainResumeIsBitExact(t *testing.T) {
	opts := map[string]func() Optimizer{
		"adam":     func() Optimizer { return NewAdam(0.05) },
		"adadelta": func() Optimizer { return NewAdadelta(0.1) },
	}
	for name, newOpt := range opts {
		for _, maxIter := range []int{0, 25} {
			cfg := func() TrainConfig {
				return TrainConfig{N: 40, BatchSize: 7, Epochs: 6, Seed: 11, Optimizer: newOpt(), MaxIterations: maxIter}
			}
			straight := newNoisyLinReg()
			wantHist, err := Train(context.Background(), straight, straight.params(), cfg())
			if err != nil {
				t.Fatal(err)
			}

			first := newNoisyLinReg()
			ctx, cancel := context.WithCancel(context.Background())
			c := cfg()
			var last *Snapshot
			saved := 0
			c.Callback = func(e Epoch) error {
				if e.Epoch == 3 {
					cancel()
				}
				return nil
			}
			c.Checkpoint = func(s *Snapshot) error { last, saved = s, saved+1; return nil }
			if _, err := Train(ctx, first, first.params(), c); err == nil {
				t.Fatalf("%s: the interrupted run did not report its cancellation", name)
			}
			cancel()
			if saved != 3 || last.Epoch != 3 {
				t.Fatalf("%s: %d checkpoints, the last after epoch %d; want 3, after epoch 3", name, saved, last.Epoch)
			}

			second := newNoisyLinReg()
			c = cfg()
			c.Resume = roundTrip(t, last)
			hist, err := Train(context.Background(), second, second.params(), c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(second.beta, straight.beta) {
				t.Errorf("%s, max %d iterations: resumed params %v, straight %v", name, maxIter, second.beta, straight.beta)
			}
			if !slices.Equal(withoutDurations(hist), withoutDurations(wantHist)) {
				t.Errorf("%s, max %d iterations: resumed history %+v, straight %+v", name, maxIter, withoutDurations(hist), withoutDurations(wantHist))
			}
		}
	}
}

// A snapshot of other shapes is refused before anything changes, naming
// the param.
func TestTrainResumeRejectsWrongShapes(t *testing.T) {
	l := newLinReg(20, 1)
	s := &Snapshot{Epoch: 1, Iterations: 3, Params: [][]float64{{1, 2}}}
	s.Optimizer, _ = NewAdam(0.1).MarshalState()
	_, err := Train(context.Background(), l, l.params(), TrainConfig{N: 20, BatchSize: 7, Epochs: 3, Optimizer: NewAdam(0.1), Resume: s})
	if err == nil || !strings.Contains(err.Error(), `param "beta"`) || !strings.Contains(err.Error(), "2 values") {
		t.Fatalf("got %v, want an error naming param \"beta\" and its 2 values", err)
	}
	if l.calls != 0 || !slices.Equal(l.beta, make([]float64, 3)) {
		t.Fatal("a refused Resume changed the params or stepped")
	}
	s.Params = [][]float64{{1, 2, 3}, {4}}
	if _, err := Train(context.Background(), l, l.params(), TrainConfig{N: 20, Epochs: 3, Optimizer: NewAdam(0.1), Resume: s}); err == nil || !strings.Contains(err.Error(), "2 params") {
		t.Fatalf("got %v, want an error about 2 params", err)
	}
}

// An optimiser that cannot save its state is refused before the first step.
func TestTrainCheckpointNeedsStatefulOptimizer(t *testing.T) {
	l := newLinReg(20, 1)
	_, err := Train(context.Background(), l, l.params(), TrainConfig{N: 20, Epochs: 3, Optimizer: nopOptimizer{},
		Checkpoint: func(*Snapshot) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "Stateful") || l.calls != 0 {
		t.Fatalf("got %v after %d steps, want a refusal naming Stateful before any step", err, l.calls)
	}
}

// sleepy takes a fixed time per step, so checkpoint intervals can be tested.
type sleepy struct {
	*linReg
	d time.Duration
}

func (s sleepy) Step(b Batch) (float64, [][]float64, error) {
	time.Sleep(s.d)
	return s.linReg.Step(b)
}

// CheckpointEvery spaces checkpoints at least that far apart (0: every
// epoch), and a checkpoint error ends training with it.
func TestTrainCheckpointEvery(t *testing.T) {
	run := func(every time.Duration) []time.Time {
		l := sleepy{newLinReg(20, 1), 5 * time.Millisecond}
		var at []time.Time
		_, err := Train(context.Background(), l, l.params(), TrainConfig{N: 20, Epochs: 12, Optimizer: NewAdam(0.1),
			CheckpointEvery: every, Checkpoint: func(*Snapshot) error { at = append(at, time.Now()); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if n := len(run(0)); n != 12 {
		t.Errorf("CheckpointEvery 0: %d checkpoints in 12 epochs, want 12", n)
	}
	if n := len(run(time.Hour)); n != 0 {
		t.Errorf("CheckpointEvery 1h: %d checkpoints in a fraction of a second", n)
	}
	every := 18 * time.Millisecond
	start := time.Now()
	at := run(every)
	// At most one a full interval of the run's wall time (12 epochs of ≥ 5
	// ms: 3 on a quiet machine, more when a loaded one stretches them), and
	// fewer than one an epoch.
	if most := int(time.Since(start)/every) + 1; len(at) == 0 || len(at) > most || len(at) >= 12 {
		t.Errorf("CheckpointEvery %v: %d checkpoints in 12 epochs of ≥ 5 ms taking %v", every, len(at), time.Since(start))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < every {
			t.Errorf("checkpoints %d and %d only %v apart", i-1, i, gap)
		}
	}

	l := newLinReg(20, 1)
	_, err := Train(context.Background(), l, l.params(), TrainConfig{N: 20, Epochs: 3, Optimizer: NewAdam(0.1),
		Checkpoint: func(*Snapshot) error { return errDiskFull }})
	if err == nil || !strings.Contains(err.Error(), "checkpoint after epoch 1") || !strings.Contains(err.Error(), errDiskFull.Error()) {
		t.Fatalf("got %v, want the checkpoint error after epoch 1", err)
	}
}

var errDiskFull = stringError("disk full")

type stringError string

func (e stringError) Error() string { return string(e) }

// cancelAt is an objective that cancels its context during step k, as a
// SIGTERM arriving mid-epoch would.
type cancelAt struct {
	*noisyLinReg
	k, steps int
	cancel   func()
}

func (c *cancelAt) Step(b Batch) (float64, [][]float64, error) {
	c.steps++
	if c.steps == c.k {
		c.cancel()
	}
	return c.noisyLinReg.Step(b)
}

// Cancelled in the middle of epoch 4, a checkpointed run finishes that
// epoch, takes a checkpoint at its end even though the hour between
// checkpoints has not passed, and reports the cancellation; resumed from
// that checkpoint it ends exactly where a run straight through ends. A
// cancellation in the last epoch completes the run. Without a Checkpoint
// the run stops at once, as before.
func TestTrainCancelledMidEpochCheckpointsItsEnd(t *testing.T) {
	cfg := func() TrainConfig {
		return TrainConfig{N: 40, BatchSize: 7, Epochs: 6, Seed: 11, Optimizer: NewAdam(0.05)}
	}
	straight := newNoisyLinReg()
	wantHist, err := Train(context.Background(), straight, straight.params(), cfg())
	if err != nil {
		t.Fatal(err)
	}
	const perEpoch = 6 // ⌈40/7⌉
	for _, k := range []int{3*perEpoch + 2, 5*perEpoch + 4} {
		ctx, cancel := context.WithCancel(context.Background())
		first := &cancelAt{noisyLinReg: newNoisyLinReg(), k: k, cancel: cancel}
		c := cfg()
		c.CheckpointEvery = time.Hour
		var saved []*Snapshot
		c.Checkpoint = func(s *Snapshot) error { saved = append(saved, s); return nil }
		_, err := Train(ctx, first, first.params(), c)
		cancel()
		epoch := (k + perEpoch - 1) / perEpoch
		if epoch == 6 {
			if err != nil || !slices.Equal(first.beta, straight.beta) {
				t.Fatalf("cancelled in the last epoch: err %v, params %v, want the finished run's %v", err, first.beta, straight.beta)
			}
			continue
		}
		if !errors.Is(err, context.Canceled) || first.steps != epoch*perEpoch {
			t.Fatalf("cancelled at step %d: err %v after %d steps, want context.Canceled after %d", k, err, first.steps, epoch*perEpoch)
		}
		if len(saved) != 1 || saved[0].Epoch != epoch {
			t.Fatalf("cancelled at step %d: %d checkpoints %v, want one after epoch %d", k, len(saved), saved, epoch)
		}
		second := newNoisyLinReg()
		c = cfg()
		c.Resume = roundTrip(t, saved[0])
		hist, err := Train(context.Background(), second, second.params(), c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(second.beta, straight.beta) || !slices.Equal(withoutDurations(hist), withoutDurations(wantHist)) {
			t.Fatalf("resumed after a cancellation at step %d: params %v, straight %v", k, second.beta, straight.beta)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	plain := &cancelAt{noisyLinReg: newNoisyLinReg(), k: 3*perEpoch + 2, cancel: cancel}
	_, err = Train(ctx, plain, plain.params(), cfg())
	cancel()
	if !errors.Is(err, context.Canceled) || plain.steps != 3*perEpoch+2 {
		t.Fatalf("without a checkpoint: err %v after %d steps, want context.Canceled after %d", err, plain.steps, 3*perEpoch+2)
	}
}

// streamingLinReg is noisyLinReg with its state streamed (StateStreamer).
type streamingLinReg struct{ *noisyLinReg }

func (s streamingLinReg) WriteState(w io.Writer) error {
	b, err := s.MarshalState()
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

func (s streamingLinReg) ReadState(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err == nil {
		err = s.UnmarshalState(b)
	}
	return err
}

// A StateStreamer's state reaches the checkpoint as WriteObjective, not as
// bytes, and a run resumed through RestoreObjective ends where the
// uninterrupted one does; a streamed state given to an objective that
// cannot read one, or no state for one that has state, is refused.
func TestTrainStreamedObjectiveState(t *testing.T) {
	cfg := func() TrainConfig {
		return TrainConfig{N: 40, BatchSize: 9, Epochs: 4, Seed: 2, Optimizer: NewAdam(0.05)}
	}
	straight := streamingLinReg{newNoisyLinReg()}
	if _, err := Train(context.Background(), straight, straight.params(), cfg()); err != nil {
		t.Fatal(err)
	}
	first := streamingLinReg{newNoisyLinReg()}
	var stored []byte
	var snap *Snapshot
	c := cfg()
	c.Epochs = 2
	c.Checkpoint = func(s *Snapshot) error {
		if s.Objective != nil || s.WriteObjective == nil {
			return errors.New("the state was not streamed")
		}
		var buf bytes.Buffer
		if err := s.WriteObjective(&buf); err != nil {
			return err
		}
		stored, snap = buf.Bytes(), roundTrip(t, s)
		return nil
	}
	if _, err := Train(context.Background(), first, first.params(), c); err != nil {
		t.Fatal(err)
	}
	snap.RestoreObjective = func(ss StateStreamer) error { return ss.ReadState(bytes.NewReader(stored)) }
	second := streamingLinReg{newNoisyLinReg()}
	c = cfg()
	c.Resume = snap
	if _, err := Train(context.Background(), second, second.params(), c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(second.beta, straight.beta) {
		t.Errorf("resumed %v, uninterrupted %v", second.beta, straight.beta)
	}

	plain := newNoisyLinReg()
	c = cfg()
	c.Resume = snap
	if _, err := Train(context.Background(), plain, plain.params(), c); err == nil || !strings.Contains(err.Error(), "cannot read one") {
		t.Errorf("streamed state for a plain Stateful: got %v, want a refusal", err)
	}
	snap.RestoreObjective = nil
	third := streamingLinReg{newNoisyLinReg()}
	c = cfg()
	c.Resume = snap
	if _, err := Train(context.Background(), third, third.params(), c); err == nil || !strings.Contains(err.Error(), "no state for the objective") {
		t.Errorf("no state: got %v, want a refusal", err)
	}
}
