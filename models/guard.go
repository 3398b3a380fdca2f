package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
)

// This file holds what keeps a model's failures in the user's terms:
// the input standardisation (Options.Inputs.Standardize), the checks of the
// training classes, cancellation of long graph builds, and the explanation
// of a kernel matrix that is not positive definite.

// NotPositiveDefiniteError is a kernel matrix (K_ZZ, or a matrix built from
// it) whose Cholesky factorisation failed even at the largest jitter tried.
// It wraps the factorisation's error, so errors.Is(err,
// graph.ErrNotPositiveDefinite) holds, but its message speaks of the likely
// causes rather than of the graph machine's instructions.
type NotPositiveDefiniteError struct {
	// Stage is "training" or "prediction".
	Stage string
	// Jitter is the largest jitter tried; Raised says whether the jitter
	// ladder raised it to that value.
	Jitter float64
	Raised bool
	Err    error
}

// Error is the stage and Reason, prefixed with the package.
func (e *NotPositiveDefiniteError) Error() string { return "models: " + e.Stage + ": " + e.Reason() }

// Reason is the message without the package and stage.
func (e *NotPositiveDefiniteError) Reason() string {
	j := strconv.FormatFloat(e.Jitter, 'g', -1, 64)
	how := "even with jitter " + j
	if e.Raised {
		how = "even after raising the jitter to " + j
	}
	return "the kernel matrix is not positive definite " + how + "; check the input scale (standardise the inputs, look for extreme values) and the kernel length-scales"
}

// Unwrap returns the factorisation's own error.
func (e *NotPositiveDefiniteError) Unwrap() error { return e.Err }

// explain turns a Cholesky failure at stage into a *NotPositiveDefiniteError
// with the posterior's current jitter; other errors pass unchanged.
func (m *Model) explain(stage string, err error) error {
	var npd *NotPositiveDefiniteError
	if err == nil || !errors.Is(err, graph.ErrNotPositiveDefinite) || errors.As(err, &npd) {
		return err
	}
	e := &NotPositiveDefiniteError{Stage: stage, Jitter: m.Opts.Posterior.Jitter, Err: err}
	if m.post != nil && m.post.JitterParam != nil {
		e.Jitter = m.post.JitterParam.Value(0)
	}
	e.Raised = stage == "training" && e.Jitter > m.Opts.Posterior.Jitter
	return e
}

// checkTrainingClasses refuses training data in which fewer than two
// classes have rows: a one-class "classifier" is no result. Data with rows
// of two or more classes but none of some other class of 0..C−1 are
// accepted (Dataset.C may exceed the classes present: a subset, or the toy
// problem of the noisy-input paper, where a latent function can win
// nowhere); their latent functions stay near the prior.
func checkTrainingClasses(ds *datasets.Dataset) error {
	err := ds.MissingClasses("training data "+ds.Name, "")
	var ec *datasets.EmptyClassError
	if err == nil || (errors.As(err, &ec) && len(ec.Present) >= 2) {
		return nil
	}
	return fmt.Errorf("models: %w", err)
}

// interruptibly runs f, a graph build that cannot be stopped midway (for
// hundreds of latent functions it takes minutes), on its own goroutine and
// returns ctx's error as soon as ctx is cancelled; the abandoned build then
// finishes in the background and its result is dropped, and the model must
// be fitted again before use. A panic in f is returned as an error, since
// it happens on a goroutine no caller could recover it on.
func interruptibly[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil { // never cancelled: no goroutine needed
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("models: internal error while building the model's graph: %v", r)}
			}
		}()
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// fitScaler returns the per-column mean and population standard deviation
// of train's inputs (datasets.FitScaler: a constant column is centred and
// left unscaled). A column whose plain sums overflow (cells near ±1e308)
// is computed again on values divided by its largest magnitude, so that
// extreme but finite inputs still standardise.
func fitScaler(train *datasets.Dataset) (*datasets.Scaler, error) {
	s := datasets.FitScaler(train)
	for j := range s.Mean {
		if finite(s.Mean[j]) && finite(s.Scale[j]) {
			continue
		}
		var big float64
		for i := range train.N {
			big = math.Max(big, math.Abs(train.X[i*train.D+j]))
		}
		var mean, ss float64
		for i := range train.N {
			mean += train.X[i*train.D+j] / big
		}
		mean /= float64(train.N)
		for i := range train.N {
			d := train.X[i*train.D+j]/big - mean
			ss += d * d
		}
		sd := math.Sqrt(ss/float64(train.N)) * big
		s.Mean[j] = mean * big
		s.Scale[j] = sd
		if !(sd > 1e-12*math.Max(1, math.Abs(s.Mean[j]))) { // constant, as datasets.FitScaler decides
			s.Scale[j] = 1
		}
		if !finite(s.Mean[j]) || !finite(s.Scale[j]) {
			return nil, fmt.Errorf("models: cannot standardise input column %d: its mean or spread is not a finite number", j+1)
		}
	}
	return s, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// standardize returns ds in the model's standardised units: the inputs
// through the saved transform, given noise variances divided by the squared
// scale (a configured variance becomes a per-entry one, since it scales
// differently per column). Without a transform it returns ds.
func (m *Model) standardize(ds *datasets.Dataset) *datasets.Dataset {
	if m.scaler == nil {
		return ds
	}
	if m.UsesGivenNoise() && ds.Noise == nil {
		ds = ds.Clone()
		ds.Noise = m.givenNoise(ds)
	}
	return m.scaler.Apply(ds)
}

// standardizeTest is standardize for prediction inputs x (n×D) and their
// noise variances (nil: the model's own).
func (m *Model) standardizeTest(x []float64, n int, noise []float64) ([]float64, []float64) {
	if m.scaler == nil {
		return x, noise
	}
	D := m.D
	xs := make([]float64, len(x))
	for k, v := range x {
		xs[k] = (v - m.scaler.Mean[k%D]) / m.scaler.Scale[k%D]
	}
	if noise == nil && m.UsesGivenNoise() {
		noise = make([]float64, n*D)
		for k := range noise {
			noise[k] = m.InputNoise().Var
		}
	}
	if noise != nil {
		ns := make([]float64, len(noise))
		for k, v := range noise {
			s := m.scaler.Scale[k%D]
			ns[k] = v / (s * s)
		}
		noise = ns
	}
	return xs, noise
}

// Standardization returns the per-column mean and scale the model
// standardises its inputs with (Options.Inputs.Standardize), copies, or nil
// when it uses the inputs as given.
func (m *Model) Standardization() (mean, scale []float64) {
	if m.scaler == nil {
		return nil, nil
	}
	return append([]float64(nil), m.scaler.Mean...), append([]float64(nil), m.scaler.Scale...)
}
