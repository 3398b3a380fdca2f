package svi

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/gpc-dev/gpc/datasets/frame"
	"github.com/gpc-dev/gpc/layers/local"
)

// stateMagic opens the objective's state (WriteState), telling it from the
// gob of objectiveState that checkpoints of version 1 hold.
const stateMagic = "gpc-svi-state 2\n"

// maxStateHeader bounds the header ReadState allocates for, so that a
// damaged length is an error rather than an allocation of exabytes.
const maxStateHeader = 1 << 30

// stateHeader is the objective's state but for its local tables, which
// follow it in the stream (local.WriteStates).
type stateHeader struct {
	// Jitter may have been raised by Cholesky failures.
	Jitter float64
	// Locals names the local tables, in declaration order.
	Locals []string
	// Streams are the normal streams, in declaration order.
	Streams []streamState
}

// WriteState implements solvers.StateStreamer: the jitter, every normal
// stream's position (waiting for the batch each draws ahead), then every
// local table with its optimiser, written from the tables' storage without
// a copy of them.
func (o *Objective) WriteState(w io.Writer) error {
	h := stateHeader{Jitter: o.Jitter()}
	tables := make([]*local.Param, len(o.locals))
	for i, l := range o.locals {
		h.Locals = append(h.Locals, l.p.Name)
		tables[i] = l.p
	}
	for k, st := range o.streams {
		ss, err := st.state()
		if err != nil {
			return fmt.Errorf("svi: normal stream %d: %w", k, err)
		}
		h.Streams = append(h.Streams, ss)
	}
	if _, err := frame.Write(w, stateMagic, h); err != nil {
		return fmt.Errorf("svi: writing the objective state: %w", err)
	}
	return local.WriteStates(w, tables)
}

// ReadState implements solvers.StateStreamer for an objective built as the
// saved one was (same model parts and data), reading the local tables in
// place. The counts and names of the tables and streams, the jitter, the
// streams' generator states and the tables' shapes are checked before
// anything changes; a stream cut short while the tables are read leaves
// them undefined, and the error says so.
func (o *Objective) ReadState(r io.Reader) error {
	var h stateHeader
	if _, err := frame.Read(r, stateMagic, maxStateHeader, &h); err != nil {
		if errors.Is(err, frame.ErrMagic) {
			return errors.New("svi: not an objective state")
		}
		return fmt.Errorf("svi: reading the objective state: %w", err)
	}
	if err := o.checkState(h.Locals, h.Jitter, h.Streams); err != nil {
		return err
	}
	tables := make([]*local.Param, len(o.locals))
	for i, l := range o.locals {
		tables[i] = l.p
	}
	if err := local.ReadStates(r, tables); err != nil {
		return fmt.Errorf("svi: %w", err)
	}
	return o.restoreScalars(h.Jitter, h.Streams)
}

// checkState refuses a state of other local tables or streams, or one
// whose jitter or streams could not be restored, before anything changes:
// restoreScalars then cannot fail.
func (o *Objective) checkState(locals []string, jitter float64, streams []streamState) error {
	switch {
	case len(locals) != len(o.locals):
		return fmt.Errorf("svi: the state has %d local tables, the objective %d", len(locals), len(o.locals))
	case len(streams) != len(o.streams):
		return fmt.Errorf("svi: the state has %d normal streams, the objective %d", len(streams), len(o.streams))
	case !(jitter > 0):
		return fmt.Errorf("svi: the state's jitter is %v", jitter)
	}
	for i, l := range o.locals {
		if locals[i] != l.p.Name {
			return fmt.Errorf("svi: local table %d is %s in the state, %s in the objective", i, locals[i], l.p.Name)
		}
	}
	for k, st := range streams {
		var pcg rand.PCG
		if err := pcg.UnmarshalBinary(st.PCG); err != nil {
			return fmt.Errorf("svi: normal stream %d: %w", k, err)
		}
	}
	return nil
}

// restoreScalars restores the jitter and the normal streams (checked by
// checkState).
func (o *Objective) restoreScalars(jitter float64, streams []streamState) error {
	if jitter != o.Jitter() {
		if err := o.SetJitter(jitter); err != nil {
			return err
		}
	}
	for k, st := range o.streams {
		if err := st.restore(streams[k]); err != nil {
			return fmt.Errorf("svi: normal stream %d: %w", k, err)
		}
	}
	return nil
}

// MarshalState implements solvers.Stateful: WriteState's stream as bytes.
func (o *Objective) MarshalState() ([]byte, error) {
	var buf bytes.Buffer
	if err := o.WriteState(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalState implements solvers.Stateful: it reads MarshalState's
// bytes, and the gob of objectiveState that checkpoints of version 1 hold,
// so that a fit checkpointed by an earlier gpc resumes.
func (o *Objective) UnmarshalState(b []byte) error {
	if bytes.HasPrefix(b, []byte(stateMagic)) {
		return o.ReadState(bytes.NewReader(b))
	}
	var s objectiveState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return fmt.Errorf("svi: decoding the objective state: %w", err)
	}
	names := make([]string, len(s.Locals))
	for i, l := range s.Locals {
		names[i] = l.Name
	}
	if err := o.checkState(names, s.Jitter, s.Streams); err != nil {
		return err
	}
	for i, l := range o.locals {
		if err := l.p.SetState(s.Locals[i].State); err != nil {
			if i > 0 {
				return fmt.Errorf("%w (the tables before it are restored, the state is now undefined)", err)
			}
			return err
		}
	}
	return o.restoreScalars(s.Jitter, s.Streams)
}

// objectiveState is the objective's state as checkpoints of version 1 hold
// it: one gob, the local tables in it.
type objectiveState struct {
	Jitter  float64
	Locals  []localState
	Streams []streamState
}

type localState struct {
	Name  string
	State local.State
}
