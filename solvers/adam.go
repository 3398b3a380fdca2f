package solvers

import (
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/graph"
)

// Optimizer is what Train needs from a first-order method. It is an interface
// so that models can swap Adam for SGD, natural-gradient steps, or a
// composition of both, without the loop changing.
//
// Step must minimise: it moves params against grads. Implementations may keep
// per-parameter state keyed by position in params, so callers must pass the
// same params in the same order on every step.
type Optimizer interface {
	Step(params []Param, grads [][]float64) error
}

// Adam is the Adam optimiser (Kingma & Ba, 2015) with bias correction. It is
// the default for minibatch ELBO training because its per-coordinate step
// normalisation copes with the very different gradient scales of kernel
// hyperparameters, inducing inputs and variational parameters.
//
// Adam minimises; models pass the gradient of the negative ELBO.
// Moment estimates are stored per param index and survive across Step calls
// until Reset. An Adam must not be used from several goroutines at once.
type Adam struct {
	lr, beta1, beta2, eps float64

	t    int         // number of completed steps, for bias correction
	m, v [][]float64 // first and second moment estimates, one per param index
	off  []int       // scratch: each param's first element in the concatenation
}

// AdamOption changes an Adam hyperparameter at construction; options keep
// NewAdam's common case (just a learning rate) short.
type AdamOption func(*Adam)

// WithBetas sets the exponential decay rates of the first and second moment
// estimates (defaults 0.9 and 0.999).
func WithBetas(beta1, beta2 float64) AdamOption {
	return func(a *Adam) { a.beta1, a.beta2 = beta1, beta2 }
}

// WithEpsilon sets the denominator offset (default 1e-8) that keeps a
// coordinate with zero gradient history from dividing by zero.
func WithEpsilon(eps float64) AdamOption {
	return func(a *Adam) { a.eps = eps }
}

// NewAdam returns an Adam with learning rate lr and the usual defaults
// beta1=0.9, beta2=0.999, eps=1e-8. Invalid hyperparameters are reported by
// the first Step rather than here, so that construction cannot fail.
func NewAdam(lr float64, opts ...AdamOption) *Adam {
	a := &Adam{lr: lr, beta1: 0.9, beta2: 0.999, eps: 1e-8}
	for _, o := range opts {
		o(a)
	}
	return a
}

// LearningRate reports the current step size, so that schedules can be
// written relative to it.
func (a *Adam) LearningRate() float64 { return a.lr }

// SetLearningRate changes the step size without touching the moment
// estimates, which is how learning-rate schedules are implemented (typically
// from TrainConfig.Callback). Stochastic training needs a decaying rate to
// converge to a point rather than to a noise ball.
func (a *Adam) SetLearningRate(lr float64) { a.lr = lr }

// Reset discards the moment estimates and the step counter, for reusing one
// Adam on a new problem or after the parameter set has changed.
func (a *Adam) Reset() {
	a.t = 0
	a.m, a.v = nil, nil
}

