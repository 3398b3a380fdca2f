package solvers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// Why not gonum/optimize: the brief asked for optimize.Minimize, but in this
// module gonum.org/v1/gonum/optimize cannot be built: it imports stat/distmv,
// which imports golang.org/x/tools/container/intsets, and go.sum has no entry
// for golang.org/x/tools v0.30.0 (nor is it in the module cache). Rather than
// touch go.mod/go.sum, this file implements the standard algorithm directly
// (Nocedal & Wright, Numerical Optimization, 2nd ed.: Algorithm 7.4
// two-loop recursion, Algorithms 3.5/3.6 strong-Wolfe line search). The
// public API does not expose the backend, so swapping gonum in later is
// local to this file.

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
	// Memory is the number of correction pairs kept (0 = 10).
	Memory int

	// The remaining fields are used only by TrainLBFGS, with the same meaning
	// as in TrainConfig.
	MaxJitterIncreases int
	MaxJitter          float64
	Warnings           io.Writer
}

// Defaults for LBFGSSettings. Objectives here are sums over data of O(1)
// terms; a max-norm gradient of 1e-6 and a relative decrease of 1e-12 are far
// below any statistically meaningful change yet above floating-point noise.
const (
	DefaultGradTol = 1e-6
	DefaultFuncTol = 1e-12
	DefaultMemory  = 10
)

// Line-search constants: the usual strong-Wolfe parameters for quasi-Newton
// methods (c2 = 0.9 accepts the unit step most of the time, which is what
// gives L-BFGS its superlinear convergence), and an evaluation budget that
// is generous for smooth problems but stops a search on a wrong gradient.
const (
	wolfeC1       = 1e-4
	wolfeC2       = 0.9
	maxLineSearch = 40
)

// ErrLineSearch is wrapped by MinimizeLBFGS when no step satisfying the
// sufficient-decrease condition could be found even along steepest descent.
// It usually means the gradient is inconsistent with the objective (check it
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
}

// MinimizeLBFGS minimises f from x0 with L-BFGS, for full-batch problems
// (exact GP marginal likelihood, small full-batch ELBOs) where quasi-Newton
// steps converge in far fewer evaluations than Adam.
//
// f must write the gradient at x into grad (len(grad) == len(x)) and must
// not retain or modify x. It is called sequentially on the caller's
// goroutine.
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
	if settings.MaxIterations < 0 || settings.MaxEvaluations < 0 || settings.Memory < 0 || settings.GradTol < 0 || isNonFinite(settings.GradTol) || math.IsNaN(settings.FuncTol) {
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

	n := len(x0)
	ev := &lbfgsEval{ctx: ctx, f: f, maxEvals: settings.MaxEvaluations}
	cur, err := ev.at(x0)
	res.Evaluations = ev.evals
	if err != nil {
		return done(err)
	}
	accept := func(p point) {
		res.X, res.F, res.Gradient = p.x, p.f, p.g
	}
	accept(cur)
	finish := func(st Status, err error) (Result, error) {
		res.Status = st
		res.Converged = st == GradientConverged || st == FunctionConverged || st == NoProgress
		res.Evaluations = ev.evals
		return done(err)
	}
	if normInf(cur.g) < gtol {
		return finish(GradientConverged, nil)
	}

	hist := newLBFGSMemory(mem, n)
	d := make([]float64, n)
	for iter := 0; ; iter++ {
		if settings.MaxIterations > 0 && iter >= settings.MaxIterations {
			return finish(IterationLimit, nil)
		}
		hist.direction(d, cur.g)
		dg := dot(d, cur.g)
		if !(dg < 0) {
			// Rounding can make the quasi-Newton direction non-descent;
			// steepest descent always is while g != 0.
			hist.reset()
			hist.direction(d, cur.g)
			dg = dot(d, cur.g)
		}
		// Without curvature information take a step of length at most 1, so
		// the first trial is not absurdly long for a large gradient; with it,
		// the unit step is the natural quasi-Newton step.
		alpha0 := 1.0
		if hist.len() == 0 {
			alpha0 = math.Min(1, 1/norm2(d))
		}
		next, st, err := lineSearch(ev, cur, d, dg, alpha0)
		if err == nil && st == Failed && hist.len() > 0 {
			// A poor curvature history can produce a bad direction; retry
			// once from scratch before giving up.
			hist.reset()
			hist.direction(d, cur.g)
			dg = dot(d, cur.g)
			next, st, err = lineSearch(ev, cur, d, dg, math.Min(1, 1/norm2(d)))
		}
		switch {
		case err != nil:
			return finish(Failed, err)
		case st == EvaluationLimit || st == NoProgress:
			return finish(st, nil)
		case st == Failed:
			return finish(Failed, fmt.Errorf("%w at iteration %d after %d evaluations", ErrLineSearch, iter+1, ev.evals))
		}

		res.Iterations = iter + 1
		hist.push(cur, next)
		prevF := cur.f
		cur = next
		accept(cur)
		if normInf(cur.g) < gtol {
			return finish(GradientConverged, nil)
		}
		if ftol > 0 && prevF-cur.f <= ftol*math.Max(math.Abs(prevF), math.Abs(cur.f)) {
			return finish(FunctionConverged, nil)
		}
	}
}

