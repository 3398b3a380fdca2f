package solvers

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
	"slices"
)

// Stateful is implemented by an optimiser or an objective whose state
// beyond the global params must survive a checkpoint: Adam's moments and
// step count, an objective's jitter, per-row tables or random streams. A
// fit resumed without that state would follow a different trajectory, so
// Train refuses to checkpoint or resume an optimiser that is not Stateful.
//
// MarshalState must capture every value that influences later steps, with
// float64s exactly (gob and encoding/binary both do); UnmarshalState
// restores it into a value built as the original was, before its first
// step after the restore.
type Stateful interface {
	MarshalState() ([]byte, error)
	UnmarshalState([]byte) error
}

// StateStreamer is implemented by a Stateful objective whose state is large
// (NIMGP's per-row tables on MNIST hold 2.3 GB): Train hands it to the
// checkpoint as a stream written straight from the objective's storage,
// instead of as MarshalState's bytes, so that taking a checkpoint holds no
// copy of it; a resume reads it back in place. ReadState must read what
// WriteState wrote, and check it against the objective before it changes
// anything.
type StateStreamer interface {
	Stateful
	WriteState(w io.Writer) error
	ReadState(r io.Reader) error
}

// Snapshot is Train's state at the end of an epoch: what TrainConfig.Resume
// needs to continue so that the result is bit for bit that of an
// uninterrupted run. It is gob-encodable, so callers can store it as they
// like, but for a StateStreamer objective's state: gob skips
// WriteObjective, so such a caller must store that stream itself, and give
// it back through RestoreObjective (models' checkpoint files do).
type Snapshot struct {
	// Epoch is the number of completed epochs.
	Epoch int
	// Iterations is the number of optimiser steps over the whole run.
	Iterations int
	// History holds the records of the completed epochs.
	History History
	// Params are copies of the global params, in Train's order.
	Params [][]float64
	// Optimizer is the optimiser's MarshalState.
	Optimizer []byte
	// Objective is the objective's MarshalState, nil when the objective is
	// not Stateful or streams its state (WriteObjective).
	Objective []byte
	// WriteObjective, set by Train instead of Objective when the objective
	// is a StateStreamer, writes the objective's state to w. It reads the
	// objective as it is, so it is valid only during the Checkpoint call
	// that hands out the Snapshot. Gob skips func fields: a caller that
	// stores the Snapshot stores this stream beside it.
	WriteObjective func(w io.Writer) error
	// RestoreObjective, set by a caller resuming from a Snapshot whose
	// objective state it stored as a stream (Objective nil), reads that
	// stream into the objective, with its ReadState.
	RestoreObjective func(StateStreamer) error
	// JitterIncreases is how many times the jitter was raised so far: the
	// limit TrainConfig.MaxJitterIncreases is over the whole run.
	JitterIncreases int
}

// stateOf returns the MarshalState of v when it is Stateful.
func stateOf(v any) ([]byte, bool, error) {
	s, ok := v.(Stateful)
	if !ok {
		return nil, false, nil
	}
	b, err := s.MarshalState()
	return b, true, err
}

// checkCheckpointable refuses, before any step, a run whose state could not
// be saved or restored: finding out at the first checkpoint, hours in,
// would waste the run.
func checkCheckpointable(obj Objective, opt Optimizer) error {
	if _, ok := opt.(Stateful); !ok {
		return fmt.Errorf("solvers: Train: checkpoints need an optimiser that saves its state (solvers.Stateful); %T does not", opt)
	}
	if _, ok := obj.(Stateful); !ok {
		// Per-row tables are state the snapshot would lose; a plain
		// objective has none beyond the params.
		if l, ok := obj.(LocalObjective); ok && l.LocalParams() > 0 {
			return fmt.Errorf("solvers: Train: checkpoints need an objective with local params to save its state (solvers.Stateful); %T does not", obj)
		}
	}
	return nil
}

// snapshot copies the run's state after epoch.
func snapshot(obj Objective, opt Optimizer, params []Param, epoch, iter int, hist History, jitterIncreases int) (*Snapshot, error) {
	s := &Snapshot{Epoch: epoch, Iterations: iter, History: slices.Clone(hist), JitterIncreases: jitterIncreases}
	s.Params = make([][]float64, len(params))
	for i, p := range params {
		s.Params[i] = slices.Clone(p.Data)
	}
	var err error
	if s.Optimizer, _, err = stateOf(opt); err != nil {
		return nil, fmt.Errorf("optimiser state: %w", err)
	}
	if ss, ok := obj.(StateStreamer); ok {
		s.WriteObjective = ss.WriteState
		return s, nil
	}
	if s.Objective, _, err = stateOf(obj); err != nil {
		return nil, fmt.Errorf("objective state: %w", err)
	}
	return s, nil
}

// restore checks s against the run and puts its state in place; the
// shapes are checked before anything changes.
func restore(s *Snapshot, obj Objective, opt Optimizer, params []Param, epochs int) error {
	switch {
	case s.Epoch < 0 || s.Iterations < 0:
		return fmt.Errorf("solvers: Train: Resume snapshot has %d epochs and %d iterations", s.Epoch, s.Iterations)
	case s.Epoch > epochs:
		return fmt.Errorf("solvers: Train: Resume snapshot is at epoch %d, beyond TrainConfig.Epochs = %d", s.Epoch, epochs)
	case len(s.Params) != len(params):
		return fmt.Errorf("solvers: Train: Resume snapshot holds %d params, training has %d", len(s.Params), len(params))
	}
	for i, p := range params {
		if len(s.Params[i]) != len(p.Data) {
			return fmt.Errorf("solvers: Train: Resume snapshot has %d values for param %s, which has %d", len(s.Params[i]), paramLabel(params, i), len(p.Data))
		}
	}
	so, ok := obj.(Stateful)
	ss, streams := obj.(StateStreamer)
	switch {
	case !ok && (s.Objective != nil || s.RestoreObjective != nil):
		return fmt.Errorf("solvers: Train: Resume snapshot has objective state, but %T cannot restore it (solvers.Stateful)", obj)
	case !streams && s.Objective == nil && s.RestoreObjective != nil:
		return fmt.Errorf("solvers: Train: Resume snapshot has a streamed objective state, but %T cannot read one (solvers.StateStreamer)", obj)
	case ok && s.Objective == nil && s.RestoreObjective == nil:
		return fmt.Errorf("solvers: Train: Resume snapshot has no state for the objective %T", obj)
	}
	if err := opt.(Stateful).UnmarshalState(s.Optimizer); err != nil {
		return fmt.Errorf("solvers: Train: restoring the optimiser state: %w", err)
	}
	switch {
	case so != nil && s.Objective != nil:
		if err := so.UnmarshalState(s.Objective); err != nil {
			return fmt.Errorf("solvers: Train: restoring the objective state: %w", err)
		}
	case so != nil:
		if err := s.RestoreObjective(ss); err != nil {
			return fmt.Errorf("solvers: Train: restoring the objective state: %w", err)
		}
	}
	for i, p := range params {
		copy(p.Data, s.Params[i])
	}
	return nil
}

// gobEncode and gobDecode are the optimisers' state codec: gob keeps every
// float64 bit for bit.
func gobEncode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gobDecode(b []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(b)).Decode(v)
}
