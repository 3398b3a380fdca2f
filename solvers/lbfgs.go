package solvers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/optimize"
)

// The algorithm is gonum's: optimize.Minimize with optimize.LBFGS (the
// two-loop recursion of Nocedal & Wright, Numerical Optimization, 2nd ed.,
// Algorithm 7.4, with gonum's default Bisection line search, which accepts a
// step once f has decreased and the strong-Wolfe curvature condition holds).
// This file adds what gonum's interface cannot express: objectives that
// return errors, a strict NaN/Inf check, context cancellation, evaluation
// counts that match calls of f, a per-line-search evaluation budget, and one
// restart along steepest descent when a quasi-Newton line search fails.

// LBFGSSettings controls MinimizeLBFGS and TrainLBFGS. Zero values select
// defaults, so LBFGSSettings{} is a reasonable starting point.
type LBFGSSettings struct {
	// MaxIterations caps the number of L-BFGS updates (line searches)
	// (0 = unlimited). Reaching it is not an error: Result.Converged is false.
	MaxIterations int
	// MaxEvaluations caps the number of objective evaluations (0 =
	// unlimited); a line search may use several per iteration. Reaching it
	// is not an error either.
	MaxEvaluations int
	// GradTol stops the run once max_i |grad_i| < GradTol (0 =
	// DefaultGradTol). The infinity norm is used because it does not grow
	// with the dimension.
	GradTol float64
	// FuncTol stops the run when an iteration decreases f by no more than
	// FuncTol·max(|f_old|, |f_new|) (0 = DefaultFuncTol, negative disables).
	// It is relative, with no floor at 1, so that objectives near zero are
	// governed by GradTol alone.
	FuncTol float64
	// FuncTolIterations is how many consecutive iterations must each
	// decrease f by no more than FuncTol for the run to stop (0 = 1): one
	// short step of a line search is not a plateau.
	FuncTolIterations int
	// Memory is the number of correction pairs kept (0 = 10).
	Memory int

	// The remaining fields are used only by TrainLBFGS, with the same meaning
	// as in TrainConfig.
	MaxJitterIncreases int
	MaxJitter          float64
	Warnings           io.Writer

	// Progress, if non-nil, receives a line when the first iteration ends,
	// then at most one a second (iteration, objective, relative change,
	// evaluations, time, and an upper bound on the time left when
	// MaxIterations is set), and a last line saying why the run ended.
	Progress io.Writer
	// ProgressName names −f in progress lines ("elbo" for a negative-ELBO
	// objective); empty prints f itself as "objective".
	ProgressName string
}

// Defaults for LBFGSSettings. Objectives here are sums over data of O(1)
// terms; a max-norm gradient of 1e-6 and a relative decrease of 1e-12 are far
// below any statistically meaningful change yet above floating-point noise.
const (
	DefaultGradTol = 1e-6
	DefaultFuncTol = 1e-12
	DefaultMemory  = 10
)

// maxLineSearch caps the evaluations of f in one line search. It is generous
// for smooth problems (the unit quasi-Newton step is usually accepted at
// once) but stops a search on a wrong gradient, where bisection would
// otherwise halve the step some fifty times until x stops changing and
// report that as convergence (NoProgress).
const maxLineSearch = 40

// ErrLineSearch is wrapped by MinimizeLBFGS when the line search could not
// find an acceptable step (a decrease of f satisfying the curvature
// condition) within its evaluation budget, even along steepest descent. It
// usually means the gradient is inconsistent with the objective (check it
// with a finite-difference test) or GradTol is below what floating point can
// resolve; Result.X is still the best point found.
var ErrLineSearch = errors.New("solvers: L-BFGS line search failed")

// Status says why an L-BFGS run ended; it is a string so that it prints well
// in logs.
type Status string