// point is one evaluated location; x and g are owned by the point.
type point struct {
	x, g []float64
	f    float64
}

// lbfgsEval wraps f with the checks every evaluation needs, so the
// algorithm itself only deals with finite values.
type lbfgsEval struct {
	ctx      context.Context
	f        func(x, grad []float64) (float64, error)
	maxEvals int
	evals    int
}

// errEvalLimit is internal: it unwinds a line search when the evaluation
// budget is spent, which MinimizeLBFGS reports as a status, not an error.
var errEvalLimit = errors.New("evaluation limit")

func (e *lbfgsEval) at(x []float64) (point, error) {
	if err := e.ctx.Err(); err != nil {
		return point{}, fmt.Errorf("solvers: L-BFGS cancelled after %d evaluations: %w", e.evals, err)
	}
	if e.maxEvals > 0 && e.evals >= e.maxEvals {
		return point{}, errEvalLimit
	}
	p := point{x: slices.Clone(x), g: make([]float64, len(x))}
	e.evals++
	where := fmt.Sprintf("L-BFGS evaluation %d", e.evals)
	fx, err := e.f(p.x, p.g)
	if err != nil {
		return point{}, fmt.Errorf("solvers: %s: %w", where, err)
	}
	if isNonFinite(fx) {
		return point{}, &NonFiniteError{Quantity: "objective", Index: -1, Value: fx, Where: where}
	}
	for i, v := range p.g {
		if isNonFinite(v) {
			return point{}, &NonFiniteError{Quantity: "gradient", Index: i, Value: v, Where: where}
		}
	}
	p.f = fx
	return p, nil
}

// lineSearch finds a step along d from cur satisfying the strong Wolfe
// conditions (Nocedal & Wright Algorithm 3.5, with zoom = Algorithm 3.6).
// It returns the new point and a zero status on success; EvaluationLimit or
// NoProgress when it had to stop early; Failed when no acceptable step was
// found; or an error from the evaluator.
func lineSearch(ev *lbfgsEval, cur point, d []float64, dphi0, alpha float64) (point, Status, error) {
	phi0 := cur.f
	xt := make([]float64, len(cur.x))
	type trial struct {
		alpha, phi, dphi float64
		p                point
	}
	eval := func(a float64) (trial, error) {
		for i := range xt {
			xt[i] = cur.x[i] + a*d[i]
		}
		p, err := ev.at(xt)
		if err != nil {
			return trial{}, err
		}
		return trial{alpha: a, phi: p.f, dphi: dot(p.g, d), p: p}, nil
	}
	stop := func(err error) (point, Status, error) {
		if errors.Is(err, errEvalLimit) {
			return point{}, EvaluationLimit, nil
		}
		return point{}, Failed, err
	}
	armijo := func(t trial) bool { return t.phi <= phi0+wolfeC1*t.alpha*dphi0 }
	curvature := func(t trial) bool { return math.Abs(t.dphi) <= -wolfeC2*dphi0 }
	// stalled reports whether steps of size below width no longer move x in
	// floating point, in which case searching further is pointless.
	stalled := func(width float64) bool {
		for i := range cur.x {
			if cur.x[i]+width*d[i] != cur.x[i] {
				return false
			}
		}
		return true
	}

	zoom := func(lo, hi trial, evals int) (point, Status, error) {
		for ; evals < maxLineSearch; evals++ {
			if stalled(math.Abs(hi.alpha - lo.alpha)) {
				break
			}
			a := cubicMin(lo.alpha, lo.phi, lo.dphi, hi.alpha, hi.phi, hi.dphi)
			// Safeguard: stay at least 10% inside the bracket so it shrinks
			// geometrically even when interpolation is poor.
			left, right := math.Min(lo.alpha, hi.alpha), math.Max(lo.alpha, hi.alpha)
			margin := 0.1 * (right - left)
			if !(a >= left+margin && a <= right-margin) {
				a = (lo.alpha + hi.alpha) / 2
			}
			t, err := eval(a)
			if err != nil {
				return stop(err)
			}
			if !armijo(t) || t.phi >= lo.phi {
				hi = t
				continue
			}
			if curvature(t) {
				return t.p, "", nil
			}
			if t.dphi*(hi.alpha-lo.alpha) >= 0 {
				hi = lo
			}
			lo = t
		}
		// Out of budget or resolution: lo (if it is a real step) still gives
		// sufficient decrease, which keeps the iteration monotone; the
		// L-BFGS update is skipped if its curvature is unusable.
		if lo.alpha > 0 {
			return lo.p, "", nil
		}
		if stalled(math.Abs(hi.alpha - lo.alpha)) {
			return point{}, NoProgress, nil
		}
		return point{}, Failed, nil
	}

	prev := trial{alpha: 0, phi: phi0, dphi: dphi0, p: cur}
	for evals := 0; evals < maxLineSearch; evals++ {
		t, err := eval(alpha)
		if err != nil {
			return stop(err)
		}
		if !armijo(t) || (evals > 0 && t.phi >= prev.phi) {
			return zoom(prev, t, evals+1)
		}
		if curvature(t) {
			return t.p, "", nil
		}
		if t.dphi >= 0 {
			return zoom(t, prev, evals+1)
		}
		prev = t
		alpha *= 4 // still descending steeply: extrapolate
	}
	if prev.alpha > 0 {
		return prev.p, "", nil
	}
	return point{}, Failed, nil
}

