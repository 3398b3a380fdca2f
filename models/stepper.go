package models

import (
	"io"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// Stepper runs single training steps of a model on a data set with the
// objective and optimisers Fit uses, for benchmarks and hand-written
// training loops.
type Stepper struct {
	obj    *svi.Objective
	adam   *solvers.Adam
	params []solvers.Param
}

// NewStepper initialises the model's parameters from train (as Fit does)
// and compiles its training step.
func (m *Model) NewStepper(train *datasets.Dataset) (*Stepper, error) {
	if err := train.Validate(); err != nil {
		return nil, err
	}
	m.scaler = nil
	if m.Opts.Inputs.Standardize {
		s, err := fitScaler(train)
		if err != nil {
			return nil, err
		}
		m.scaler = s
		train = m.standardize(train)
	}
	if err := m.initialize(train, io.Discard); err != nil {
		return nil, err
	}
	obj, err := m.newObjective(train)
	if err != nil {
		return nil, err
	}
	return &Stepper{obj: obj, adam: solvers.NewAdam(m.Opts.Train.LR), params: obj.SolverParams()}, nil
}

// Batch is the compiled batch size.
func (s *Stepper) Batch() int { return s.obj.Batch() }

// Step evaluates the negative ELBO of batch b and its gradient, takes one
// Adam step on the global parameters and one on the batch's local rows; it
// returns the loss before the step.
func (s *Stepper) Step(b solvers.Batch) (float64, error) {
	loss, g, err := s.obj.Step(b)
	if err != nil {
		return 0, err
	}
	if err := s.adam.Step(s.params, g); err != nil {
		return 0, err
	}
	return loss, s.obj.StepLocal(b)
}
