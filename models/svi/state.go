package svi

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/gpc-dev/gpc/layers/local"
)

// objectiveState is the objective's checkpoint: what, beside the global
// params, decides its later steps.
type objectiveState struct {
	// Jitter may have been raised by Cholesky failures.
	Jitter float64
	// Locals are the local tables' rows and row-wise Adam, in declaration
	// order, with their names to catch a different model.
	Locals []localState
	// Streams are the normal streams, in declaration order.
	Streams []streamState
}

type localState struct {
	Name  string
	State local.State
}

// MarshalState implements solvers.Stateful: the jitter, every local table
// with its optimiser, and every normal stream's position (waiting for the
// batch each draws ahead).
func (o *Objective) MarshalState() ([]byte, error) {
	s := objectiveState{Jitter: o.Jitter()}
	for _, l := range o.locals {
		s.Locals = append(s.Locals, localState{Name: l.p.Name, State: l.p.State()})
	}
	for k, st := range o.streams {
		ss, err := st.state()
		if err != nil {
			return nil, fmt.Errorf("svi: normal stream %d: %w", k, err)
		}
		s.Streams = append(s.Streams, ss)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return nil, fmt.Errorf("svi: encoding the objective state: %w", err)
	}
	return buf.Bytes(), nil
}

// UnmarshalState implements solvers.Stateful for an objective built as the
// saved one was (same model parts and data). The counts and names of the
// tables and streams are checked before anything changes.
func (o *Objective) UnmarshalState(b []byte) error {
	var s objectiveState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return fmt.Errorf("svi: decoding the objective state: %w", err)
	}
	switch {
	case len(s.Locals) != len(o.locals):
		return fmt.Errorf("svi: the state has %d local tables, the objective %d", len(s.Locals), len(o.locals))
	case len(s.Streams) != len(o.streams):
		return fmt.Errorf("svi: the state has %d normal streams, the objective %d", len(s.Streams), len(o.streams))
	}
	for i, l := range o.locals {
		if s.Locals[i].Name != l.p.Name {
			return fmt.Errorf("svi: local table %d is %s in the state, %s in the objective", i, s.Locals[i].Name, l.p.Name)
		}
	}
	if s.Jitter != o.Jitter() {
		if err := o.SetJitter(s.Jitter); err != nil {
			return err
		}
	}
	for i, l := range o.locals {
		if err := l.p.SetState(s.Locals[i].State); err != nil {
			return err
		}
	}
	for k, st := range o.streams {
		if err := st.restore(s.Streams[k]); err != nil {
			return fmt.Errorf("svi: normal stream %d: %w", k, err)
		}
	}
	return nil
}
