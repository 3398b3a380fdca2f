package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// uciNames are the UCI data sets the loader knows (Table 4).
var uciNames = datasets.UCINames()

// givenNoiseFloor replaces zero given noise variances: the NIMGP terms use
// V⁻¹ and Predict refuses non-positive variances. It is the authors'
// floor for attributes without error bars.
const givenNoiseFloor = datasets.AstroNoiseFloor

// Env holds what runs of one spec share: the data directory and a cache of
// loaded data sets and prepared splits (every method of a split uses the
// same data, and generating a synthetic GP problem costs a Cholesky).
type Env struct {
	spec    *Spec
	dataDir string
	mu      sync.Mutex
	cache   map[string]*cacheEntry
	// resultsDir is the runner's directory, which holds the checkpoints
	// ("" outside Execute: no checkpoints).
	resultsDir string
	// onCheckpoint, if set, is called as a run's checkpoint is taken (tests).
	onCheckpoint func(Run)
	// logf, if set, writes a line to the runner's log.
	logf func(format string, args ...any)
}

type cacheEntry struct {
	once sync.Once
	val  any
	err  error
}

func newEnv(s *Spec, dataDir string) *Env {
	return &Env{spec: s, dataDir: dataDir, cache: map[string]*cacheEntry{}}
}

// Spec returns the spec whose runs the environment serves.
func (e *Env) Spec() *Spec { return e.spec }

// DataDir returns the data directory the runs read.
func (e *Env) DataDir() string { return e.dataDir }

// Cached computes f once per key for every run of the spec (a loaded data
// set, a prepared split), even when workers ask concurrently.
func (e *Env) Cached(key string, f func() (any, error)) (any, error) { return e.cached(key, f) }

// TrainAndScore fits the run's model (its method's composition, with the
// run's budget and split seed, checkpointed when the runner checkpoints)
// on train and scores it on test: the whole of a family's run once it has
// built its split.
func (e *Env) TrainAndScore(ctx context.Context, r Run, train, test *datasets.Dataset) (*Result, error) {
	res, _, err := e.trainAndScore(ctx, r, train, test, train.N+test.N, false)
	return res, err
}

// cached computes f once per key, even when workers ask concurrently. The
// cache keeps at most a few hundred small splits; large bases (MNIST) are
// stored once.
func (e *Env) cached(key string, f func() (any, error)) (any, error) {
	e.mu.Lock()
	c, ok := e.cache[key]
	if !ok {
		c = &cacheEntry{}
		e.cache[key] = c
	}
	e.mu.Unlock()
	c.once.Do(func() { c.val, c.err = f() })
	if errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded) {
		// An interrupted build is no answer: a later call builds it again.
		e.mu.Lock()
		if e.cache[key] == c {
			delete(e.cache, key)
		}
		e.mu.Unlock()
	}
	return c.val, c.err
}

// seedFor derives the data seed of a split; every method of a split sees
// the same data (paired comparisons, as in the paper).
func (s *Spec) seedFor(split int) uint64 { return s.Seed*1_000_003 + uint64(split) }

