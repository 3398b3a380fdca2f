package solvers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gpc-dev/gpc/graph"
)

// Objective is what a model implements to be trained by Train (and
// TrainLBFGS). It is a single method so that a model owns all of its graph
// machinery and the loop owns batching, optimisation and failure handling.
type Objective interface {
	// Step evaluates the objective to MINIMISE (e.g. the negative ELBO estimate) on one batch and
	// returns its gradient w.r.t. each param, in params' order.
	//
	// The returned gradient slices are only read until the optimiser step
	// finishes, so a model may return views of its own buffers. A Cholesky
	// failure should be reported by wrapping ErrNotPositiveDefinite; Step may
	// then be called again with the same batch after a jitter increase, so it
	// must not have side effects beyond its caches.
	Step(b Batch) (loss float64, grads [][]float64, err error)
}

// TrainConfig controls Train. The zero value of every optional field is a
// sensible default, so a config usually sets only N, BatchSize, Epochs, Seed
// and Optimizer.
type TrainConfig struct {
	// N is the number of training rows; batches index 0..N-1.
	N int
	// BatchSize is the fixed batch length B. If BatchSize >= N (or <= 0) each
	// epoch is one full batch of N rows with weight 1.
	BatchSize int
	// Epochs is the number of passes over the data; it must be at least 1.
	Epochs int
	// Seed fixes the shuffling (see EpochBatches), making runs reproducible.
	Seed uint64
	// Optimizer applies the updates; it is required (e.g. NewAdam(0.01)).
	Optimizer Optimizer
	// Progress, if non-nil, receives one line per epoch. On a terminal the
	// line is also refreshed in place during the epoch. nil = silent.
	Progress io.Writer
	// Callback, if non-nil, is called after each epoch (including a final
	// epoch cut short by MaxIterations) with that epoch's record. Returning
	// ErrStopTraining ends training successfully; any other error ends it
	// with that error. It is the hook for learning-rate schedules, early
	// stopping and checkpointing.
	Callback func(Epoch) error
	// MaxIterations caps the total number of optimiser steps across epochs
	// (0 = unlimited), possibly ending inside an epoch.
	MaxIterations int
	// MaxJitterIncreases bounds how many times a Cholesky failure may raise
	// the objective's jitter over the whole run: 0 means
	// DefaultMaxJitterIncreases, negative disables retries.
	MaxJitterIncreases int
	// MaxJitter is the largest jitter that will be set (0 = DefaultMaxJitter).
	MaxJitter float64
	// Warnings receives jitter warnings (nil = os.Stderr; use io.Discard to
	// silence). Warnings are not errors, so they go to a separate writer.
	Warnings io.Writer
	// Checkpoint, if non-nil, receives a Snapshot at the end of an epoch,
	// after Callback, so that a run killed later can be resumed (Resume)
	// instead of started over. The Snapshot is the caller's to keep, but
	// for its WriteObjective, which must be used during the call. An
	// error ends training with that error. It is not called after a
	// Callback error or ErrStopTraining: a resumed run would then train on
	// past the point where this one stopped.
	Checkpoint func(*Snapshot) error
	// CheckpointEvery is the least time between checkpoints: one is taken
	// at the end of an epoch once at least this long has passed since
	// training (or this session of it) started or since the last one. 0 =
	// every epoch. Writing a large model's state takes time, which hourly
	// checkpoints of an hours-long fit keep negligible. When ctx is
	// cancelled, a checkpointed run finishes the epoch it is in and takes a
	// checkpoint whatever the time since the last (see Train).
	CheckpointEvery time.Duration
	// Resume, if non-nil, continues the run a Checkpoint saved: params,
	// optimiser and objective state are restored, training goes on at epoch
	// Resume.Epoch+1 with the history and iteration counter carried on
	// (MaxIterations counts the steps before the checkpoint too), and the
	// result is that of the uninterrupted run bit for bit, provided the
	// objective, params and config are built as they were.
	Resume *Snapshot
}

// Epoch records one pass over the data, so callers can plot or test
// convergence without instrumenting their objective.
type Epoch struct {
	// Epoch is the 1-based epoch number.
	Epoch int
	// Loss is the mean of the batch losses in this epoch. Because each batch
	// loss is an unbiased estimate of the full objective, so is the mean
	// (though it mixes parameter values from across the epoch).
	Loss float64
	// Duration is the wall time spent in the epoch's steps.
	Duration time.Duration
	// Steps is the number of optimiser steps taken in this epoch; it is less
	// than the number of batches only for an epoch cut short.
	Steps int
	// Iterations is the cumulative number of steps at the end of the epoch,
	// the same counter used in error messages and by MaxIterations.
	Iterations int
}

// History is the list of epoch records of one training run, oldest first.
type History []Epoch

// Last returns the most recent epoch record, or false if no epoch has run,
// since that is what most callers want to report.
func (h History) Last() (Epoch, bool) {
	if len(h) == 0 {
		return Epoch{}, false
	}
	return h[len(h)-1], true
}

