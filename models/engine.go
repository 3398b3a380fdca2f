package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
)

// Engine is the inference part of a composition: it fits an initialised
// model's posterior (and hyper-parameters) to the training rows. The
// built-in engines are "svi" (stochastic variational inference), "ep"
// (expectation propagation) and "mf" (the SVGP paper's mean-field bound);
// a package registers another with RegisterEngine and every model, command
// and spec can then name it in Options.Inference.
//
// What an engine can do beyond fitting is asked through the optional
// capability interfaces below (Streamer, Checkpointer, GradientChecker,
// FullBatcher), in the style of gonum's optimize.Method and Statuser: no
// code outside the registry compares engine names.
type Engine interface {
	// Name is how options, specs and the command line name the engine.
	Name() string
	// Supports reports why the engine cannot fit the composition m (its
	// parts are built, its parameters are not): nil when it can. The error
	// names the capability the composition lacks.
	Supports(m *Model) error
	// Fit trains m on train. The model is initialised from train (kernels,
	// inducing inputs, q(u) at the prior) and train is in the model's units
	// (standardised when the options say so).
	Fit(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error
}

// Streamer is an engine that trains from rows read from disk in
// minibatches, with memory flat in the number of rows (Model.FitStream).
type Streamer interface {
	Engine
	// FitStream trains the uninitialised model m from src; see
	// Model.FitStream for what the model must be.
	FitStream(ctx context.Context, m *Model, src RowSource, cfg FitConfig) error
}

// Checkpointer is an engine whose fits can be saved to a checkpoint file
// part way and resumed (FitConfig.Checkpoint).
type Checkpointer interface {
	Engine
	// Checkpointable reports why a fit of m cannot be checkpointed (nil:
	// it can): it may depend on the model's settings, such as the optimiser.
	Checkpointable(m *Model) error
}

// GradientChecker is an engine whose objective's gradient can be compared
// with finite differences (CheckGradients, gpc check-grad).
type GradientChecker interface {
	Engine
	// GradientOrders lists the derivative orders the check covers (1, 2).
	GradientOrders() []int
	// CheckGradients checks the objective of the model m, initialised on
	// ds and moved away from its initial values, at derivative order.
	CheckGradients(m *Model, ds *datasets.Dataset, order int, rng *rand.Rand) (graph.CheckReport, error)
}

// FullBatcher is an engine whose every objective evaluation reads every
// training row (EP, the mean-field bound): its cost is per fit, not per
// minibatch step, and it cannot take a minibatch schedule.
type FullBatcher interface {
	Engine
	// FullBatch reports whether fits of m read every row per evaluation.
	FullBatch(m *Model) bool
}

// Predictor is an engine whose fit predicts by its own rule rather than
// through the model's q(u) (say, a sampler whose draws each carry their own
// hyper-parameters). Predict receives the test inputs in the model's units
// (standardised when the model standardises) and returns n×C class
// probabilities; it stops with ctx's error when ctx is cancelled.
type Predictor interface {
	Engine
	Predict(ctx context.Context, m *Model, x []float64, n int, noise []float64) ([]float64, error)
}

// Stateful is an engine whose fit leaves state beyond the model's
// parameters (a sampler's draws and diagnostics, EP's outlier posteriors),
// held in Model.EngineState. Save stores that value as JSON; Load gives the
// stored JSON to DecodeState and keeps what it returns.
type Stateful interface {
	Engine
	// DecodeState parses the state of a fit of m that Save stored; it
	// validates it like any other input read from a file.
	DecodeState(m *Model, raw json.RawMessage) (any, error)
}

// EvidenceReporter is an engine whose fit has a log marginal likelihood,
// or a lower bound on it, that can be evaluated after the fit (EP's log
// Z_EP, the ELBO of variational inference): what `gpc compare` prints
// beside each engine's test scores. A sampler, which has none, does not
// implement it.
type EvidenceReporter interface {
	Engine
	// LogEvidence evaluates the fitted model m's log evidence or bound on
	// the training rows (in the model's units), and names which it is
	// ("log Z_EP", "ELBO").
	LogEvidence(ctx context.Context, m *Model, train *datasets.Dataset) (value float64, kind string, err error)
}

// Figure is one named number an engine reports about its fit.
type Figure struct {
	// Name is a short snake_case name (say "seconds_per_ess").
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Reporter is an engine with figures about a fit beyond its scores: a
// sampler's split-R̂, effective sample size and time per effective sample.
type Reporter interface {
	Engine
	// Report returns the figures of the fit of m (none before a fit).
	Report(m *Model) []Figure
}

// LogEvidence returns the fitted model's log evidence or its bound on the
// training rows train (in the inputs' units, standardised as the model
// was), and what it is; ok is false when the model's engine has none
// (models.EvidenceReporter).
func (m *Model) LogEvidence(ctx context.Context, train *datasets.Dataset) (value float64, kind string, ok bool, err error) {
	r, is := m.engine.(EvidenceReporter)
	if !is {
		return 0, "", false, nil
	}
	if m.post == nil {
		return 0, "", true, errors.New("models: LogEvidence before the model is fitted")
	}
	if err := train.Validate(); err != nil {
		return 0, "", true, err
	}
	if m.scaler != nil {
		train = m.standardize(train)
	}
	value, kind, err = r.LogEvidence(ctx, m, train)
	return value, kind, true, err
}

// Report returns the figures the model's engine reports about its fit
// (models.Reporter), nil for an engine without.
func (m *Model) Report() []Figure {
	if r, ok := m.engine.(Reporter); ok {
		return r.Report(m)
	}
	return nil
}

var (
	engineMu sync.RWMutex
	engines  = map[string]Engine{}
)

// RegisterEngine adds an engine under its Name; it fails on an empty or
// taken name. Register from an init function, before models are built.
func RegisterEngine(e Engine) error {
	if e == nil || e.Name() == "" {
		return errors.New("models: RegisterEngine: an engine needs a name")
	}
	engineMu.Lock()
	defer engineMu.Unlock()
	if _, ok := engines[e.Name()]; ok {
		return fmt.Errorf("models: engine %q is already registered", e.Name())
	}
	engines[e.Name()] = e
	return nil
}

func mustRegisterEngine(e Engine) {
	if err := RegisterEngine(e); err != nil {
		panic(err)
	}
}

// LookupEngine returns the engine registered under name.
func LookupEngine(name string) (Engine, bool) {
	engineMu.RLock()
	defer engineMu.RUnlock()
	e, ok := engines[name]
	return e, ok
}

// EngineNames lists the registered engines, sorted.
func EngineNames() []string {
	engineMu.RLock()
	defer engineMu.RUnlock()
	out := make([]string, 0, len(engines))
	for n := range engines {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// engineFor returns the engine of resolved options, or an error listing
// the registered ones.
func engineFor(name string) (Engine, error) {
	if e, ok := LookupEngine(name); ok {
		return e, nil
	}
	return nil, fmt.Errorf("models: unknown inference %q (want %s)", name, joinOr(EngineNames()))
}

// Engine returns the model's inference engine.
func (m *Model) Engine() Engine { return m.engine }

// CanStream reports why m cannot be trained from disk by FitStream (nil:
// it can), naming the capability its engine lacks.
func (m *Model) CanStream() error {
	if _, ok := m.engine.(Streamer); !ok {
		return fmt.Errorf("models: the %s engine does not train from disk (models.Streamer); model %s needs every row at once", m.engine.Name(), m.Name())
	}
	return nil
}

// IsFullBatch reports whether the model's engine reads every training row
// per objective evaluation (the cost of a fit is then per fit, not per
// minibatch step).
func (m *Model) IsFullBatch() bool {
	fb, ok := m.engine.(FullBatcher)
	return ok && fb.FullBatch(m)
}

// GradientOrders lists the derivative orders CheckGradients covers for the
// model's engine; empty when the engine has no gradient check.
func (m *Model) GradientOrders() []int {
	if g, ok := m.engine.(GradientChecker); ok {
		return g.GradientOrders()
	}
	return nil
}

// capabilityError names what an engine lacks for a request.
func capabilityError(e Engine, what, iface string) error {
	return fmt.Errorf("models: the %s engine cannot %s (it does not implement models.%s)", e.Name(), what, iface)
}

// EngineHelp lists the registered engines for help texts.
func EngineHelp() string { return strings.Join(EngineNames(), ", ") }

// EngineState returns the state the model's engine left at its fit (see
// Stateful), nil for none.
func (m *Model) EngineState() any { return m.engineState }

// SetEngineState keeps an engine's fitted state in the model; Save stores
// it (as JSON) when the engine is Stateful, and Load restores it.
func (m *Model) SetEngineState(v any) { m.engineState = v }
