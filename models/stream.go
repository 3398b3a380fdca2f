package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/solvers"
)

// RowSource is training data read by row index, e.g. a *datasets.RowStore
// restricted to its training rows (TrainRows). FitStream reads only a
// minibatch at a time from it, so its rows need never be in memory at once.
type RowSource interface {
	// N is the number of training rows; Read takes indices 0..N−1.
	N() int
	// D is the number of features per row.
	D() int
	// C is the number of classes; labels are 0..C−1.
	C() int
	// Read fills x (len(idx)·D values, row-major) and y (len(idx) labels)
	// with the training rows idx, in that order; indices may repeat.
	Read(idx []int, x []float64, y []int) error
}

// StreamInitRows is the size of the in-memory sample FitStream initialises
// the model from (k-means inducing inputs, the length-scale heuristic):
// min(N, StreamInitRows) distinct training rows, 8·(D+1) bytes each, held
// only during initialisation.
const StreamInitRows = 20000

// FitStream trains the model on the rows of src with memory that does not
// grow with src.N(): the SVGP paper's stochastic optimisation on data too
// large to hold (its airline delays). It is Fit's svi engine with the data
// set replaced by a minibatch buffer:
//
//   - the parameters are initialised, as Fit initialises them, from an
//     in-memory sample of min(N, StreamInitRows) distinct training rows
//     (all rows, in order, when N ≤ StreamInitRows, so that a small source
//     starts exactly where Fit on the same rows starts);
//   - the model's N is the source's N, and every step draws B = min(batch,
//     N) row indices uniformly with replacement (a stream seeded by
//     Options.Train.Seed; O(B) memory), reads them into a B-row buffer and
//     takes one optimiser step (Adam or Adadelta, Options.Train.Optimizer) on
//     the negative ELBO estimate KL − (N/B)·Σ_batch E_q log p(y|f), the
//     unbiased estimate Fit's minibatches also give (Fit shuffles rows
//     without replacement within an epoch; both are the paper's "mini-batches
//     of the data at random", ambiguity A16 of the digest);
//   - an "epoch" is ⌈N/B⌉ steps; Options.Train.Epochs of them are run
//     (cfg.MaxIterations caps the total steps), the freeze schedule
//     (FreezeHyper, FreezeZ) counts them, and cfg.Callback and cfg.Progress
//     see one record per epoch as with Fit (solvers.ErrStopTraining from the
//     callback ends training successfully);
//   - a Cholesky failure raises the posterior's jitter along
//     solvers.NextJitter and retries the same batch, at most
//     solvers.DefaultMaxJitterIncreases times in the run, with a warning to
//     cfg.Warnings (nil: os.Stderr), as solvers.Train does; a non-finite loss,
//     gradient or updated parameter stops training with a
//     *solvers.NonFiniteError (the parameters keep their last finite values
//     only for the loss and gradient cases, as in Train); ctx is checked
//     before every step and its error returned, wrapped, when cancelled.
//
// The objective is the svi engine's, unchanged, so its gradient check is
// the existing one. FitStream refuses what needs the whole data set or
// per-row state: L-BFGS (full batch at every iteration), the "full"
// posterior family (Z = X), engines other than svi, input models with
// per-row local parameters or given per-row noise, and a source whose C
// the likelihood is not defined for (a binary likelihood and C ≠ 2).
//
// After FitStream the model predicts, saves and reports as after Fit; it
// keeps no training state, so Continue is not available (it needs the
// training rows as a data set).
func (m *Model) FitStream(ctx context.Context, src RowSource, cfg FitConfig) error {
	if src == nil {
		return errors.New("models: FitStream: nil row source")
	}
	st, ok := m.engine.(Streamer)
	if !ok {
		return fmt.Errorf("models: FitStream: model %s: %w; use Fit", m.Name(), m.CanStream())
	}
	return st.FitStream(ctx, m, src, cfg)
}