// modelOptions maps a run to models.Options.
func modelOptions(r Run, nTotal int, seed uint64) models.Options {
	b, st := r.Budget, r.Setting
	M := b.Inducing
	if b.InducingFrac > 0 {
		M = min(M, max(1, int(b.InducingFrac*float64(nTotal))))
	}
	o := methodOptions(r.Method)
	o.Posterior.Inducing = M
	o.Kernel = models.KernelOptions{Name: b.Kernel, Degree: b.Degree}
	o.Likelihood.Quadrature = b.Quadrature
	o.Train = models.TrainOptions{Epochs: b.Epochs, Batch: b.Batch, LR: b.LR, Seed: seed, Optimizer: b.Optimizer, FreezeHyper: b.FreezeHyper, FreezeZ: b.FreezeZ, LocalAdam: "lazy"}
	if b.LocalAdam != "" {
		o.Train.LocalAdam = b.LocalAdam
	}
	// A run is its spec's fixed budget on the inputs as the data set gives
	// them (specs standardise where their paper does), as the committed
	// results were computed: neither the presets' training nor the
	// library's defaults (the stopping rule, standardisation) apply.
	o.Train.Stop = models.StopBudget
	if o.Train.Optimizer == "" {
		o.Train.Optimizer = "adam"
	}
	o.Inputs.NoStandardize = true
	// A setting's model fields (whitened q(u), Z initialisation, input
	// standardisation), for the families that read them; the kernel came
	// with the budget.
	st.applyModel(&o)
	o.Inputs.Hidden, o.Inputs.Residual, o.Inputs.TestSamples = b.Hidden, b.Residual, b.TestSamples
	// The noise settings reach every model; an input model without a noise
	// part ignores them.
	if st.LearnNoise && !sampledVariant(r.Method.Variant) {
		o.Inputs.Noise.Learn = true
		o.Inputs.Noise.Init = st.NoiseInit
		if o.Inputs.Noise.Init == 0 {
			o.Inputs.Noise.Init = 0.1
		}
	} else {
		o.Inputs.Noise.Var = math.Max(st.Noise, givenNoiseFloor)
	}
	return o
}

// epochsWithFloor returns how many epochs a fit on n training rows runs:
// epochs, raised if needed so that the fit takes at least minSteps optimiser
// steps (Training.MinSteps; ≤ 0: no floor). An epoch is ⌈n/B⌉ steps with
// B = min(batch, n), the batches solvers.EpochBatches makes and Train steps
// through (one full batch when batch ≥ n). The floor exists because an
// epoch budget treats training sizes unequally: at batch 100, 40 epochs are
// 40 Adam steps at N = 100 but 200 at N = 500.
func epochsWithFloor(epochs, minSteps, n, batch int) int {
	if minSteps <= 0 || n <= 0 {
		return epochs
	}
	if batch <= 0 || batch > n {
		batch = n
	}
	perEpoch := (n + batch - 1) / batch
	return max(epochs, (minSteps+perEpoch-1)/perEpoch)
}

// floorNoise returns a copy of ds whose given variances are at least the floor.
func floorNoise(ds *datasets.Dataset) *datasets.Dataset {
	if ds.Noise == nil {
		return ds
	}
	out := ds.Clone()
	for i, v := range out.Noise {
		out.Noise[i] = math.Max(v, givenNoiseFloor)
	}
	return out
}