// Losses returns the per-epoch mean losses, convenient for plotting or for
// checking that training decreased the objective.
func (h History) Losses() []float64 {
	out := make([]float64, len(h))
	for i, e := range h {
		out[i] = e.Loss
	}
	return out
}

// Train runs minibatch optimisation of obj over params: each epoch shuffles
// the rows (see EpochBatches), and for every batch calls obj.Step and then
// cfg.Optimizer.Step, then, for a LocalObjective, StepLocal. It is the single loop every model shares, so that
// NaN detection, Cholesky recovery, cancellation and progress reporting
// behave the same everywhere.
//
// With cfg.Checkpoint it hands out a Snapshot at epoch ends, and with
// cfg.Resume it continues from one, ending exactly where an uninterrupted
// run would; both need a Stateful optimiser (and objective, if it has
// local params), checked before the first step.
//
// Iterations are counted from 1 across the whole run. Train stops with an
// error, returning the history so far (including a partial epoch with at
// least one completed step), when:
//   - the loss or any gradient element is NaN or ±Inf (a *NonFiniteError
//     naming the parameter or "objective"; the optimiser is not stepped, so
//     params still hold their last finite values);
//   - ctx is cancelled (checked before every step; the error wraps ctx.Err()).
//     With cfg.Checkpoint the epoch under way is finished first (its
//     callback included) and a checkpoint taken, unless one already holds
//     this point, so that a stopped run (SIGTERM from a scheduler ending a
//     job) loses no work; an epoch that ends the run returns normally;
//   - obj.Step fails, other than a Cholesky failure that can be recovered by
//     raising the jitter (see Jitterer and TrainConfig.MaxJitterIncreases);
//   - the optimiser or the callback fails.
func Train(ctx context.Context, obj Objective, params []Param, cfg TrainConfig) (History, error) {
	if obj == nil {
		return nil, errors.New("solvers: Train: nil Objective")
	}
	if cfg.Optimizer == nil {
		return nil, errors.New("solvers: Train: TrainConfig.Optimizer is nil")
	}
	if cfg.N <= 0 {
		return nil, fmt.Errorf("solvers: Train: TrainConfig.N must be positive, got %d", cfg.N)
	}
	if cfg.Epochs <= 0 {
		return nil, fmt.Errorf("solvers: Train: TrainConfig.Epochs must be positive, got %d", cfg.Epochs)
	}
	if cfg.MaxIterations < 0 {
		return nil, fmt.Errorf("solvers: Train: TrainConfig.MaxIterations must not be negative, got %d", cfg.MaxIterations)
	}
	batchSize := cfg.BatchSize
	if batchSize <= 0 || batchSize >= cfg.N {
		batchSize = cfg.N
	}
	perEpoch := (cfg.N + batchSize - 1) / batchSize
	if cfg.CheckpointEvery < 0 {
		return nil, fmt.Errorf("solvers: Train: TrainConfig.CheckpointEvery must not be negative, got %v", cfg.CheckpointEvery)
	}
	if cfg.Checkpoint != nil || cfg.Resume != nil {
		if err := checkCheckpointable(obj, cfg.Optimizer); err != nil {
			return nil, err
		}
	}

	jit := newJitterPolicy(obj, cfg.MaxJitterIncreases, cfg.MaxJitter, cfg.Warnings)
	local, _ := obj.(LocalObjective)
	if local != nil && local.LocalParams() == 0 {
		local = nil
	}
	var hist History
	iter := 0 // completed steps over the whole run
	first := 1
	if r := cfg.Resume; r != nil {
		if err := restore(r, obj, cfg.Optimizer, params, cfg.Epochs); err != nil {
			return nil, err
		}
		hist, iter, first = slices.Clone(r.History), r.Iterations, r.Epoch+1
		jit.increases = r.JitterIncreases
	}
	prog := newProgress(cfg.Progress, cfg.Epochs, perEpoch, cfg.MaxIterations)
	prog.base = iter
	lastCheckpoint := time.Now()
	savedAt := -1 // the epoch whose end the last checkpoint holds
	if cfg.Resume != nil {
		savedAt = cfg.Resume.Epoch
		// The snapshot's state is in place: let the collector have it (a
		// restored objective state can be gigabytes).
		cfg.Resume = nil
	}
	// draining is the cancellation met mid-epoch by a checkpointed run: the
	// epoch is finished, checkpointed, and then this error returned.
	var draining error
	save := func(epoch int) error {
		s, err := snapshot(obj, cfg.Optimizer, params, epoch, iter, hist, jit.increases)
		if err == nil {
			err = cfg.Checkpoint(s)
		}
		if err != nil {
			return fmt.Errorf("solvers: checkpoint after epoch %d: %w", epoch, err)
		}
		lastCheckpoint, savedAt = time.Now(), epoch
		return nil
	}

	for epoch := first; epoch <= cfg.Epochs; epoch++ {
		if cfg.MaxIterations > 0 && iter >= cfg.MaxIterations {
			break
		}
		batches, err := EpochBatches(cfg.N, batchSize, cfg.Seed, epoch)
		if err != nil {
			return hist, err
		}
		start := time.Now()
		var lossSum float64
		steps := 0
		record := func() Epoch {
			return Epoch{Epoch: epoch, Loss: lossSum / float64(steps), Duration: time.Since(start), Steps: steps, Iterations: iter}
		}
		// fail appends the partial epoch (if any step completed) so the
		// caller can see how far training got before err.
		fail := func(err error) (History, error) {
			prog.abort()
			if steps > 0 {
				hist = append(hist, record())
			}
			return hist, err
		}

		cut := false
		for bi, b := range batches {
			if cfg.MaxIterations > 0 && iter >= cfg.MaxIterations {
				cut = true
				break
			}
			if err := ctx.Err(); err != nil && draining == nil {
				cancelled := fmt.Errorf("solvers: training cancelled in epoch %d after %d iterations: %w", epoch, iter, err)
				switch {
				case cfg.Checkpoint == nil:
					return fail(cancelled)
				case steps == 0: // at an epoch boundary: the state is the last epoch's end
					if iter > 0 && savedAt != epoch-1 {
						if err := save(epoch - 1); err != nil {
							return hist, err
						}
					}
					return hist, cancelled
				}
				draining = fmt.Errorf("solvers: training cancelled in epoch %d after %d iterations, checkpointed at the epoch's end: %w", epoch, iter, err)
			}
			it := iter + 1
			where := fmt.Sprintf("epoch %d, iteration %d", epoch, it)

			var loss float64
			var grads [][]float64
			for {
				loss, grads, err = obj.Step(b)
				if err == nil {
					break
				}
				if herr := jit.handle(err, where); herr != nil {
					return fail(herr)
				}
				// Jitter raised: retry the same batch, as a fresh batch would
				// make the failure depend on the shuffle.
				if cerr := ctx.Err(); cerr != nil && draining == nil {
					return fail(fmt.Errorf("solvers: training cancelled in epoch %d after %d iterations: %w", epoch, iter, cerr))
				}
			}
			if err := checkFinite(loss, params, grads, where); err != nil {
				return fail(err)
			}
			if err := cfg.Optimizer.Step(params, grads); err != nil {
				return fail(fmt.Errorf("solvers: optimiser step at %s: %w", where, err))
			}
			// Finite gradients can still overflow a parameter (a huge learning
			// rate); catching it here keeps NaN out of the next evaluation.
			if err := checkParamsFinite(params, where); err != nil {
				return fail(err)
			}
			if local != nil {
				if err := local.StepLocal(b); err != nil {
					return fail(fmt.Errorf("solvers: local step at %s: %w", where, err))
				}
			}
			iter = it
			steps++
			lossSum += loss
			prog.batch(epoch, bi+1, iter, lossSum/float64(steps))
		}
		if steps == 0 {
			break
		}
		rec := record()
		hist = append(hist, rec)
		prog.epoch(rec)
		if cfg.Callback != nil {
			if err := cfg.Callback(rec); err != nil {
				if errors.Is(err, ErrStopTraining) {
					return hist, nil
				}
				return hist, fmt.Errorf("solvers: callback after epoch %d: %w", epoch, err)
			}
		}
		if cfg.Checkpoint != nil && (draining != nil || time.Since(lastCheckpoint) >= cfg.CheckpointEvery) {
			if err := save(epoch); err != nil {
				return hist, err
			}
		}
		if cut {
			break
		}
		if draining != nil && epoch < cfg.Epochs && (cfg.MaxIterations == 0 || iter < cfg.MaxIterations) {
			return hist, draining
		}
	}
	return hist, nil
}