// Termination statuses of MinimizeLBFGS.
const (
	// GradientConverged: max_i |grad_i| < GradTol.
	GradientConverged Status = "GradientConverged"
	// FunctionConverged: the relative decrease fell below FuncTol.
	FunctionConverged Status = "FunctionConverged"
	// NoProgress: the line search shrank the step until x no longer changed
	// in floating point, i.e. the minimum is reached to working precision.
	NoProgress Status = "NoProgress"
	// IterationLimit: MaxIterations updates were made.
	IterationLimit Status = "IterationLimit"
	// EvaluationLimit: MaxEvaluations calls of f were made.
	EvaluationLimit Status = "EvaluationLimit"
	// Failed: the run stopped with an error.
	Failed Status = "Failed"
)

// Result describes the outcome of an L-BFGS run.
type Result struct {
	// X is the best point found; it is valid even when an error is returned
	// (then the last accepted iterate, or x0 if f failed there).
	X []float64
	// F is the objective at X (NaN if f never succeeded at x0).
	F float64
	// Gradient is the gradient at X (nil if f never succeeded at x0).
	Gradient []float64
	// Iterations counts accepted L-BFGS updates; Evaluations counts calls of f.
	Iterations, Evaluations int
	// Status says why the run ended.
	Status Status
	// Converged is true for GradientConverged, FunctionConverged and
	// NoProgress, i.e. when the run stopped at a minimum rather than at a
	// budget or an error.
	Converged bool
	// Runtime is the wall time of the run.
	Runtime time.Duration
	// LastChange is the relative decrease of f in the last accepted
	// iteration, (f_prev − f)/max(|f_prev|, |f|): how much the run was
	// still improving when it ended (0 without an iteration).
	LastChange float64
}

