package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// trainState is what Fit leaves in a model so that Continue can resume
// training: the compiled objective (with its streams of random draws) and
// Adam over the global parameters (the input model's local rows keep their
// own optimiser), a fingerprint of every row trained on, and the epochs run so far.
// Save does not store it, so a loaded model cannot be continued. It holds
// the compiled graph, a reference to the training rows and, for NIMGP, Adam
// moments of every q(x_i) (4·N·D values) for as long as the model lives.
type trainState struct {
	obj    *svi.Objective
	opt    solvers.Optimizer
	rows   []uint64
	epochs int
}

// Continue trains a fitted model further, for epochs more epochs, on train:
// the data set it was fitted on (by Fit, then any earlier Continue) with
// zero or more rows appended. It is the warm start of sequential designs —
// active learning adds one point and retrains — where fitting from scratch
// would throw away every learned parameter and pay the full training budget
// again for a data set that changed by one row.
//
// Everything learned is kept: kernel hyper-parameters, inducing inputs,
// q(u), the learned input noise, NIMGP_NN's networks and NIMGP's q(x_i) of
// the old rows. NIMGP's new rows start as Fit starts every row: mean x̃_i,
// variance Options.QXInitVar. Given input-noise variances come from train
// (Dataset.Noise, else Options.NoiseVar), as in Fit.
//
// The optimiser state is kept too: Adam's moments and step count continue,
// and each q(x_i) row keeps its own (new rows start with none). A fresh Adam
// would take a step of size ≈ LR in every coordinate at its first
// iterations whatever the gradient, kicking a converged model away from its
// optimum; the kept moments describe the gradients of a data set that
// differs by a few rows, so they remain a good scale. (The authors' code
// keeps the Adam state for MGP, NIMGP_FO and NIMGP_NN and resets it for
// NIMGP only because it rebuilds that TensorFlow graph.) The ELBO uses the
// new N; the authors' MGP/FO/NN code keeps N at its initial value, which we
// do not copy.
//
// Minibatches are shuffled with a stream derived from Options.Seed and the
// number of epochs already run, so a continuation does not replay Fit's
// first epochs; cfg.Callback sees epochs numbered from 1 for this call and
// cfg.MaxIterations counts this call's steps. epochs = 0 only extends the
// model to the new rows (predictions are unchanged).
//
// Continue fails, without changing the model, when the model has no
// training state (never fitted, or loaded with Load), when train has a
// different number of features or classes, fewer rows than the model was
// trained on, or an earlier row (input, label or given noise) that differs
// from the one trained on. If training itself fails or ctx is cancelled,
// the model keeps the parameters reached so far and may be continued again.
func (m *Model) Continue(ctx context.Context, train *datasets.Dataset, epochs int, cfg FitConfig) error {
	st := m.fit
	switch {
	case m.post == nil:
		return errors.New("models: Continue needs a fitted model; call Fit first")
	case st == nil:
		return errors.New("models: the model has no training state to continue from (Load does not restore it); fit it with Fit")
	case epochs < 0:
		return fmt.Errorf("models: Continue for %d epochs", epochs)
	case cfg.Checkpoint != nil:
		return errors.New("models: Continue does not checkpoint; FitConfig.Checkpoint is for Fit")
	}
	if err := train.Validate(); err != nil {
		return err
	}
	switch {
	case train.D != m.D:
		return fmt.Errorf("models: cannot continue on %d features: the model was fitted on %d", train.D, m.D)
	case train.C != m.C:
		return fmt.Errorf("models: cannot continue on %d classes: the model was fitted on %d", train.C, m.C)
	case train.N < m.N:
		return fmt.Errorf("models: cannot continue on %d rows: the model was fitted on %d, and Continue only appends rows", train.N, m.N)
	}
	// The rows the model was fitted on are in its standardised units, the
	// new ones too: through the transform Fit computed, not a new one.
	train = m.standardize(train)
	if n := m.InputNoise(); n != nil {
		if err := n.CheckGiven(train); err != nil {
			return err
		}
	}
	noise := m.givenNoise(train)
	rows := rowPrints(train, noise)
	for i, h := range st.rows {
		if rows[i] != h {
			return fmt.Errorf("models: row %d of the data set differs from the row %d the model was fitted on (input, label or given noise); Continue only appends rows", i, i)
		}
	}
	// Everything is checked; extend the model to the new rows. The graph's
	// fixed batch grows with the data when the model was fitted on fewer
	// rows than a batch.
	if err := st.obj.Grow(train, m.Opts.Train.Batch); err != nil {
		return err
	}
	for _, l := range m.inputs.Locals() {
		l.Grow(train)
	}
	m.N = train.N
	st.rows = rows
	if epochs == 0 {
		return nil
	}
	warn := cfg.Warnings
	if warn == nil {
		warn = os.Stderr
	}
	hist, err := solvers.Train(ctx, st.obj, st.obj.SolverParams(), solvers.TrainConfig{
		N: m.N, BatchSize: st.obj.Batch(), Epochs: epochs, Seed: continueSeed(m.Opts.Train.Seed, st.epochs),
		Optimizer: st.opt, Progress: cfg.Progress, Callback: cfg.Callback,
		Warnings: warn, MaxIterations: cfg.MaxIterations,
	})
	st.epochs += len(hist)
	return err
}

// continueSeed is the shuffling seed of a continuation after done epochs.
func continueSeed(seed uint64, done int) uint64 {
	return seed ^ solvers.Mix64(uint64(done)+0x636f6e74)
}

// rowPrints returns a 64-bit fingerprint of each row: its inputs, its label
// and, when the model uses given noise, its variances. Continue compares
// them to recognise the data set a model was trained on without keeping a
// copy of it.
func rowPrints(ds *datasets.Dataset, noise []float64) []uint64 {
	out := make([]uint64, ds.N)
	D := ds.D
	for i := range out {
		h := solvers.Mix64(uint64(ds.Y[i]) + 0x9e3779b97f4a7c15)
		for _, v := range ds.X[i*D : (i+1)*D] {
			h = solvers.Mix64(h ^ math.Float64bits(v))
		}
		if noise != nil {
			for _, v := range noise[i*D : (i+1)*D] {
				h = solvers.Mix64(h ^ bits.RotateLeft64(math.Float64bits(v), 17))
			}
		}
		out[i] = h
	}
	return out
}

// ReleaseTraining drops the state Fit keeps for Continue (the compiled
// training graph, optimiser moments, row fingerprints), so its memory can be
// reclaimed while the model is kept for prediction; for NIMGP on MNIST-sized
// data that state is hundreds of megabytes. The model still predicts and
// saves; Continue then fails as for a loaded model.
func (m *Model) ReleaseTraining() { m.fit = nil }