// fitStream is the svi engine's FitStream.
func (m *Model) fitStream(ctx context.Context, src RowSource, cfg FitConfig) error {
	n, d, c := src.N(), src.D(), src.C()
	t := m.Opts.Train
	switch {
	case cfg.Checkpoint != nil:
		return errors.New("models: FitStream does not checkpoint; FitConfig.Checkpoint is for Fit")
	case n <= 0 || d <= 0:
		return fmt.Errorf("models: FitStream: the row source has %d rows of %d features; need at least one of each", n, d)
	case t.Optimizer == "lbfgs":
		return errors.New("models: FitStream takes minibatch steps and cannot use the lbfgs optimizer, which needs the full batch at every iteration (and so every row in memory); use adam or adadelta, or load the rows and call Fit")
	case m.Opts.Posterior.Family == "full":
		return errors.New("models: FitStream cannot fit the full posterior family (Z = X needs every training row in memory); use the sparse family")
	case m.UsesGivenNoise():
		return errors.New("models: FitStream cannot fit a model that reads given input-noise variances per row; a RowSource carries inputs and labels only")
	case m.Opts.Inputs.Standardize:
		return errors.New("models: FitStream does not standardise inputs (the statistics need a pass over every row); standardise the source's rows (datasets.RowStore does) and set Options.Inputs.NoStandardize")
	}
	if err := m.CheckClasses(c); err != nil {
		return fmt.Errorf("models: FitStream: row source: %w", err)
	}
	warn := cfg.Warnings
	if warn == nil {
		warn = os.Stderr
	}
	m.fit, m.meanSamples, m.scaler, m.engineState, m.report = nil, nil, nil, nil, nil

	// Initialise from a sample; it is garbage once the buffer is filled.
	sample, err := streamSample(src, min(n, StreamInitRows), t.Seed)
	if err != nil {
		return err
	}
	if err := m.initialize(sample, warn); err != nil {
		return err
	}
	if len(m.inputs.Locals()) > 0 {
		return fmt.Errorf("models: FitStream cannot fit the %s input model: it has per-row local parameters, state that grows with N; use Fit", m.inputs.Name())
	}
	m.N = n
	b := min(t.Batch, n)
	buf := &datasets.Dataset{Name: "stream-batch", N: b, D: d, C: c, X: make([]float64, b*d), Y: make([]int, b)}
	for r := range b {
		i := r % sample.N
		copy(buf.X[r*d:(r+1)*d], sample.Row(i))
		buf.Y[r] = sample.Y[i]
	}
	sample = nil
	obj, err := m.newObjectiveBatch(buf, b)
	if err != nil {
		return err
	}
	defer obj.Close()
	if obj.Batch() != b {
		return fmt.Errorf("models: internal error: FitStream's objective has batch %d, want %d", obj.Batch(), b)
	}
	var opt solvers.Optimizer
	switch t.Optimizer {
	case "adadelta":
		opt = solvers.NewAdadelta(t.LR)
	default:
		opt = solvers.NewAdam(t.LR)
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
	defer obj.Freeze(nil)

	batch := solvers.Batch{Index: make([]int, b), Weight: make([]float64, b), Real: b}
	w := float64(n) / float64(b)
	for r := range b {
		batch.Index[r], batch.Weight[r] = r, w
	}
	params := obj.SolverParams()
	rng := rand.New(rand.NewPCG(t.Seed, 0x57e4a))
	idx := make([]int, b)
	perEpoch := (n + b - 1) / b
	jitterUps := 0
	iter := 0
	start := time.Now()
	// The stopping rule as Fit's minibatch loop applies it (see fitSVI).
	frozen := max(t.FreezeHyper, t.FreezeZ)
	plateau := &solvers.Plateau{Tol: t.epochTol()}
	var hist solvers.History
	report := func(reason string) {
		tail := hist
		for len(tail) > 0 && tail[0].Epoch <= frozen {
			tail = tail[1:]
		}
		m.report = minibatchReport(t.Optimizer, t.Stop, tail, t.Epochs, reportTol(t.Tolerance, DefaultEpochTol), reason)
		m.report.Iterations = len(hist)
		m.report.Converged = m.report.Converged || reason == "converged"
		m.report.warnUnconverged(warn, m.Name())
	}
	for epoch := 1; epoch <= t.Epochs; epoch++ {
		if cfg.MaxIterations > 0 && iter >= cfg.MaxIterations {
			break
		}
		t0 := time.Now()
		var lossSum float64
		steps := 0
		for range perEpoch {
			if cfg.MaxIterations > 0 && iter >= cfg.MaxIterations {
				break
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("models: FitStream cancelled in epoch %d after %d iterations: %w", epoch, iter, err)
			}
			where := fmt.Sprintf("epoch %d, iteration %d", epoch, iter+1)
			for r := range idx {
				idx[r] = rng.IntN(n)
			}
			if err := src.Read(idx, buf.X, buf.Y); err != nil {
				return fmt.Errorf("models: FitStream: reading the rows of %s: %w", where, err)
			}
			for r, y := range buf.Y {
				if y < 0 || y >= c {
					return fmt.Errorf("models: FitStream: row source gave label %d for row %d at %s; want 0..%d", y, idx[r], where, c-1)
				}
			}
			obj.SetData(buf)
			var loss float64
			var grads [][]float64
			for {
				loss, grads, err = obj.Step(batch)
				if err == nil {
					break
				}
				if err := streamJitter(obj, err, &jitterUps, where, warn); err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("models: FitStream cancelled in epoch %d after %d iterations: %w", epoch, iter, err)
				}
			}
			if err := streamFinite(loss, params, grads, where); err != nil {
				return err
			}
			if err := opt.Step(params, grads); err != nil {
				return fmt.Errorf("models: FitStream: optimiser step at %s: %w", where, err)
			}
			for i, p := range params {
				for j, v := range p.Data {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						return &solvers.NonFiniteError{Quantity: "parameter", Param: paramName(params, i), Index: j, Value: v, Where: "update at " + where}
					}
				}
			}
			iter++
			steps++
			lossSum += loss
		}
		if steps == 0 {
			break
		}
		rec := Epoch{Epoch: epoch, Loss: lossSum / float64(steps), Duration: time.Since(t0), Steps: steps, Iterations: iter}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "epoch %d/%d  elbo %.4f  %s  total %s\n", epoch, t.Epochs, -rec.Loss,
				rec.Duration.Round(time.Millisecond), time.Since(start).Round(time.Second))
		}
		obj.Freeze(frozenFor(epoch))
		hist = append(hist, rec)
		if cfg.Callback != nil {
			if err := cfg.Callback(rec); err != nil {
				if errors.Is(err, solvers.ErrStopTraining) {
					report("stopped by the callback")
					return nil
				}
				return fmt.Errorf("models: FitStream: callback after epoch %d: %w", epoch, err)
			}
		}
		if epoch > frozen {
			plateau.Add(rec.Loss)
		}
		if plateau.Converged() {
			report("converged")
			return nil
		}
	}
	if len(hist) < t.Epochs {
		report("iteration limit")
	} else {
		report("cap")
	}
	return nil
}