// cubicMin returns the minimiser of the cubic interpolating (a, fa, da) and
// (b, fb, db) (Nocedal & Wright eq. 3.59), or NaN when it does not exist;
// the caller then bisects.
func cubicMin(a, fa, da, b, fb, db float64) float64 {
	d1 := da + db - 3*(fa-fb)/(a-b)
	disc := d1*d1 - da*db
	if !(disc >= 0) {
		return math.NaN()
	}
	d2 := math.Sqrt(disc)
	if b < a {
		d2 = -d2
	}
	return b - (b-a)*(db+d2-d1)/(db-da+2*d2)
}

// lbfgsMemory is the ring buffer of correction pairs (s, y) from which the
// two-loop recursion applies the inverse-Hessian approximation.
type lbfgsMemory struct {
	s, y  [][]float64
	rho   []float64
	alpha []float64
	head  int // index of the oldest pair
	n     int // number of stored pairs
}

func newLBFGSMemory(m, dim int) *lbfgsMemory {
	h := &lbfgsMemory{s: make([][]float64, m), y: make([][]float64, m), rho: make([]float64, m), alpha: make([]float64, m)}
	for i := range m {
		h.s[i] = make([]float64, dim)
		h.y[i] = make([]float64, dim)
	}
	return h
}

func (h *lbfgsMemory) len() int { return h.n }
func (h *lbfgsMemory) reset()   { h.head, h.n = 0, 0 }

// push stores the pair for the step from a to b, skipping it when s·y is not
// safely positive: such a pair would make the approximation indefinite and
// the next direction possibly ascent.
func (h *lbfgsMemory) push(a, b point) {
	m := len(h.s)
	slot := (h.head + h.n) % m
	s, y := h.s[slot], h.y[slot]
	for i := range s {
		s[i] = b.x[i] - a.x[i]
		y[i] = b.g[i] - a.g[i]
	}
	sy, yy := dot(s, y), dot(y, y)
	if !(sy > 1e-10*yy) || yy == 0 {
		return
	}
	h.rho[slot] = 1 / sy
	if h.n < m {
		h.n++
	} else {
		h.head = (h.head + 1) % m
	}
}

// direction sets d = -H·g by the two-loop recursion, scaling the initial
// matrix by s·y/y·y of the newest pair so unit steps are well sized.
func (h *lbfgsMemory) direction(d, g []float64) {
	m := len(h.s)
	for i := range d {
		d[i] = -g[i]
	}
	for k := h.n - 1; k >= 0; k-- {
		j := (h.head + k) % m
		a := h.rho[j] * dot(h.s[j], d)
		h.alpha[j] = a
		axpy(-a, h.y[j], d)
	}
	if h.n > 0 {
		j := (h.head + h.n - 1) % m
		gamma := dot(h.s[j], h.y[j]) / dot(h.y[j], h.y[j])
		for i := range d {
			d[i] *= gamma
		}
	}
	for k := 0; k < h.n; k++ {
		j := (h.head + k) % m
		b := h.rho[j] * dot(h.y[j], d)
		axpy(h.alpha[j]-b, h.s[j], d)
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func axpy(alpha float64, x, y []float64) {
	for i := range x {
		y[i] += alpha * x[i]
	}
}

func norm2(x []float64) float64 { return math.Sqrt(dot(x, x)) }

func normInf(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// TrainLBFGS minimises a full-batch Objective over params with L-BFGS: the
// glue every full-batch model would otherwise repeat (flatten, evaluate on
// FullBatch(n), flatten gradients, write the optimum back).
//
// On return params hold Result.X, the best point found, even on error (the
// last evaluation is usually a line-search trial, not the optimum). Cholesky
// failures are handled as in Train: the jitter is raised and the same point
// re-evaluated. That changes the objective under L-BFGS's curvature history,
// which is harmless for the small jitter changes it is meant for.
func TrainLBFGS(ctx context.Context, obj Objective, params []Param, n int, settings LBFGSSettings) (Result, error) {
	if obj == nil {
		return Result{X: Flatten(params), F: math.NaN(), Status: Failed}, errors.New("solvers: TrainLBFGS: nil Objective")
	}
	if n <= 0 {
		return Result{X: Flatten(params), F: math.NaN(), Status: Failed}, fmt.Errorf("solvers: TrainLBFGS: number of rows must be positive, got %d", n)
	}
	batch := FullBatch(n)
	jit := newJitterPolicy(obj, settings.MaxJitterIncreases, settings.MaxJitter, settings.Warnings)
	evals := 0
	f := func(x, grad []float64) (float64, error) {
		evals++
		if err := Unflatten(params, x); err != nil {
			return 0, err
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
				return 0, herr
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
