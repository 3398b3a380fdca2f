package experiments

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// The SVGP classification paper's large-data experiments (Hensman,
// Matthews & Ghahramani 2015, E4 and E5), trained by stochastic
// optimisation on minibatches:
//
//   - family airline: the US flight-delay stand-in (datasets.OpenAirline:
//     vega-datasets' flights-3m.csv as an on-disk row store with a hashed
//     train/test split), trained by models.Model.FitStream from the store's
//     training rows, so memory stays flat in N as the paper's 5.9 M rows
//     require, and scored on the test rows read in chunks. The same family
//     runs the additive-noise paper's airline figure (Liu et al. 2019, Fig.
//     3): data set airline-3class labels early / on time / delayed, and
//     setting appendix-d trains on that paper's Appendix D settings with
//     the hold-out curve in Result.Trace (figure liu_fig3, additive.go);
//   - family mnist_oddeven: MNIST odd vs even digits, trained in memory by
//     the svi engine (Fit) like every other in-memory family.
func init() {
	p := Paper{
		Name:     "SVGP classification (large data)",
		Families: map[string]Family{"airline": {Run: airlineRun, Reads: minSteps}, "mnist_oddeven": {Run: oddEvenRun, Reads: slices.Concat(modelSettings, minSteps)}},
		Validate: validateLarge,
	}
	if err := RegisterPaper(p); err != nil {
		panic(err)
	}
}

// largeDatasets are the data set names each large-data family accepts.
var largeDatasets = map[string][]string{"airline": {"airline", "airline-3class"}, "mnist_oddeven": {"mnist"}}

// airlineLabels maps the airline family's data set names to their labels:
// "airline" is the SVGP paper's delayed-vs-not task, "airline-3class" the
// additive-noise paper's early / on time / delayed (Fig. 3). The labelling
// is a data set rather than a setting because it changes the data, and a
// data set name already keeps the runs of the two apart.
var airlineLabels = map[string]datasets.AirlineLabels{
	"airline":        datasets.AirlineDelayed,
	"airline-3class": datasets.AirlineThreeClass,
}

// The airline family's settings. airlineDefault trains with the spec's
// options as they are (the SVGP paper's E5); airlineAppendixD puts them on
// the additive-noise paper's Appendix D settings (models.AppendixD), trains
// for an exact number of optimiser steps and records the hold-out curve in
// Result.Trace, as the paper's families do (its Fig. 3).
const (
	airlineDefault   = "default"
	airlineAppendixD = "appendix-d"
)

// validateLarge checks the data set names, that the airline family has a
// test part, and that its methods can be streamed (minibatch svi).
func validateLarge(s *Spec) error {
	known := largeDatasets[s.Family]
	for i, d := range s.Datasets {
		if !slices.Contains(known, d) {
			return s.errAt([]any{"datasets", i}, "unknown data set %q for family %s (known: %s)", d, s.Family, strings.Join(known, ", "))
		}
	}
	for i, m := range s.Methods {
		if m.Variant != "" {
			return s.errAt([]any{"methods", i, "variant"}, "method %s: variant %q does not apply to family %s", m.Name, m.Variant, s.Family)
		}
	}
	if s.Family != "airline" {
		return nil
	}
	if s.Protocol.TestFraction <= 0 {
		return s.errAt([]any{"protocol", "test_fraction"}, "airline needs protocol.test_fraction > 0 (the hashed hold-out share)")
	}
	appendixD := false
	for i, st := range s.Settings {
		if (st.Name != airlineDefault && st.Name != airlineAppendixD) || st != (Setting{Name: st.Name}) {
			return s.errAt([]any{"settings", i}, "airline setting %q: want a name only, %s (the spec's training settings) or %s (the additive-noise paper's Appendix D settings)", st.Name, airlineDefault, airlineAppendixD)
		}
		appendixD = appendixD || st.Name == airlineAppendixD
	}
	for i, m := range s.Methods {
		opt := s.Training.Optimizer
		if m.Training != nil && slices.Contains(s.keysAt("methods", i, "training"), "optimizer") {
			opt = m.Training.Optimizer
		}
		if opt == "lbfgs" {
			return s.errAt([]any{"methods", i}, "method %s: the airline family streams minibatches from disk (models.FitStream) and cannot use lbfgs; use adam or adadelta", m.Name)
		}
		mod, err := models.New(methodOptions(m))
		if err != nil {
			continue // reported by the generic validation
		}
		if err := mod.CanStream(); err != nil || mod.Opts.Posterior.Family == "full" {
			return s.errAt([]any{"methods", i}, "method %s: the airline family streams minibatches from disk (sparse models whose engine streams); %s is fitted by %s with the %s family", m.Name, mod.Name(), mod.Opts.Inference, mod.Opts.Posterior.Family)
		}
		// A likelihood for the wrong number of classes would fail only once
		// the row store is built, after minutes of other runs.
		for _, d := range s.Datasets {
			if err := mod.CheckClasses(airlineLabels[d].Classes()); err != nil {
				return s.errAt([]any{"methods", i}, "method %s on data set %s (%d classes): %v", m.Name, d, airlineLabels[d].Classes(), err)
			}
		}
		if k := s.trainingFor(m).Kernel; appendixD && k != "" && k != kernels.Default {
			return s.errAt([]any{"methods", i}, "method %s: kernel %q; setting %s builds Appendix D's RBF (leave kernel unset or se)", m.Name, k, airlineAppendixD)
		}
	}
	return nil
}

