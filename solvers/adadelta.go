package solvers

import (
	"fmt"
	"math"
)

// Adadelta is Zeiler's Adadelta with the semantics of climin's, the
// optimiser of the SVGP classification paper's MNIST run: running averages
// of squared gradients (gms) and of squared steps (sms), both decayed by
// Decay; the step is √(sms+Offset)/√(gms+Offset)·g·StepRate, and sms then
// takes the square of that step, the step rate included. With Momentum > 0
// the previous step times Momentum is applied before the gradient step (and
// counts in the step whose square enters sms), as in climin; the gradient
// passed to Step must then be evaluated after that shift, which a plain
// training loop does not do, so Train supports only Momentum = 0.
type Adadelta struct {
	StepRate, Decay, Offset float64
	gms, sms                [][]float64
}

// NewAdadelta returns Adadelta with climin's defaults (decay 0.9, offset
// 1e-4) and the given step rate (the paper: 0.1).
func NewAdadelta(stepRate float64) *Adadelta {
	return &Adadelta{StepRate: stepRate, Decay: 0.9, Offset: 1e-4}
}

// Step implements Optimizer. Shapes are validated before anything changes.
func (a *Adadelta) Step(params []Param, grads [][]float64) error {
	switch {
	case !(a.StepRate > 0) || math.IsInf(a.StepRate, 0):
		return fmt.Errorf("solvers: Adadelta step rate must be positive and finite, got %v", a.StepRate)
	case !(a.Decay >= 0 && a.Decay < 1):
		return fmt.Errorf("solvers: Adadelta decay must lie in [0, 1), got %v", a.Decay)
	case !(a.Offset > 0) || math.IsInf(a.Offset, 0):
		return fmt.Errorf("solvers: Adadelta offset must be positive and finite, got %v", a.Offset)
	}
	if err := checkGradShapes(params, grads); err != nil {
		return fmt.Errorf("solvers: Adadelta: %w", err)
	}
	if a.gms == nil {
		a.gms, a.sms = make([][]float64, len(params)), make([][]float64, len(params))
		for i, p := range params {
			a.gms[i], a.sms[i] = make([]float64, len(p.Data)), make([]float64, len(p.Data))
		}
	} else if len(a.gms) != len(params) {
		return fmt.Errorf("solvers: Adadelta state holds %d params, got %d", len(a.gms), len(params))
	}
	for i, p := range params {
		if len(a.gms[i]) != len(p.Data) {
			return fmt.Errorf("solvers: Adadelta state for param %s has %d elements, got %d", paramLabel(params, i), len(a.gms[i]), len(p.Data))
		}
	}
	d, o := a.Decay, a.Offset
	for i, p := range params {
		x, gms, sms, g := p.Data, a.gms[i], a.sms[i], grads[i]
		for j, gj := range g[:len(x)] {
			gms[j] = d*gms[j] + (1-d)*gj*gj
			step := math.Sqrt(sms[j]+o) / math.Sqrt(gms[j]+o) * gj * a.StepRate
			x[j] -= step
			sms[j] = d*sms[j] + (1-d)*step*step
		}
	}
	return nil
}

// adadeltaState is Adadelta's checkpoint: everything Step reads.
type adadeltaState struct {
	StepRate, Decay, Offset float64
	GMS, SMS                [][]float64
}

// MarshalState implements Stateful: the settings and both running averages.
func (a *Adadelta) MarshalState() ([]byte, error) {
	return gobEncode(adadeltaState{StepRate: a.StepRate, Decay: a.Decay, Offset: a.Offset, GMS: a.gms, SMS: a.sms})
}

// UnmarshalState implements Stateful, replacing all of a's state; on error
// a is unchanged.
func (a *Adadelta) UnmarshalState(b []byte) error {
	var s adadeltaState
	if err := gobDecode(b, &s); err != nil {
		return fmt.Errorf("solvers: Adadelta state: %w", err)
	}
	if len(s.GMS) != len(s.SMS) {
		return fmt.Errorf("solvers: Adadelta state has %d gradient and %d step averages", len(s.GMS), len(s.SMS))
	}
	for i := range s.GMS {
		if len(s.GMS[i]) != len(s.SMS[i]) {
			return fmt.Errorf("solvers: Adadelta state for param #%d has %d gradient and %d step averages", i, len(s.GMS[i]), len(s.SMS[i]))
		}
	}
	a.StepRate, a.Decay, a.Offset, a.gms, a.sms = s.StepRate, s.Decay, s.Offset, s.GMS, s.SMS
	return nil
}