// checkFinite validates one evaluation before it reaches the optimiser,
// because Adam's moment estimates would carry a single NaN forever.
func checkFinite(loss float64, params []Param, grads [][]float64, where string) error {
	if isNonFinite(loss) {
		return &NonFiniteError{Quantity: "objective", Index: -1, Value: loss, Where: where}
	}
	if err := checkGradShapes(params, grads); err != nil {
		return fmt.Errorf("%w at %s", err, where)
	}
	for i, g := range grads {
		if graph.AllFinite(g) {
			continue
		}
		for j, v := range g {
			if isNonFinite(v) {
				return &NonFiniteError{Quantity: "gradient", Param: nameOrIndex(params, i), Index: j, Value: v, Where: where}
			}
		}
	}
	return nil
}

func checkParamsFinite(params []Param, where string) error {
	for i, p := range params {
		if graph.AllFinite(p.Data) {
			continue
		}
		for j, v := range p.Data {
			if isNonFinite(v) {
				return &NonFiniteError{Quantity: "parameter", Param: nameOrIndex(params, i), Index: j, Value: v, Where: "update at " + where}
			}
		}
	}
	return nil
}

// nameOrIndex gives anonymous params a usable label in NonFiniteError.Param.
func nameOrIndex(params []Param, i int) string {
	if params[i].Name != "" {
		return params[i].Name
	}
	return fmt.Sprintf("#%d", i)
}

func isNonFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