// streamJitter handles a failed objective evaluation the way solvers.Train
// does: a Cholesky failure raises the jitter one rung of solvers.NextJitter
// (at most solvers.DefaultMaxJitterIncreases times per run) and returns nil
// so the same batch is retried; anything else is returned.
func streamJitter(obj interface {
	Jitter() float64
	SetJitter(float64) error
}, err error, ups *int, where string, warn io.Writer) error {
	if !errors.Is(err, solvers.ErrNotPositiveDefinite) {
		return fmt.Errorf("models: FitStream at %s: %w", where, err)
	}
	old := obj.Jitter()
	if *ups >= solvers.DefaultMaxJitterIncreases {
		return fmt.Errorf("models: FitStream: Cholesky failed at %s with jitter %g after %d jitter increases (limit %d): %w",
			where, old, *ups, solvers.DefaultMaxJitterIncreases, err)
	}
	next, ok := solvers.NextJitter(old, 0)
	if !ok {
		return fmt.Errorf("models: FitStream: Cholesky failed at %s with jitter %g; raising it to %g would exceed the limit %g: %w",
			where, old, next, solvers.DefaultMaxJitter, err)
	}
	if serr := obj.SetJitter(next); serr != nil {
		return fmt.Errorf("models: FitStream: Cholesky failed at %s and setting jitter %g failed: %v: %w", where, next, serr, err)
	}
	*ups++
	fmt.Fprintf(warn, "models: warning: Cholesky failed at %s; jitter raised to %g\n", where, next)
	return nil
}

// streamFinite rejects a non-finite loss or gradient before it reaches the
// optimiser (whose moments would carry it forever), as solvers.Train does.
func streamFinite(loss float64, params []solvers.Param, grads [][]float64, where string) error {
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return &solvers.NonFiniteError{Quantity: "objective", Index: -1, Value: loss, Where: where}
	}
	if len(grads) != len(params) {
		return fmt.Errorf("models: internal error: %d gradients for %d parameters at %s", len(grads), len(params), where)
	}
	for i, g := range grads {
		for j, v := range g {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return &solvers.NonFiniteError{Quantity: "gradient", Param: paramName(params, i), Index: j, Value: v, Where: where}
			}
		}
	}
	return nil
}

func paramName(params []solvers.Param, i int) string {
	if params[i].Name != "" {
		return params[i].Name
	}
	return fmt.Sprintf("#%d", i)
}