// MinimizeLBFGS minimises f from x0 with L-BFGS (gonum's optimize.LBFGS),
// for full-batch problems (exact GP marginal likelihood, small full-batch
// ELBOs) where quasi-Newton steps converge in far fewer evaluations than
// Adam.
//
// f must write the gradient at x into grad (len(grad) == len(x)) and must
// not retain or modify x. Calls of f are sequential, never concurrent, but
// gonum makes them from a goroutine of its own, so f must not depend on
// running on the caller's goroutine (thread-locked state, t.Fatal in tests).
// A panic in f is re-raised on the caller's goroutine with the same value.
//
// The run stops with an error, still returning the best point so far, when f
// returns an error (wrapped, so errors.Is works), when f yields a NaN or ±Inf
// objective or gradient element (a *NonFiniteError: a line search cannot use
// such a value, and silently treating it as +Inf would hide model bugs), when
// ctx is cancelled (checked before every evaluation; the error wraps
// ctx.Err()), or when the line search fails (ErrLineSearch). Hitting
// MaxIterations or MaxEvaluations is not an error.
func MinimizeLBFGS(ctx context.Context, f func(x []float64, grad []float64) (float64, error), x0 []float64, settings LBFGSSettings) (Result, error) {
	start := time.Now()
	res := Result{X: slices.Clone(x0), F: math.NaN(), Status: Failed}
	done := func(err error) (Result, error) {
		res.Runtime = time.Since(start)
		return res, err
	}
	if f == nil {
		return done(errors.New("solvers: MinimizeLBFGS: nil objective"))
	}
	if len(x0) == 0 {
		return done(errors.New("solvers: MinimizeLBFGS: empty starting point"))
	}
	if settings.MaxIterations < 0 || settings.MaxEvaluations < 0 || settings.Memory < 0 || settings.GradTol < 0 || isNonFinite(settings.GradTol) || settings.FuncTolIterations < 0 || math.IsNaN(settings.FuncTol) {
		return done(fmt.Errorf("solvers: MinimizeLBFGS: invalid settings %+v", settings))
	}
	gtol := settings.GradTol
	if gtol == 0 {
		gtol = DefaultGradTol
	}
	ftol := settings.FuncTol
	if ftol == 0 {
		ftol = DefaultFuncTol
	}
	mem := settings.Memory
	if mem == 0 {
		mem = DefaultMemory
	}

	ev := &lbfgsEval{ctx: ctx, f: f, maxEvals: settings.MaxEvaluations, prog: newLBFGSProgress(settings)}
	finish := func(st Status, err error) (Result, error) {
		res.Status = st
		res.Converged = st == GradientConverged || st == FunctionConverged || st == NoProgress
		res.Evaluations = ev.evals
		// gonum does not record the iteration that ends a run.
		if ev.recorded && res.Iterations > 0 && res.F != ev.lastF && !math.IsNaN(res.F) {
			res.LastChange = relDecrease(ev.lastF, res.F)
		} else {
			res.LastChange = ev.lastChange
		}
		res, err := done(err)
		ev.prog.done(res)
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return finish(Failed, ev.cancelled(err))
	}

	// Each pass is one optimize.Minimize run. A run whose line search fails
	// after it has made progress is restarted from its best point with an
	// empty curvature history, i.e. along steepest descent: a stale history
	// (or a jitter change in TrainLBFGS, which alters the objective under
	// it) can produce a useless direction without anything being wrong.
	x := res.X
	var known *optimize.Location // f and gradient at x, when already evaluated
	for {
		opts := &optimize.Settings{
			InitValues:        known,
			GradientThreshold: gtol,
			Converger:         &optimize.FunctionConverge{Relative: ftol, Iterations: max(settings.FuncTolIterations, 1)},
			Recorder:          ev,
		}
		if ftol < 0 {
			opts.Converger = optimize.NeverTerminate{}
		}
		if settings.MaxIterations > 0 {
			// gonum counts the starting point as a major iteration.
			opts.MajorIterations = settings.MaxIterations - res.Iterations + 1
		}
		ev.searchStart = ev.evals
		ev.baseIters, ev.passMajors = res.Iterations, 0
		out, err := optimize.Minimize(ev.problem(), x, opts, &optimize.LBFGS{Store: mem, GradStopThreshold: gtol})
		if ev.panicked {
			panic(ev.panicValue)
		}
		updates := 0
		st := optimize.Failure
		if out != nil {
			st = out.Status
			if out.MajorIterations > 0 {
				updates = out.MajorIterations - 1
				res.X, res.F, res.Gradient = slices.Clone(out.X), out.F, slices.Clone(out.Gradient)
			}
		}
		res.Iterations += updates

		searchFailed := errors.Is(ev.err, errSearchBudget) || ev.err == nil &&
			(errors.Is(err, optimize.ErrLinesearcherFailure) ||
				errors.Is(err, optimize.ErrNonDescentDirection) ||
				errors.Is(err, optimize.ErrLinesearcherBound))
		switch {
		case searchFailed && updates > 0:
			x = res.X
			known = &optimize.Location{F: res.F, Gradient: slices.Clone(res.Gradient)}
			ev.err = nil
			continue
		case searchFailed:
			cause := ev.err
			if cause == nil {
				cause = err
			}
			return finish(Failed, fmt.Errorf("%w at iteration %d after %d evaluations (%w)", ErrLineSearch, res.Iterations+1, ev.evals, cause))
		case ev.err != nil:
			return finish(Failed, ev.err)
		case errors.Is(err, optimize.ErrNoProgress):
			return finish(NoProgress, nil)
		case err != nil:
			return finish(Failed, fmt.Errorf("solvers: L-BFGS: %w", err))
		}
		switch st {
		case optimize.GradientThreshold:
			return finish(GradientConverged, nil)
		case optimize.FunctionConvergence:
			return finish(FunctionConverged, nil)
		case optimize.IterationLimit:
			return finish(IterationLimit, nil)
		case optimize.FunctionEvaluationLimit:
			return finish(EvaluationLimit, nil)
		}
		return finish(Failed, fmt.Errorf("solvers: L-BFGS stopped with unexpected status %v", st))
	}
}

// errSearchBudget is internal: it stops a run whose line search has used
// maxLineSearch evaluations; MinimizeLBFGS restarts or reports ErrLineSearch.
var errSearchBudget = errors.New("line search evaluation budget exhausted")