// trainAndScore fits the run's model on train and scores it on test. Unless
// keep is set (the model will be continued), the training state is released
// before scoring, so a worker does not hold a training graph and a
// prediction graph at once.
func (e *Env) trainAndScore(ctx context.Context, r Run, train, test *datasets.Dataset, nTotal int, keep bool) (*Result, *models.Model, error) {
	seed := e.spec.seedFor(r.Split) + 1
	o := modelOptions(r, nTotal, seed)
	cfg := models.FitConfig{Warnings: io.Discard}
	if r.Method.Variant == "augmented" {
		train = augment(train, r.Setting.Noise, seed)
	}
	// The step floor needs the size of the set actually trained on (MGP
	// (aug.) triples it), so it is applied here rather than in budgetFor.
	o.Train.Epochs = epochsWithFloor(o.Train.Epochs, r.Budget.MinSteps, train.N, o.Train.Batch)
	m, err := models.New(o)
	if err != nil {
		return nil, nil, err
	}
	if m.UsesGivenNoise() {
		train, test = floorNoise(train), floorNoise(test)
	}
	// What the result needs from the fit, carried across sessions by a
	// checkpoint: the epochs run, the trace and the training time.
	var state struct {
		Epochs   int
		Trace    []TracePoint
		Training time.Duration
	}
	cfg.Callback = func(models.Epoch) error { state.Epochs++; return nil }
	clock := startClock()
	if e.spec.Protocol.Trace {
		cfg.Trace = func(eval int, _ float64) error {
			s0 := time.Now()
			p, err := m.Predict(test.X, test.N, nil)
			if err != nil {
				return err
			}
			sc := models.Score(p, test.Y, test.C)
			state.Trace = append(state.Trace, TracePoint{Eval: len(state.Trace) + 1, Seconds: clock.at(s0).Seconds(), NLL: sc.NLL, Error: sc.Error})
			clock.scoring += time.Since(s0)
			return nil
		}
	}
	// A fit kept for Continue is one of several in its run, which cannot
	// share one checkpoint file.
	if !keep && m.Checkpointable() {
		ck, err := e.checkpoint(r, &state, func() { state.Training = clock.training() }, func() { clock.prior = state.Training })
		if err != nil {
			return nil, nil, err
		}
		cfg.Checkpoint = ck
	}
	if err := m.Fit(ctx, train, cfg); err != nil {
		return nil, nil, err
	}
	if !keep {
		m.ReleaseTraining()
	}
	secs, epochs, trace := clock.training().Seconds(), state.Epochs, state.Trace
	res, err := e.score(m, train, test, secs, epochs)
	if res != nil {
		res.Trace = trace
		if note := emptyClassNote(train); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	return res, m, err
}

// score predicts test with a model trained on train in secs seconds and
// epochs epochs, and fills a Result. Given noise has already been floored.
func (e *Env) score(m *models.Model, train, test *datasets.Dataset, secs float64, epochs int) (*Result, error) {
	o := m.Opts
	var testNoise []float64
	if m.UsesGivenNoise() {
		testNoise = test.Noise
	}
	probs, err := m.Predict(test.X, test.N, testNoise)
	if err != nil {
		return nil, err
	}
	sc := models.Score(probs, test.Y, test.C)
	res := &Result{
		Error: sc.Error, NLL: sc.NLL, Seconds: secs, Epochs: epochs,
		NTrain: train.N, NTest: test.N, D: train.D, C: train.C, Inducing: o.Posterior.Inducing,
	}
	if epochs > 0 {
		res.SecondsPerEpoch = secs / float64(epochs)
	}
	if e.spec.Protocol.Uncertainty == "bootstrap" {
		res.PointNLL, res.PointErr = models.PointLosses(probs, test.Y, test.C)
	}
	if test.C <= 10 {
		res.Confusion = confusion(probs, test.Y, test.C)
	}
	// Parameter counts and learned noise come from the model's accessors;
	// ParamCount includes NIMGP's per-point q(x_i) and counts only the free
	// (lower-triangular) entries of the q(u) factors.
	res.ParamGroups = m.ParamCount()
	for _, v := range res.ParamGroups {
		res.Params += v
	}
	res.NNParams = res.ParamGroups["nn"]
	res.LearnedNoise = m.LearnedNoise() // nil when the noise is given
	return res, nil
}

// continueAndScore trains m for epochs more epochs on train, which extends
// the data set m was trained on (models.Model.Continue), and scores it.
func (e *Env) continueAndScore(ctx context.Context, m *models.Model, train, test *datasets.Dataset, epochs int) (*Result, error) {
	if m.UsesGivenNoise() {
		train, test = floorNoise(train), floorNoise(test)
	}
	done := 0
	cfg := models.FitConfig{Warnings: io.Discard, Callback: func(models.Epoch) error { done++; return nil }}
	t0 := time.Now()
	if err := m.Continue(ctx, train, epochs, cfg); err != nil {
		return nil, err
	}
	return e.score(m, train, test, time.Since(t0).Seconds(), done)
}

func argmax(row []float64) int {
	a := 0
	for j := range row {
		if row[j] > row[a] {
			a = j
		}
	}
	return a
}

// confusion counts predicted × true labels.
func confusion(probs []float64, y []int, c int) [][]float64 {
	m := make([][]float64, c)
	for i := range m {
		m[i] = make([]float64, c)
	}
	for i, yi := range y {
		m[argmax(probs[i*c:(i+1)*c])][yi]++
	}
	return m
}

// inducingInputs returns each latent function's inducing inputs.
func inducingInputs(m *models.Model, latent int) ([][]float64, error) {
	z := m.InducingInputs()
	if len(z) != latent {
		return nil, fmt.Errorf("experiments: model has %d inducing sets, want %d", len(z), latent)
	}
	return z, nil
}