// Airline scoring sizes: test rows are predicted at most scoreChunk at a
// time; the learning curve uses a fixed evenly spread subsample of at most
// curveRows test rows, evaluated at about curvePoints epochs.
const (
	scoreChunk  = 10000
	curveRows   = 5000
	curvePoints = 10
)

// airlineRun trains one method on one hashed split of the airline stand-in
// with FitStream and scores it on the split's test rows. protocol.max_train
// and max_test (quick profiles) keep an evenly spaced subset of the
// training and test rows in store order, which is date order, so a subset
// spans the three months rather than their first days. The data set name
// chooses the labels (airlineLabels); setting appendix-d hands the run to
// airlineAppendixDRun after the data are opened.
func airlineRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	b := r.Budget
	seed := e.spec.seedFor(r.Split)
	labels, ok := airlineLabels[r.Dataset]
	if !ok {
		return nil, fmt.Errorf("airline: unknown data set %q", r.Dataset)
	}
	store, isTest, err := datasets.OpenAirlineLabels(e.dataDir, seed, b.TestFraction, labels)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	full, err := models.TrainRows(store, isTest, true)
	if err != nil {
		return nil, err
	}
	src := spreadSource(full, b.MaxTrain)
	nTrainAll, nTestAll := store.Count(isTest)
	testRows := spreadRows(store.Indices(isTest, true), nTestAll, b.MaxTest)
	nTest := nTestAll
	if b.MaxTest > 0 {
		nTest = min(nTest, b.MaxTest)
	}
	if nTest == 0 {
		return nil, fmt.Errorf("airline: the split (seed %d, test fraction %g) has no test rows", seed, b.TestFraction)
	}
	dataNote := func(scored int) string {
		return fmt.Sprintf("data: %s, %d training rows (of %d) and %d test rows (of %d) of a hashed %g split (seed %d); features month, day, departure hour, distance, standardised on the training rows; label %s",
			datasets.AirlineFile, src.N(), nTrainAll, scored, nTestAll, b.TestFraction, seed, labels)
	}
	switch r.Setting.Name {
	case airlineAppendixD:
		return airlineAppendixDRun(ctx, r, store, src, testRows, seed, dataNote)
	case airlineDefault:
	default:
		return nil, fmt.Errorf("airline: unknown setting %q", r.Setting.Name)
	}

	o := modelOptions(r, src.N(), seed+1)
	o.Train.Epochs = epochsWithFloor(o.Train.Epochs, b.MinSteps, src.N(), o.Train.Batch)
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}

	// The learning curve's fixed test subsample, held in memory.
	var curveIdx []int
	for i := range spreadRows(testRows, nTest, curveRows) {
		curveIdx = append(curveIdx, i)
	}
	curveSet, err := store.Sample(curveIdx, true)
	if err != nil {
		return nil, err
	}
	lc := newCurve(m, curveSet, o.Train.Epochs)
	cfg := models.FitConfig{Warnings: io.Discard, Callback: lc.callback}
	t0 := time.Now()
	if err := m.FitStream(ctx, src, cfg); err != nil {
		return nil, err
	}
	secs := (time.Since(t0) - lc.evalTime).Seconds()
	epochs := lc.epochs

	// Score every selected test row, scoreChunk rows at a time.
	d, c := store.D(), store.C()
	x, y := make([]float64, 0, scoreChunk*d), make([]int, 0, scoreChunk)
	chunk := make([]int, 0, scoreChunk)
	var sumErr, sumNLL float64
	conf := make([][]float64, c)
	for k := range conf {
		conf[k] = make([]float64, c)
	}
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		x, y = x[:len(chunk)*d], y[:len(chunk)]
		if err := store.Read(chunk, x, y, true); err != nil {
			return err
		}
		p, err := m.Predict(x, len(chunk), nil)
		if err != nil {
			return err
		}
		nll, errs := models.PointLosses(p, y, c)
		for i := range y {
			sumNLL += nll[i]
			sumErr += errs[i]
			conf[argmax(p[i*c:(i+1)*c])][y[i]]++
		}
		chunk = chunk[:0]
		return nil
	}
	scored := 0
	for i := range testRows {
		chunk = append(chunk, i)
		scored++
		if len(chunk) == scoreChunk {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	res := &Result{
		Error: sumErr / float64(scored), NLL: sumNLL / float64(scored), Seconds: secs, Epochs: epochs,
		NTrain: src.N(), NTest: scored, D: d, C: c, Inducing: m.Opts.Posterior.Inducing, Confusion: conf,
	}
	if epochs > 0 {
		res.SecondsPerEpoch = secs / float64(epochs)
	}
	res.ParamGroups = m.ParamCount()
	for _, v := range res.ParamGroups {
		res.Params += v
	}
	res.Notes = []string{
		dataNote(scored),
		fmt.Sprintf("streamed: FitStream, batch %d drawn with replacement, %d steps per epoch, training time excludes the learning curve (%.1f s)",
			min(o.Train.Batch, src.N()), (src.N()+min(o.Train.Batch, src.N())-1)/min(o.Train.Batch, src.N()), lc.evalTime.Seconds()),
		lc.note(),
	}
	return res, nil
}

// airlineAppendixDRun is setting appendix-d of the airline family, the
// additive-noise paper's Figure 3 protocol on the stand-in:
//
//   - model: the spec's options on Appendix D's settings (models.AppendixD:
//     k-means Z and one kernel shared by the latent functions, RBF started
//     at ℓ = 0.1·√d and σ² = 5, jitter 1e-6, Adam), streamed by FitStream
//     for exactly liuIterations optimiser steps, budgeted as liu_uci's;
//   - hold-out: every selected test row, held in memory (23 330 rows × 4
//     features at the stand-in's 10%), so that the curve and the final
//     score are on the same rows and the curve ends at the result;
//   - curve: the hold-out error and NLL every ⌈steps/liuCurvePoints⌉ steps
//     (at the end of the epoch that reaches it, FitStream reporting per
//     epoch) and after the last, in Result.Trace with Eval the optimiser
//     step, scoring time kept off Seconds — liu_delta's trace, which the
//     paper's figures read;
//   - scores: probabilities clipped to [1e-12, 1 − 1e-12] and renormalised
//     before scoring, as the paper's other families do (Bayesian
//     Benchmarks), so a Monte Carlo zero of GPCsm cannot make the NLL
//     infinite.
func airlineAppendixDRun(ctx context.Context, r Run, store *datasets.RowStore, src models.RowSource, testRows func(func(int) bool), seed uint64, dataNote func(int) string) (*Result, error) {
	n := src.N()
	o := models.AppendixD(modelOptions(r, n, seed+1))
	iters := liuIterations(r.Budget, n)
	o.Train.Epochs = models.EpochsFor(iters, n, o.Train.Batch)
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}
	var idx []int
	for i := range testRows {
		idx = append(idx, i)
	}
	test, err := store.Sample(idx, true)
	if err != nil {
		return nil, err
	}
	score := func() ([]float64, models.Scores, error) {
		p, err := predictChunked(ctx, m, test)
		if err != nil {
			return nil, models.Scores{}, err
		}
		p = ClipProbabilities(p, test.C, 1e-12)
		return p, models.Score(p, test.Y, test.C), nil
	}

	every := max(1, (iters+liuCurvePoints-1)/liuCurvePoints)
	next := every
	epochs := 0
	var trace []TracePoint
	var scoring time.Duration
	t0 := time.Now()
	cfg := models.FitConfig{Warnings: io.Discard, MaxIterations: iters, Callback: func(ep models.Epoch) error {
		epochs++
		if ep.Iterations < next {
			return nil
		}
		for next <= ep.Iterations {
			next += every
		}
		s0 := time.Now()
		_, sc, err := score()
		if err != nil {
			return err
		}
		trace = append(trace, TracePoint{Eval: ep.Iterations, Seconds: (s0.Sub(t0) - scoring).Seconds(), NLL: sc.NLL, Error: sc.Error})
		scoring += time.Since(s0)
		return nil
	}}
	if err := m.FitStream(ctx, src, cfg); err != nil {
		return nil, err
	}
	secs := (time.Since(t0) - scoring).Seconds()
	probs, sc, err := score()
	if err != nil {
		return nil, err
	}
	if len(trace) == 0 || trace[len(trace)-1].Eval < iters {
		trace = append(trace, TracePoint{Eval: iters, Seconds: secs, NLL: sc.NLL, Error: sc.Error})
	}
	res := &Result{
		Error: sc.Error, NLL: sc.NLL, Seconds: secs, Epochs: epochs, Trace: trace,
		NTrain: n, NTest: test.N, D: test.D, C: test.C, Inducing: m.Opts.Posterior.Inducing,
		Confusion: confusion(probs, test.Y, test.C),
	}
	if epochs > 0 {
		res.SecondsPerEpoch = secs / float64(epochs)
	}
	res.ParamGroups = m.ParamCount()
	for _, v := range res.ParamGroups {
		res.Params += v
	}
	counts := make([]int, test.C)
	for _, y := range test.Y {
		counts[y]++
	}
	batch := min(o.Train.Batch, n)
	res.Notes = []string{
		dataNote(test.N),
		fmt.Sprintf("hold-out rows per class %v, majority-class error %.4f", counts, 1-float64(slices.Max(counts))/float64(test.N)),
		fmt.Sprintf("streamed: FitStream on Appendix D settings, batch %d drawn with replacement, %d optimiser steps (%d per epoch); hold-out scored at the first epoch end at or after each multiple of %d steps and after the last, kept off the training time (%.1f s)",
			batch, iters, (n+batch-1)/batch, every, scoring.Seconds()),
	}
	if a, ok := m.Likelihood().(*likelihoods.Additive); ok {
		res.Notes = append(res.Notes, fmt.Sprintf(liuDeltaNote, a.DeltaValue()))
	}
	return res, nil
}

// predictChunked predicts ds at most scoreChunk rows at a time, so that
// the model's per-row intermediates (K_xz and the per-class products) stay
// bounded whatever the size of the hold-out.
func predictChunked(ctx context.Context, m *models.Model, ds *datasets.Dataset) ([]float64, error) {
	out := make([]float64, 0, ds.N*ds.C)
	for lo := 0; lo < ds.N; lo += scoreChunk {
		hi := min(lo+scoreChunk, ds.N)
		p, err := m.PredictContext(ctx, ds.X[lo*ds.D:hi*ds.D], hi-lo, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

// curve records a hold-out learning curve during training: error and NLL
// on a fixed in-memory test subsample after about curvePoints evenly
// spaced epochs and the last, for Result.Notes.
type curve struct {
	m        *models.Model
	ds       *datasets.Dataset
	total    int
	every    int
	epochs   int
	points   []string
	evalTime time.Duration
}

func newCurve(m *models.Model, ds *datasets.Dataset, epochs int) *curve {
	return &curve{m: m, ds: ds, total: epochs, every: max(1, epochs/curvePoints)}
}

// callback is a models.FitConfig.Callback; it counts the epochs run.
func (c *curve) callback(ep models.Epoch) error {
	c.epochs++
	if ep.Epoch%c.every != 0 && ep.Epoch != c.total {
		return nil
	}
	t0 := time.Now()
	defer func() { c.evalTime += time.Since(t0) }()
	p, err := c.m.Predict(c.ds.X, c.ds.N, nil)
	if err != nil {
		return err
	}
	sc := models.Score(p, c.ds.Y, c.ds.C)
	c.points = append(c.points, fmt.Sprintf("%d:%.4f/%.4f", ep.Epoch, sc.Error, sc.NLL))
	return nil
}

func (c *curve) note() string {
	return fmt.Sprintf("hold-out curve on %d test rows, epoch:error/nll: %s", c.ds.N, strings.Join(c.points, " "))
}

// spreadSource keeps k training rows of src evenly spaced in its order
// (row j → ⌊j·N/k⌋); k ≤ 0 or k ≥ N keeps src.
func spreadSource(src models.RowSource, k int) models.RowSource {
	if k <= 0 || k >= src.N() {
		return src
	}
	return &spread{RowSource: src, k: k}
}

type spread struct {
	models.RowSource
	k   int
	buf []int
}

func (s *spread) N() int { return s.k }

func (s *spread) Read(idx []int, x []float64, y []int) error {
	s.buf = s.buf[:0]
	n := s.RowSource.N()
	for _, j := range idx {
		if j < 0 || j >= s.k {
			return fmt.Errorf("airline: training row %d out of range [0,%d)", j, s.k)
		}
		s.buf = append(s.buf, int(int64(j)*int64(n)/int64(s.k)))
	}
	return s.RowSource.Read(s.buf, x, y)
}

// spreadRows yields k of the n rows of seq evenly spaced (ordinal t is kept
// when ⌊(t+1)k/n⌋ > ⌊tk/n⌋); k ≤ 0 or k ≥ n yields them all.
func spreadRows(seq func(func(int) bool), n, k int) func(func(int) bool) {
	if k <= 0 || k >= n {
		return seq
	}
	return func(yield func(int) bool) {
		t := 0
		for i := range seq {
			keep := (int64(t)+1)*int64(k)/int64(n) > int64(t)*int64(k)/int64(n)
			t++
			if keep && !yield(i) {
				return
			}
		}
	}
}

// oddEvenRun trains one method on MNIST odd (label 1) vs even (label 0)
// digits and scores it on the 10 000 test images. The pixels are
// LoadMNIST's, scaled to [0, 1] and not standardised (the paper does not
// say; [0, 1] is the usual reading, digest A12). Training is in memory
// through the svi engine (e.trainAndScore → Fit): the 60 000 × 784 images
// are already in memory from the idx files (376 MB as float64), so
// streaming them would save nothing, and Fit's shuffled epochs see every
// image once per epoch. protocol.max_train and max_test (quick profiles)
// subsample with a seeded permutation. The settings may vary the model
// (Setting.Kernel, Whitened, ZInit, Standardize: the ablation of
// svgp_mnist_oddeven_ablation.yaml).
func oddEvenRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	b := r.Budget
	base, err := e.cached("mnist_oddeven", func() (any, error) {
		tr, te, err := datasets.LoadMNIST(e.dataDir)
		if err != nil {
			return nil, err
		}
		return [2]*datasets.Dataset{oddEven(tr), oddEven(te)}, nil
	})
	if err != nil {
		return nil, err
	}
	pair := base.([2]*datasets.Dataset)
	seed := e.spec.seedFor(r.Split)
	train, test := subsample(pair[0], b.MaxTrain, seed), subsample(pair[1], b.MaxTest, seed+1)
	// As e.trainAndScore (same model seed), plus the learning curve.
	o := modelOptions(r, train.N, seed+1)
	o.Train.Epochs = epochsWithFloor(o.Train.Epochs, b.MinSteps, train.N, o.Train.Batch)
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}
	lc := newCurve(m, subsample(test, curveRows, seed+2), o.Train.Epochs)
	cfg := models.FitConfig{Warnings: io.Discard, Callback: lc.callback}
	// The curve and the training time, carried across sessions by a
	// checkpoint.
	var state struct {
		Epochs   int
		Points   []string
		EvalTime time.Duration
		// Elapsed is the fit's time with the curve's scoring in it, as
		// lc.evalTime is over all sessions: their difference is the
		// training time.
		Elapsed time.Duration
	}
	clock := startClock()
	if m.Checkpointable() {
		sync := func() {
			state.Epochs, state.Points, state.EvalTime = lc.epochs, lc.points, lc.evalTime
			state.Elapsed = clock.training()
		}
		restored := func() {
			lc.epochs, lc.points, lc.evalTime = state.Epochs, state.Points, state.EvalTime
			clock.prior = state.Elapsed
		}
		if cfg.Checkpoint, err = e.checkpoint(r, &state, sync, restored); err != nil {
			return nil, err
		}
	}
	if err := m.Fit(ctx, train, cfg); err != nil {
		return nil, err
	}
	secs := (clock.training() - lc.evalTime).Seconds()
	m.ReleaseTraining()
	res, err := e.score(m, train, test, secs, lc.epochs)
	if err != nil {
		return nil, err
	}
	pixels := "pixels in [0, 1]"
	if o.Inputs.Standardize {
		pixels = "pixels in [0, 1] standardised per pixel on the training images inside the model"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("MNIST odd (1) vs even (0): %d training and %d test images, %s; training time excludes the learning curve (%.1f s)", train.N, test.N, pixels, lc.evalTime.Seconds()), lc.note())
	return res, nil
}

// oddEven relabels an MNIST set by parity (odd = 1), sharing its pixels.
func oddEven(ds *datasets.Dataset) *datasets.Dataset {
	y := make([]int, ds.N)
	for i, v := range ds.Y {
		y[i] = v % 2
	}
	return &datasets.Dataset{Name: ds.Name + "-oddeven", X: ds.X, N: ds.N, D: ds.D, Y: y, C: 2, ClassNames: []string{"even", "odd"}}
}
