package solvers

import (
	"errors"
	"fmt"

	"github.com/gpc-dev/gpc/graph"
)

// ErrNotPositiveDefinite is graph's Cholesky failure, which graph programs
// return wrapped. The training loops recognise it with errors.Is and, if the
// objective implements Jitterer, respond by raising the diagonal jitter and
// retrying instead of aborting a long run over a round-off problem.
var ErrNotPositiveDefinite = graph.ErrNotPositiveDefinite

// ErrNonFinite is matched (via errors.Is) by every NonFiniteError, so callers
// can detect "training diverged" without parsing messages.
var ErrNonFinite = errors.New("solvers: non-finite value")

// ErrTrialFailed is returned (wrapped) by TrainLBFGS when a line-search
// trial point cannot be evaluated even at the largest jitter: a step so
// wild that the model's matrices lost positive definiteness. The
// parameters are then at the best point already accepted, so a caller may
// treat it as the end of the run rather than as a failed fit.
var ErrTrialFailed = errors.New("solvers: L-BFGS trial point could not be evaluated")

// ErrStopTraining may be returned (possibly wrapped) by TrainConfig.Callback
// to end training early as a success, e.g. for early stopping; Train then
// returns the history with a nil error. Any other callback error is reported.
var ErrStopTraining = errors.New("solvers: stop training")

// Jitterer is optionally implemented by an Objective whose covariance
// matrices carry a diagonal jitter. It lets the training loops recover from a
// Cholesky failure (ErrNotPositiveDefinite) by enlarging the jitter, which is
// the standard remedy, without the solver knowing anything about the model.
type Jitterer interface {
	Jitter() float64
	SetJitter(float64) error
}

// LocalObjective is implemented by an Objective with per-row local
// parameters (one row per training point, such as NIMGP's q(x_i)), which a
// batch touches only in its own rows and which are not among the global
// params. Step must leave them alone (it may be retried, and L-BFGS
// evaluates it at trial points); Train calls StepLocal after each global
// optimiser step to apply the gradient of the batch's rows computed by the
// last Step, with the objective's own per-row optimiser.
type LocalObjective interface {
	Objective
	// LocalParams is the number of local parameter tables (0: none).
	LocalParams() int
	// StepLocal updates the batch's rows from the last Step's gradient.
	StepLocal(b Batch) error
}

// NonFiniteError reports where a NaN or ±Inf first appeared. Training never
// continues past one, because a single NaN poisons every parameter through
// the optimiser state; this error says which quantity broke and when, so the
// failing iteration can be reproduced.
type NonFiniteError struct {
	// Quantity is "objective", "gradient" or "parameter" (a parameter value
	// after an optimiser update).
	Quantity string
	// Param is the name of the offending Param, empty for the objective or
	// when the parameters are anonymous vector elements.
	Param string
	// Index is the element within the param (or within the flat vector when
	// Param is empty); -1 for the objective.
	Index int
	// Value is the offending value (NaN, +Inf or -Inf).
	Value float64
	// Where describes the point in training, e.g. "epoch 3, iteration 17" or
	// "L-BFGS evaluation 12".
	Where string
}

// Error names the quantity (and parameter) and the place, in the form
// "solvers: objective became NaN at epoch 3, iteration 17", so a log line
// alone is enough to locate the failure.
func (e *NonFiniteError) Error() string {
	var what string
	switch {
	case e.Quantity == "objective":
		what = "objective"
	case e.Param != "":
		what = fmt.Sprintf("%s of %q (element %d)", e.Quantity, e.Param, e.Index)
	default:
		what = fmt.Sprintf("%s element %d", e.Quantity, e.Index)
	}
	return fmt.Sprintf("solvers: %s became %v at %s", what, e.Value, e.Where)
}

// Unwrap makes errors.Is(err, ErrNonFinite) true.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }
