package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// Epoch is one training epoch's record, passed to Fit's callback.
type Epoch = solvers.Epoch

// FitConfig holds the optional hooks of Fit.
type FitConfig struct {
	// Progress receives about a line a second: minibatch epochs (epoch,
	// ELBO, time, ETA) or full-batch L-BFGS iterations (iteration,
	// objective, relative change, evaluations, time, a bound on the time
	// left), with the first and the last always; nil is silent.
	Progress io.Writer
	// Callback is called after each epoch; returning solvers.ErrStopTraining
	// stops early, any other error aborts.
	Callback func(Epoch) error
	// Warnings receives jitter warnings (nil: os.Stderr).
	Warnings io.Writer
	// MaxIterations stops after that many optimiser steps (0: no limit).
	MaxIterations int
	// Trace, if set, is called after every evaluation of a full-batch
	// objective (L-BFGS on the ELBO, the EP evidence, the mean-field
	// bound) with the model's posterior set to that evaluation's, so that
	// a caller can score the model along the optimisation, as the SVGP
	// paper's Figure 2 does; the time it takes is the caller's to exclude.
	// Minibatch training does not call it.
	Trace func(eval int, loss float64) error
	// Checkpoint, if set, saves minibatch training (the svi engine with
	// Adam or Adadelta) to a file and resumes from it (see Checkpoint);
	// Fit refuses it for other engines and optimisers, and Continue and
	// FitStream refuse it.
	Checkpoint *Checkpoint
}

// Fit trains the model on train by its engine: for the svi engine, by
// maximising the ELBO with Adam or Adadelta over shuffled minibatches, the
// input model's per-row local parameters (if any) by their own per-row
// Adam after each global step, or with L-BFGS on the full batch
// (Options.Train). Under the converged stopping rule the fit ends when
// the objective stops improving, within the Epochs cap; the model keeps a
// FitReport of how it ended, and a fit that ended unconverged is reported
// in one line to cfg.Warnings.
// It stops early with ctx's error when ctx is cancelled. Fit starts from
// scratch; Continue trains a fitted model further on a data set with rows
// appended, so Fit keeps the training graph and optimiser state in the
// model.
//
// Fit refuses training data with rows of fewer than two classes, naming the
// empty ones (a class of 0..C−1 without rows is accepted when two or more
// have rows: Dataset.C may exceed the classes a subset holds). With
// Options.Inputs.Standardize it first computes the input standardisation
// from train and trains in standardised units. Cancelling ctx stops Fit
// also while it builds its graphs (which takes minutes for hundreds of
// classes); the model must then be fitted again before use. A kernel matrix
// that no jitter makes positive definite is returned as a
// *NotPositiveDefiniteError.
func (m *Model) Fit(ctx context.Context, train *datasets.Dataset, cfg FitConfig) error {
	if err := train.Validate(); err != nil {
		return err
	}
	if err := checkTrainingClasses(train); err != nil {
		return err
	}
	if err := m.checkMemory(train.N, train.D, train.C); err != nil {
		return err
	}
	if err := m.checkCheckpoint(cfg.Checkpoint); err != nil {
		return err
	}
	m.learnUngivenNoise(train)
	warn := cfg.Warnings
	if warn == nil {
		warn = os.Stderr
	}
	m.fit, m.meanSamples, m.scaler, m.engineState, m.report = nil, nil, nil, nil, nil
	if m.Opts.Inputs.Standardize {
		s, err := fitScaler(train)
		if err != nil {
			return err
		}
		m.scaler = s
		train = m.standardize(train)
	}
	if _, err := interruptibly(ctx, func() (struct{}, error) { return struct{}{}, m.initialize(train, warn) }); err != nil {
		return m.explain("training", err)
	}
	if err := m.engine.Fit(ctx, m, train, cfg); err != nil {
		m.report = nil
		return m.explain("training", err)
	}
	m.report.warnUnconverged(warn, m.Name())
	return nil
}

func init() { mustRegisterEngine(sviEngine{}) }

// sviEngine is stochastic variational inference: the ELBO of the model's
// variational family, maximised by Adam or Adadelta over minibatches or by
// L-BFGS on the full batch.
type sviEngine struct{}

func (sviEngine) Name() string { return "svi" }

// Supports: every composition has an ELBO (the likelihood's expected log
// density under q(f), the family's KL, the input model's terms).
func (sviEngine) Supports(*Model) error { return nil }

func (sviEngine) Fit(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	return fitSVI(ctx, m, train, cfg)
}

func (sviEngine) FitStream(ctx context.Context, m *Model, src RowSource, cfg FitConfig) error {
	return m.fitStream(ctx, src, cfg)
}

// Checkpointable: minibatch training (Adam, Adadelta) checkpoints; an
// L-BFGS run keeps its curvature pairs only in memory.
func (sviEngine) Checkpointable(m *Model) error {
	if m.Opts.Train.Optimizer == "lbfgs" {
		return errors.New("only minibatch training (adam or adadelta) can be checkpointed, not L-BFGS")
	}
	return nil
}

// FullBatch: L-BFGS reads every row per evaluation.
func (sviEngine) FullBatch(m *Model) bool { return m.Opts.Train.Optimizer == "lbfgs" }

func (sviEngine) GradientOrders() []int { return []int{1, 2} }

func (sviEngine) CheckGradients(m *Model, ds *datasets.Dataset, order int, _ *rand.Rand) (graph.CheckReport, error) {
	return checkELBOGradients(m, ds, order)
}

// fitSVI maximises the ELBO with the configured optimiser: Adam or
// Adadelta over minibatches, or L-BFGS on the full batch; the freeze
// schedule holds the hyper-parameters and Z for its first epochs.
func fitSVI(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	t := m.Opts.Train
	if t.Optimizer == "lbfgs" {
		t.Batch = train.N
	}
	obj, err := interruptibly(ctx, func() (*svi.Objective, error) { return m.newObjectiveBatch(train, t.Batch) })
	if err != nil {
		return err
	}
	st := &trainState{obj: obj}
	switch t.Optimizer {
	case "adadelta":
		st.opt = solvers.NewAdadelta(t.LR)
	default:
		st.opt = solvers.NewAdam(t.LR)
	}
	hyper, zs := m.freezeSets()
	frozenFor := func(done int) map[*layers.Param]bool {
		f := map[*layers.Param]bool{}
		if done < t.FreezeHyper {
			maps.Copy(f, hyper)
		}
		if done < t.FreezeZ {
			maps.Copy(f, zs)
		}
		return f
	}
	obj.Freeze(frozenFor(0))
	var epochs int
	if t.Optimizer == "lbfgs" {
		epochs, err = m.fitLBFGS(ctx, obj, train, cfg, frozenFor)
	} else {
		var resume *solvers.Snapshot
		var save func(*solvers.Snapshot) error
		resume, save, err = m.openCheckpoint(cfg.Checkpoint, train, obj.SolverParams())
		if err != nil {
			// Nothing trained: the graph is not kept for Continue.
			return errors.Join(err, obj.Close())
		}
		if resume != nil {
			// The schedule as the callback after that epoch left it.
			obj.Freeze(frozenFor(resume.Epoch))
		}
		var every time.Duration
		if cfg.Checkpoint != nil {
			every = cfg.Checkpoint.Every
		}
		// The plateau reads only the epochs after the freeze: the frozen
		// ones are flat by design, and unfreezing drops the loss.
		frozen := max(t.FreezeHyper, t.FreezeZ)
		plateau := &solvers.Plateau{Tol: t.epochTol()}
		if resume != nil {
			for _, e := range resume.History {
				if e.Epoch > frozen {
					plateau.Add(e.Loss)
				}
			}
		}
		var stoppedBy string
		callback := func(e Epoch) error {
			obj.Freeze(frozenFor(e.Epoch))
			if cfg.Callback != nil {
				if err := cfg.Callback(e); err != nil {
					if errors.Is(err, solvers.ErrStopTraining) {
						stoppedBy = "stopped by the callback"
					}
					return err
				}
			}
			if e.Epoch > frozen {
				plateau.Add(e.Loss)
			}
			if plateau.Converged() {
				stoppedBy = "converged"
				return solvers.ErrStopTraining
			}
			return nil
		}
		var hist solvers.History
		hist, err = solvers.Train(ctx, obj, obj.SolverParams(), solvers.TrainConfig{
			N: m.N, BatchSize: obj.Batch(), Epochs: t.Epochs, Seed: t.Seed,
			Optimizer: st.opt, Progress: cfg.Progress, Callback: callback,
			Warnings: cfg.Warnings, MaxIterations: cfg.MaxIterations,
			Checkpoint: save, CheckpointEvery: every, Resume: resume,
		})
		epochs = len(hist)
		if err == nil {
			reason := stoppedBy
			switch {
			case reason != "":
			case epochs < t.Epochs:
				reason = "iteration limit"
			default:
				reason = "cap"
			}
			tail := hist
			for len(tail) > 0 && tail[0].Epoch <= frozen {
				tail = tail[1:]
			}
			m.report = minibatchReport(t.Optimizer, t.Stop, tail, t.Epochs, reportTol(t.Tolerance, DefaultEpochTol), reason)
			m.report.Iterations = epochs
			m.report.Converged = m.report.Converged || stoppedBy == "converged"
		}
	}
	obj.Freeze(nil)
	// Keep the graph and optimiser state for Continue, also after a failed
	// or cancelled run (the parameters are the last finite ones).
	st.rows, st.epochs = rowPrints(train, m.givenNoise(train)), epochs
	m.fit = st
	return err
}