// lbfgsEval adapts f to optimize.Problem, whose Func and Grad cannot fail:
// the first failure is kept in err, f is not called again, NaN is handed to
// gonum, and Status (which gonum consults after every evaluation) stops the
// run. It also implements optimize.Recorder to see accepted iterates.
//
// Func and Grad run on gonum's worker goroutine, Status and Record on the
// goroutine calling Minimize; gonum orders them through channels, one
// operation at a time, so the fields need no locking.
type lbfgsEval struct {
	ctx      context.Context
	f        func(x, grad []float64) (float64, error)
	maxEvals int

	evals       int   // calls of f so far, over all runs
	searchStart int   // evals at the last accepted iterate
	err         error // first failure; once set, f is not called again

	panicked   bool
	panicValue any

	// Accepted iterates as Record sees them, for progress and
	// Result.LastChange: the iterations of earlier passes, the major
	// iterations of this one (its first is its starting point), and the
	// last recorded f and relative decrease.
	prog                  *lbfgsProgress
	baseIters, passMajors int
	recorded              bool
	lastF, lastChange     float64

	// The last evaluation. Bisection asks for the value and the gradient at
	// a point as separate operations, and f computes both at once.
	x, g  []float64
	fx    float64
	valid bool
}

func (e *lbfgsEval) problem() optimize.Problem {
	return optimize.Problem{
		Func: func(x []float64) float64 {
			if !e.eval(x) {
				return math.NaN()
			}
			return e.fx
		},
		Grad: func(grad, x []float64) {
			if !e.eval(x) {
				for i := range grad {
					grad[i] = math.NaN()
				}
				return
			}
			copy(grad, e.g)
		},
		Status: e.status,
	}
}

func (e *lbfgsEval) cancelled(err error) error {
	return fmt.Errorf("solvers: L-BFGS cancelled after %d evaluations: %w", e.evals, err)
}

// eval makes e.fx and e.g hold f at x, calling f only when x differs from
// the last point. It reports false, without calling f, once the run must
// stop.
func (e *lbfgsEval) eval(x []float64) bool {
	if e.err != nil || e.panicked {
		return false
	}
	if e.valid && slices.Equal(x, e.x) {
		return true
	}
	e.valid = false
	if err := e.ctx.Err(); err != nil {
		e.err = e.cancelled(err)
		return false
	}
	if e.maxEvals > 0 && e.evals >= e.maxEvals {
		return false // status reports the limit
	}
	if e.evals-e.searchStart >= maxLineSearch {
		e.err = errSearchBudget
		return false
	}
	e.x = append(e.x[:0], x...)
	if len(e.g) != len(x) {
		e.g = make([]float64, len(x))
	}
	clear(e.g)
	e.evals++
	where := fmt.Sprintf("L-BFGS evaluation %d", e.evals)
	fx, err := e.call()
	switch {
	case e.panicked:
		return false
	case err != nil:
		e.err = fmt.Errorf("solvers: %s: %w", where, err)
		return false
	case isNonFinite(fx):
		e.err = &NonFiniteError{Quantity: "objective", Index: -1, Value: fx, Where: where}
		return false
	}
	for i, v := range e.g {
		if isNonFinite(v) {
			e.err = &NonFiniteError{Quantity: "gradient", Index: i, Value: v, Where: where}
			return false
		}
	}
	e.fx, e.valid = fx, true
	return true
}

// call runs f on the cached point, catching a panic so that MinimizeLBFGS
// can re-raise it on the caller's goroutine instead of it killing the
// process from gonum's.
func (e *lbfgsEval) call() (fx float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			e.panicked, e.panicValue = true, r
		}
	}()
	return e.f(e.x, e.g)
}

// status is optimize.Problem.Status: gonum calls it after every evaluation.
func (e *lbfgsEval) status() (optimize.Status, error) {
	switch {
	case e.panicked:
		return optimize.Failure, errors.New("solvers: L-BFGS objective panicked")
	case e.err != nil:
		return optimize.Failure, e.err
	case e.maxEvals > 0 && e.evals >= e.maxEvals:
		return optimize.FunctionEvaluationLimit, nil
	}
	return optimize.NotTerminated, nil
}

// Init and Record implement optimize.Recorder; an accepted iterate starts
// the evaluation budget of the next line search.
func (e *lbfgsEval) Init() error { return nil }

