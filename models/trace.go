package models

import (
	"errors"

	"github.com/gpc-dev/gpc/solvers"
)

// traced wraps a full-batch objective so that each evaluation is followed
// by FitConfig.Trace, with the model's posterior made that evaluation's
// first (publish; nil where the objective's parameters are the posterior).
// It forwards the jitter so that Cholesky recovery works as unwrapped.
type traced struct {
	obj     solvers.Objective
	evals   int
	publish func() error
	trace   func(eval int, loss float64) error
}

// Step implements solvers.Objective.
func (t *traced) Step(b solvers.Batch) (float64, [][]float64, error) {
	loss, g, err := t.obj.Step(b)
	if err != nil {
		return loss, g, err
	}
	t.evals++
	if t.publish != nil {
		if err := t.publish(); err != nil {
			return 0, nil, err
		}
	}
	if err := t.trace(t.evals, loss); err != nil {
		return 0, nil, err
	}
	return loss, g, nil
}

// Jitter implements solvers.Jitterer.
func (t *traced) Jitter() float64 {
	if j, ok := t.obj.(solvers.Jitterer); ok {
		return j.Jitter()
	}
	return 0
}

// SetJitter implements solvers.Jitterer.
func (t *traced) SetJitter(v float64) error {
	if j, ok := t.obj.(solvers.Jitterer); ok {
		return j.SetJitter(v)
	}
	return errors.New("models: the objective has no jitter")
}

// withTrace returns obj wrapped for cfg.Trace, or obj itself without one.
func withTrace(obj solvers.Objective, cfg FitConfig, publish func() error) (solvers.Objective, error) {
	if cfg.Trace == nil {
		return obj, nil
	}
	if lo, ok := obj.(solvers.LocalObjective); ok && lo.LocalParams() > 0 {
		return nil, errors.New("models: a trace of every evaluation is for full-batch objectives without per-row local parameters")
	}
	return &traced{obj: obj, publish: publish, trace: cfg.Trace}, nil
}