// fitLBFGS runs L-BFGS on the full batch: first for the frozen
// iterations with the freeze in place, then for the rest.
func (m *Model) fitLBFGS(ctx context.Context, obj *svi.Objective, train *datasets.Dataset, cfg FitConfig, frozenFor func(int) map[*layers.Param]bool) (int, error) {
	t := m.Opts.Train
	first := min(max(t.FreezeHyper, t.FreezeZ), t.Epochs)
	done, iterations := 0, 0
	for _, phase := range []int{first, t.Epochs - first} {
		if phase == 0 {
			continue
		}
		obj.Freeze(frozenFor(done))
		tobj, err := withTrace(obj, cfg, nil)
		if err != nil {
			return done, err
		}
		res, err := solvers.TrainLBFGS(ctx, tobj, obj.SolverParams(), train.N, m.lbfgsSettings(phase, cfg, "elbo"))
		done += phase
		if err = lbfgsStopped(err, cfg.Warnings); err != nil {
			return done, err
		}
		iterations += res.Iterations
		// The last phase is the one that ends the fit.
		m.report = lbfgsReport(t.Stop, "ELBO", res, iterations, t.Epochs, reportTol(t.Tolerance, DefaultLBFGSTol))
		if cfg.Callback != nil {
			if err := cfg.Callback(Epoch{Epoch: done, Loss: res.F, Steps: res.Iterations, Iterations: done}); err != nil {
				if errors.Is(err, solvers.ErrStopTraining) {
					return done, nil
				}
				return done, err
			}
		}
	}
	return done, nil
}

// learnUngivenNoise makes a model with an input-noise part learn the
// variances when none are given (no Noise.Var, no per-row variances with
// the data), as gpc train does: zero given variances would otherwise make
// a noise-aware model noiseless, or be refused by one that divides by
// them. Options.Inputs.Noise.Learn then says so, for Save.
func (m *Model) learnUngivenNoise(train *datasets.Dataset) {
	n := m.InputNoise()
	if n == nil || n.Learn || n.Var != 0 || train.Noise != nil {
		return
	}
	n.Learn, m.Opts.Inputs.Noise.Learn = true, true
}

// lbfgsSettings are the settings of a full-batch fit's L-BFGS run of at
// most iterations: the stopping rule's tolerance, and progress lines
// naming the maximised objective.
func (m *Model) lbfgsSettings(iterations int, cfg FitConfig, objective string) solvers.LBFGSSettings {
	s := solvers.LBFGSSettings{MaxIterations: iterations, FuncTol: m.Opts.Train.lbfgsTol(),
		Warnings: cfg.Warnings, Progress: cfg.Progress, ProgressName: objective}
	if m.Opts.Train.Stop != StopBudget {
		s.FuncTolIterations = LBFGSPlateau
	}
	return s
}

// reportTol is the tolerance a fit report judges convergence by: the one
// given, else the loop's default (also under the budget rule, which does
// not stop on it).
func reportTol(given, def float64) float64 {
	if given > 0 {
		return given
	}
	return def
}

// freezeSets returns the hyper-parameters (kernels' and likelihood's) and
// the inducing inputs, for the freeze schedule.
func (m *Model) freezeSets() (hyper, zs map[*layers.Param]bool) {
	hyper, zs = map[*layers.Param]bool{}, map[*layers.Param]bool{}
	for _, k := range m.kernels {
		for _, p := range k.Params() {
			hyper[p] = true
		}
	}
	for _, p := range m.lik.Params() {
		hyper[p] = true
	}
	for _, z := range m.post.Z {
		zs[z] = true
	}
	return hyper, zs
}

// newObjective compiles the minibatch objective of the model's parts and
// gives the input model's local rows their optimiser.
func (m *Model) newObjective(train *datasets.Dataset) (*svi.Objective, error) {
	return m.newObjectiveBatch(train, m.Opts.Train.Batch)
}

func (m *Model) newObjectiveBatch(train *datasets.Dataset, batch int) (*svi.Objective, error) {
	obj, err := svi.New(svi.Parts{C: m.C, Likelihood: m.lik, Posterior: m.post, Inputs: m.inputs, Params: m.trainable()},
		train, batch, m.Opts.Train.Seed)
	if err != nil {
		return nil, err
	}
	for _, l := range m.inputs.Locals() {
		l.SetOptimizer(m.Opts.Train.LR, m.Opts.Train.LocalAdam != "lazy")
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

// lbfgsStopped turns the ends of an L-BFGS run that leave the parameters at
// its best accepted point into nil: a failed line search, or a trial step
// so wild that the objective became non-finite or its matrices could not be
// factorised at any jitter (TrainLBFGS restores the best point; these are
// reported as a warning). Other errors pass.
func lbfgsStopped(err error, warn io.Writer) error {
	switch {
	case err == nil || errors.Is(err, solvers.ErrLineSearch):
		return nil
	case errors.Is(err, solvers.ErrNonFinite), errors.Is(err, solvers.ErrTrialFailed):
		if warn == nil {
			warn = os.Stderr
		}
		fmt.Fprintf(warn, "models: warning: L-BFGS stopped at its best point: %v\n", err)
		return nil
	}
	return err
}