func (e *lbfgsEval) Record(loc *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	if op != optimize.MajorIteration {
		return nil
	}
	e.searchStart = e.evals
	e.passMajors++
	if e.passMajors > 1 && e.recorded {
		e.lastChange = relDecrease(e.lastF, loc.F)
		e.prog.iteration(e.baseIters+e.passMajors-1, e.evals, loc.F, e.lastChange)
	}
	e.lastF, e.recorded = loc.F, true
	return nil
}

// relDecrease is the decrease from a to b relative to their size.
func relDecrease(a, b float64) float64 {
	d := math.Max(math.Abs(a), math.Abs(b))
	if d == 0 {
		return 0
	}
	return (a - b) / d
}

// TrainLBFGS minimises a full-batch Objective over params with L-BFGS: the
// glue every full-batch model would otherwise repeat (flatten, evaluate on
// FullBatch(n), flatten gradients, write the optimum back).
//
// On return params hold Result.X, the best point found, even on error (the
// last evaluation is usually a line-search trial, not the optimum). Cholesky
// failures are handled as in Train: the jitter is raised and the same point
// re-evaluated. That changes the objective under L-BFGS's curvature history,
// which is harmless for the small jitter changes it is meant for (and a line
// search it spoils is retried along steepest descent).
//
// obj.Step is called sequentially but from gonum's goroutine, as f is in
// MinimizeLBFGS.
func TrainLBFGS(ctx context.Context, obj Objective, params []Param, n int, settings LBFGSSettings) (Result, error) {
	if obj == nil {
		return Result{X: Flatten(params), F: math.NaN(), Status: Failed}, errors.New("solvers: TrainLBFGS: nil Objective")
	}
	if n <= 0 {
		return Result{X: Flatten(params), F: math.NaN(), Status: Failed}, fmt.Errorf("solvers: TrainLBFGS: number of rows must be positive, got %d", n)
	}
	if lo, ok := obj.(LocalObjective); ok && lo.LocalParams() > 0 {
		// Its trial points would move the local rows as a side effect of
		// evaluation, and its line search assumes a fixed function.
		return Result{X: Flatten(params), F: math.NaN(), Status: Failed}, errors.New("solvers: TrainLBFGS: the objective has per-row local parameters, which L-BFGS cannot train; use Train")
	}
	batch := FullBatch(n)
	jit := newJitterPolicy(obj, settings.MaxJitterIncreases, settings.MaxJitter, settings.Warnings)
	evals := 0
	f := func(x, grad []float64) (float64, error) {
		evals++
		if err := Unflatten(params, x); err != nil {
			return 0, err
		}
		start := math.NaN()
		if jit.j != nil {
			start = jit.j.Jitter()
		}
		for {
			loss, grads, err := obj.Step(batch)
			if err == nil {
				return loss, FlattenGrads(grad, params, grads)
			}
			if !errors.Is(err, ErrNotPositiveDefinite) {
				return 0, err
			}
			if herr := jit.handle(err, fmt.Sprintf("L-BFGS evaluation %d", evals)); herr != nil {
				if evals == 1 || jit.j == nil {
					return 0, herr
				}
				// A trial point, not the start: the accepted points were
				// evaluated at the jitter this evaluation began with.
				if serr := jit.j.SetJitter(start); serr != nil {
					return 0, herr
				}
				return 0, fmt.Errorf("%w: %w", ErrTrialFailed, herr)
			}
			if cerr := ctx.Err(); cerr != nil {
				return 0, cerr
			}
		}
	}
	res, err := MinimizeLBFGS(ctx, f, Flatten(params), settings)
	if uerr := Unflatten(params, res.X); uerr != nil && err == nil {
		err = uerr
	}
	// Name the offending parameter, which only this wrapper knows.
	var nf *NonFiniteError
	if errors.As(err, &nf) && nf.Param == "" && nf.Index >= 0 {
		nf.Param, nf.Index = locate(params, nf.Index)
	}
	return res, err
}

// locate maps a flat index to (param name, element index).
func locate(params []Param, k int) (string, int) {
	for i, p := range params {
		if k < len(p.Data) {
			return nameOrIndex(params, i), k
		}
		k -= len(p.Data)
	}
	return "", k
}