// Step applies one Adam update, moving each params[i].Data against grads[i].
// All shapes are validated before anything is modified, so a failed Step
// leaves both params and optimiser state unchanged.
func (a *Adam) Step(params []Param, grads [][]float64) error {
	if !(a.lr > 0) || math.IsInf(a.lr, 0) {
		return fmt.Errorf("solvers: Adam learning rate must be positive and finite, got %v", a.lr)
	}
	if !(a.beta1 >= 0 && a.beta1 < 1) || !(a.beta2 >= 0 && a.beta2 < 1) {
		return fmt.Errorf("solvers: Adam betas must lie in [0, 1), got %v and %v", a.beta1, a.beta2)
	}
	if !(a.eps > 0) || math.IsInf(a.eps, 0) {
		return fmt.Errorf("solvers: Adam epsilon must be positive and finite, got %v", a.eps)
	}
	if err := checkGradShapes(params, grads); err != nil {
		return fmt.Errorf("solvers: Adam: %w", err)
	}
	if a.m != nil {
		// State is keyed by position; a different layout means the caller
		// changed the problem, and silently reusing moments would be wrong.
		if len(a.m) != len(params) {
			return fmt.Errorf("solvers: Adam state holds %d params, got %d; call Reset when the parameter set changes", len(a.m), len(params))
		}
		for i, p := range params {
			if len(a.m[i]) != len(p.Data) {
				return fmt.Errorf("solvers: Adam state for param %s has %d elements, got %d; call Reset when the parameter set changes",
					paramLabel(params, i), len(a.m[i]), len(p.Data))
			}
		}
	} else {
		a.m = make([][]float64, len(params))
		a.v = make([][]float64, len(params))
		for i, p := range params {
			a.m[i] = make([]float64, len(p.Data))
			a.v[i] = make([]float64, len(p.Data))
		}
	}

	a.t++
	a.off = append(a.off[:0], 0)
	for _, p := range params {
		a.off = append(a.off, a.off[len(a.off)-1]+len(p.Data))
	}
	u := adamUpdate{a: a, params: params, grads: grads, off: a.off, k: graph.NewAdamConsts(a.lr, a.beta1, a.beta2, a.eps, a.t)}
	// Every element's update is independent of the others', so splitting
	// the parameters' elements over the cores changes no result; the
	// step runs after the graph, when the other core is idle. Only a
	// split step puts its update on the heap.
	n := a.off[len(params)]
	if graph.Splits(n, 1, adamCost) {
		su := u
		graph.ParallelFor(n, 1, adamCost, su.elements)
	} else {
		u.elements(0, n)
	}
	return nil
}

// adamCost is Adam's time per element, in nanoseconds, for ParallelFor
// (graph.AdamUpdate: about 0.8 from cache, 1.5 from memory).
const adamCost = 1.5

// adamUpdate is one Adam step over the concatenation of params' elements;
// off[i] is the first element of params[i].
type adamUpdate struct {
	a      *Adam
	params []Param
	grads  [][]float64
	off    []int
	k      graph.AdamConsts
}

// elements updates elements [lo, hi) of the concatenation.
func (u *adamUpdate) elements(lo, hi int) {
	a := u.a
	for i := range u.params {
		s, e := max(lo, u.off[i]), min(hi, u.off[i+1])
		if s >= e {
			continue
		}
		s, e = s-u.off[i], e-u.off[i]
		graph.AdamUpdate(u.params[i].Data[s:e], a.m[i][s:e], a.v[i][s:e], u.grads[i][s:e], &u.k)
	}
}

// adamState is Adam's checkpoint: everything Step reads.
type adamState struct {
	LR, Beta1, Beta2, Eps float64
	T                     int
	M, V                  [][]float64
}

// MarshalState implements Stateful: the hyperparameters (the learning rate
// may have been changed by a schedule), the step count and the moments.
func (a *Adam) MarshalState() ([]byte, error) {
	return gobEncode(adamState{LR: a.lr, Beta1: a.beta1, Beta2: a.beta2, Eps: a.eps, T: a.t, M: a.m, V: a.v})
}

// UnmarshalState implements Stateful, replacing all of a's state; on error
// a is unchanged.
func (a *Adam) UnmarshalState(b []byte) error {
	var s adamState
	if err := gobDecode(b, &s); err != nil {
		return fmt.Errorf("solvers: Adam state: %w", err)
	}
	if len(s.M) != len(s.V) {
		return fmt.Errorf("solvers: Adam state has %d first and %d second moments", len(s.M), len(s.V))
	}
	for i := range s.M {
		if len(s.M[i]) != len(s.V[i]) {
			return fmt.Errorf("solvers: Adam state for param #%d has %d first and %d second moments", i, len(s.M[i]), len(s.V[i]))
		}
	}
	if s.T > 0 && s.M == nil {
		return fmt.Errorf("solvers: Adam state has %d steps and no moments", s.T)
	}
	a.lr, a.beta1, a.beta2, a.eps, a.t, a.m, a.v = s.LR, s.Beta1, s.Beta2, s.Eps, s.T, s.M, s.V
	return nil
}
