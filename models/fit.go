package models

import (
	"context"
	"io"
	"os"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// Epoch is one training epoch's record, passed to Fit's callback.
type Epoch = solvers.Epoch

// FitConfig holds the optional hooks of Fit.
type FitConfig struct {
	// Progress receives a line per epoch (epoch, ELBO, time, ETA); nil is silent.
	Progress io.Writer
	// Callback is called after each epoch; returning solvers.ErrStopTraining
	// stops early, any other error aborts.
	Callback func(Epoch) error
	// Warnings receives jitter warnings (nil: os.Stderr).
	Warnings io.Writer
	// MaxIterations stops after that many optimiser steps (0: no limit).
	MaxIterations int
}

// Fit trains the model on train by maximising the ELBO with Adam over
// shuffled minibatches (Options.Train), the input model's per-row local
// parameters (if any) by their own per-row Adam after each global step.
// It stops early with ctx's error when ctx is cancelled. Fit starts from
// scratch; Continue trains a fitted model further on a data set with rows
// appended, so Fit keeps the training graph and optimiser state in the
// model.
func (m *Model) Fit(ctx context.Context, train *datasets.Dataset, cfg FitConfig) error {
	if err := train.Validate(); err != nil {
		return err
	}
	warn := cfg.Warnings
	if warn == nil {
		warn = os.Stderr
	}
	m.fit = nil
	if err := m.initialize(train, warn); err != nil {
		return err
	}
	return engines[m.Opts.Inference](ctx, m, train, cfg)
}

// engines fit an initialised model; the key is Options.Inference.
var engines = map[string]func(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error{
	"svi": fitSVI,
	"ep":  fitEP,
}

// fitSVI maximises the ELBO by Adam over minibatches.
func fitSVI(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	obj, err := m.newObjective(train)
	if err != nil {
		return err
	}
	st := &trainState{obj: obj, adam: solvers.NewAdam(m.Opts.Train.LR)}
	hist, err := solvers.Train(ctx, obj, obj.SolverParams(), solvers.TrainConfig{
		N: m.N, BatchSize: obj.Batch(), Epochs: m.Opts.Train.Epochs, Seed: m.Opts.Train.Seed,
		Optimizer: st.adam, Progress: cfg.Progress, Callback: cfg.Callback,
		Warnings: cfg.Warnings, MaxIterations: cfg.MaxIterations,
	})
	// Keep the graph and optimiser state for Continue, also after a failed
	// or cancelled run (the parameters are the last finite ones).
	st.rows, st.epochs = rowPrints(train, m.givenNoise(train)), len(hist)
	m.fit = st
	return err
}

// newObjective compiles the minibatch objective of the model's parts and
// gives the input model's local rows their optimiser.
func (m *Model) newObjective(train *datasets.Dataset) (*svi.Objective, error) {
	obj, err := svi.New(svi.Parts{C: m.C, Likelihood: m.lik, Posterior: m.post, Inputs: m.inputs, Params: m.trainable()},
		train, m.Opts.Train.Batch, m.Opts.Train.Seed)
	if err != nil {
		return nil, err
	}
	for _, l := range m.inputs.Locals() {
		l.SetOptimizer(m.Opts.Train.LR)
	}
	return obj, nil
}

// givenNoise returns the per-point variances the model reads from ds (the
// data set's, or the configured value everywhere), nil when it reads none.
func (m *Model) givenNoise(ds *datasets.Dataset) []float64 {
	if !m.UsesGivenNoise() {
		return nil
	}
	if ds.Noise != nil {
		return append([]float64(nil), ds.Noise...)
	}
	out := make([]float64, ds.N*ds.D)
	for i := range out {
		out[i] = m.InputNoise().Var
	}
	return out
}