// streamSample reads k distinct training rows of src into memory: all rows
// in order when k = N, else a uniform sample drawn by Floyd's algorithm
// (O(k) memory), read in increasing row order.
func streamSample(src RowSource, k int, seed uint64) (*datasets.Dataset, error) {
	n, d := src.N(), src.D()
	idx := make([]int, 0, k)
	if k >= n {
		for i := range n {
			idx = append(idx, i)
		}
	} else {
		rng := rand.New(rand.NewPCG(seed, 0x1417))
		seen := make(map[int]struct{}, k)
		for j := n - k; j < n; j++ {
			v := rng.IntN(j + 1)
			if _, dup := seen[v]; dup {
				v = j
			}
			seen[v] = struct{}{}
			idx = append(idx, v)
		}
		slices.Sort(idx)
	}
	ds := &datasets.Dataset{Name: "stream-sample", N: len(idx), D: d, C: src.C(), X: make([]float64, len(idx)*d), Y: make([]int, len(idx))}
	if err := src.Read(idx, ds.X, ds.Y); err != nil {
		return nil, fmt.Errorf("models: FitStream: reading the %d-row initialisation sample: %w", len(idx), err)
	}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("models: FitStream: initialisation sample: %w", err)
	}
	return ds, nil
}

// trainMarkStride is the spacing of TrainRows' checkpoints: the store row
// of every trainMarkStride-th training row is kept, so mapping a training
// index to its store row scans fewer than trainMarkStride/(1−test fraction)
// store rows (split-function calls, each a hash; no I/O).
const trainMarkStride = 64

// storeRows is TrainRows' RowSource.
type storeRows struct {
	s      *datasets.RowStore
	isTest func(int) bool
	std    bool
	n      int
	// marks[k] is the store row of training row k·trainMarkStride.
	marks []int
	// rows is Read's scratch of store rows.
	rows []int
}

// TrainRows returns the training rows of s — those with !isTest(row); nil
// isTest means every row — as a RowSource whose index j is the j-th
// training row in store order, exactly: Read is deterministic, so the
// initialisation sample and the minibatches of FitStream are real training
// rows, and no test row is ever read. With standardize, features are
// standardised with the store's training statistics (RowStore.Read).
//
// Memory: instead of an index table of every training row (4 bytes a row as
// []int32, against 8·(D+1) bytes a row for the data themselves), it keeps
// the store row of every 64th training row (8 bytes per 64 rows, 0.125 bytes
// a row: 740 KB for the paper's 5.9 M flights, 26 KB for the 208 000
// training rows of the 231 083-row stand-in). Finding row j starts at the checkpoint before it and
// walks forward through isTest, fewer than 64/(1 − test fraction) calls of
// the split function (HashSplit: a hash each, no I/O), microseconds per row
// against the milliseconds of a training step. Construction calls isTest
// once per store row. (A rejection sampler — draw store rows uniformly,
// skip test rows — would need no table at all, but Read would then sample
// rather than index, so the in-memory initialisation sample and tests
// could not name rows.)
//
// The source is not safe for concurrent Reads (it reuses a scratch
// slice); the store must stay open while it is used.
func TrainRows(s *datasets.RowStore, isTest func(int) bool, standardize bool) (RowSource, error) {
	if s == nil {
		return nil, errors.New("models: TrainRows: nil row store")
	}
	r := &storeRows{s: s, isTest: isTest, std: standardize}
	if isTest == nil {
		r.n = s.N()
	} else {
		for i := range s.N() {
			if isTest(i) {
				continue
			}
			if r.n%trainMarkStride == 0 {
				r.marks = append(r.marks, i)
			}
			r.n++
		}
	}
	if r.n == 0 {
		return nil, fmt.Errorf("models: TrainRows: row store %s has no training rows (all %d are test rows)", s.Path(), s.N())
	}
	return r, nil
}

func (r *storeRows) N() int { return r.n }
func (r *storeRows) D() int { return r.s.D() }
func (r *storeRows) C() int { return r.s.C() }

// storeRow maps training index j to its store row.
func (r *storeRows) storeRow(j int) int {
	if r.isTest == nil {
		return j
	}
	row := r.marks[j/trainMarkStride]
	for skip := j % trainMarkStride; ; row++ {
		if r.isTest(row) {
			continue
		}
		if skip == 0 {
			return row
		}
		skip--
	}
}

// Read implements RowSource.
func (r *storeRows) Read(idx []int, x []float64, y []int) error {
	if cap(r.rows) < len(idx) {
		r.rows = make([]int, len(idx))
	}
	rows := r.rows[:len(idx)]
	for k, j := range idx {
		if j < 0 || j >= r.n {
			return fmt.Errorf("models: training row %d out of range [0,%d) of row store %s", j, r.n, r.s.Path())
		}
		rows[k] = r.storeRow(j)
	}
	return r.s.Read(rows, x, y, r.std)
}
