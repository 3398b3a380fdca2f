package experiments

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
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

// env holds what runs of one spec share: the data directory and a cache of
// loaded data sets and prepared splits (every method of a split uses the
// same data, and generating a synthetic GP problem costs a Cholesky).
type env struct {
	spec    *Spec
	dataDir string
	mu      sync.Mutex
	cache   map[string]*cacheEntry
}

type cacheEntry struct {
	once sync.Once
	val  any
	err  error
}

func newEnv(s *Spec, dataDir string) *env {
	return &env{spec: s, dataDir: dataDir, cache: map[string]*cacheEntry{}}
}

// cached computes f once per key, even when workers ask concurrently. The
// cache keeps at most a few hundred small splits; large bases (MNIST) are
// stored once.
func (e *env) cached(key string, f func() (any, error)) (any, error) {
	e.mu.Lock()
	c, ok := e.cache[key]
	if !ok {
		c = &cacheEntry{}
		e.cache[key] = c
	}
	e.mu.Unlock()
	c.once.Do(func() { c.val, c.err = f() })
	return c.val, c.err
}

// split is one prepared train/test pair.
type split struct {
	train, test *datasets.Dataset
	nTotal      int
	toy         *datasets.Toy1DProblem
}

// seedFor derives the data seed of a split; every method of a split sees
// the same data (paired comparisons, as in the paper).
func (s *Spec) seedFor(split int) uint64 { return s.Seed*1_000_003 + uint64(split) }

// executeRun is the real executor: build the split's data, train, score.
func executeRun(ctx context.Context, e *env, r Run) (*Result, error) {
	if e.spec.Family == "active" {
		return e.activeRun(ctx, r)
	}
	sp, err := e.prepare(r)
	if err != nil {
		return nil, err
	}
	res, m, err := e.trainAndScore(ctx, r, sp.train, sp.test, sp.nTotal, false)
	if err != nil {
		return nil, err
	}
	if sp.toy != nil && r.Split == 0 {
		if res.Curve, err = toyCurve(m, r, sp); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// prepare builds (or fetches from the cache) the data of a run's split.
func (e *env) prepare(r Run) (*split, error) {
	s := e.spec
	st, b := r.Setting, r.Budget
	key := fmt.Sprintf("%s|%s|%d|%d|%d", r.Dataset, st.Name, r.Split, b.NTrain, b.MaxTrain)
	v, err := e.cached(key, func() (any, error) {
		seed := s.seedFor(r.Split)
		switch s.Family {
		case "toy1d":
			p, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), st.Noise, seed)
			if err != nil {
				return nil, err
			}
			_, train := p.Sample(b.NTrain, 2*seed+1)
			_, test := p.Sample(b.NTest, 2*seed+2)
			return &split{train: train, test: test, nTotal: train.N + test.N, toy: p}, nil
		case "synthetic":
			d, c := st.D, st.C
			if d == 0 {
				d = 2
			}
			if c == 0 {
				c = 3
			}
			sp, err := datasets.SyntheticSplitProblem(b.NTrain, b.NTest, d, c, st.Noise, seed,
				datasets.SyntheticOptions{Scaling: datasets.LengthscaleScaling(st.LengthscaleScaling)})
			if err != nil {
				return nil, err
			}
			return &split{train: sp.Train, test: sp.Test, nTotal: sp.Train.N + sp.Test.N}, nil
		case "uci":
			base, err := e.cached("uci:"+r.Dataset, func() (any, error) { return datasets.LoadUCI(e.dataDir, r.Dataset) })
			if err != nil {
				return nil, err
			}
			ds := base.(*datasets.Dataset)
			tr, te := datasets.Split(ds.N, b.TestFraction, seed)
			train, test := subsample(ds.Subset(tr), b.MaxTrain, seed), subsample(ds.Subset(te), b.MaxTest, seed+1)
			std, _ := datasets.Standardize(train, test)
			return &split{
				train:  datasets.AddInputNoise(std[0], st.Noise, 2*seed+1),
				test:   datasets.AddInputNoise(std[1], st.Noise, 2*seed+2),
				nTotal: ds.N,
			}, nil
		case "mnist":
			base, err := e.cached("mnist", func() (any, error) {
				tr, te, err := datasets.LoadMNIST(e.dataDir)
				return [2]*datasets.Dataset{tr, te}, err
			})
			if err != nil {
				return nil, err
			}
			pair := base.([2]*datasets.Dataset)
			train, test := subsample(pair[0], b.MaxTrain, seed), subsample(pair[1], b.MaxTest, seed+1)
			std, _ := datasets.Standardize(train, test)
			return &split{
				train:  datasets.AddInputNoise(std[0], st.Noise, 2*seed+1),
				test:   datasets.AddInputNoise(std[1], st.Noise, 2*seed+2),
				nTotal: train.N + test.N,
			}, nil
		case "astro":
			cols := datasets.AstroColumnsTable9
			if st.Columns == "b4" {
				cols = datasets.AstroColumnsB4
			}
			base, err := e.cached("astro:"+st.Columns, func() (any, error) {
				ds, err := datasets.LoadAstroColumns(e.dataDir, cols)
				if err != nil {
					return nil, err
				}
				splits, err := datasets.AstroSplits(e.dataDir)
				return [2]any{ds, splits}, err
			})
			if err != nil {
				return nil, err
			}
			pair := base.([2]any)
			ds, splits := pair[0].(*datasets.Dataset), pair[1].([][2][]int)
			if r.Split >= len(splits) {
				return nil, fmt.Errorf("astrophysics has %d fixed splits; split %d requested", len(splits), r.Split)
			}
			train, test, _ := datasets.AstroFold(ds, splits[r.Split])
			return &split{train: train, test: test, nTotal: ds.N}, nil
		}
		return nil, fmt.Errorf("family %q has no data builder", s.Family)
	})
	if err != nil {
		return nil, err
	}
	return v.(*split), nil
}

// subsample keeps max rows chosen by a seeded permutation (0: all rows).
func subsample(ds *datasets.Dataset, max int, seed uint64) *datasets.Dataset {
	if max <= 0 || max >= ds.N {
		return ds
	}
	perm := rand.New(rand.NewPCG(seed, 0x5ab)).Perm(ds.N)[:max]
	return ds.Subset(perm)
}

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
	o.Train = models.TrainOptions{Epochs: b.Epochs, Batch: b.Batch, LR: b.LR, Seed: seed}
	o.Inputs.Hidden, o.Inputs.Residual, o.Inputs.TestSamples = b.Hidden, b.Residual, b.TestSamples
	// The noise settings reach every model; an input model without a noise
	// part ignores them.
	if st.LearnNoise && r.Method.Variant != "sampling" {
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
func (e *env) trainAndScore(ctx context.Context, r Run, train, test *datasets.Dataset, nTotal int, keep bool) (*Result, *models.Model, error) {
	seed := e.spec.seedFor(r.Split) + 1
	o := modelOptions(r, nTotal, seed)
	var cfg models.FitConfig
	epochs := 0
	cfg.Warnings = io.Discard
	cfg.Callback = func(models.Epoch) error { epochs++; return nil }
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
	t0 := time.Now()
	if err := m.Fit(ctx, train, cfg); err != nil {
		return nil, nil, err
	}
	if !keep {
		m.ReleaseTraining()
	}
	res, err := e.score(m, train, test, time.Since(t0).Seconds(), epochs)
	return res, m, err
}

// score predicts test with a model trained on train in secs seconds and
// epochs epochs, and fills a Result. Given noise has already been floored.
func (e *env) score(m *models.Model, train, test *datasets.Dataset, secs float64, epochs int) (*Result, error) {
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
func (e *env) continueAndScore(ctx context.Context, m *models.Model, train, test *datasets.Dataset, epochs int) (*Result, error) {
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

// augment is MGP (aug.): the training set plus two copies with extra noise
// N(0, 2V), as the authors' MGPC_augmented script does ("twice the amount
// of data" extra).
func augment(train *datasets.Dataset, v float64, seed uint64) *datasets.Dataset {
	a := datasets.AddInputNoise(train, 2*v, seed*1000+1)
	b := datasets.AddInputNoise(train, 2*v, seed*1000+2)
	out := train.Clone()
	out.N = 3 * train.N
	out.X = slices.Concat(train.X, a.X, b.X)
	out.Y = slices.Concat(train.Y, a.Y, b.Y)
	out.Noise = nil
	return out
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

// toyCurve predicts on a grid of x̃ (Figure 2) and, for NIMGP_FO, also
// returns the latent means and variances with and without Δ and the
// inducing inputs (Figure 1).
func toyCurve(m *models.Model, r Run, sp *split) (*Curve, error) {
	const n = 241
	cfg := sp.toy.Config
	x := make([]float64, n)
	for i := range x {
		x[i] = cfg.Lo + (cfg.Hi-cfg.Lo)*float64(i)/float64(n-1)
	}
	grid := &datasets.Dataset{X: x, N: n, D: 1, Y: make([]int, n), C: sp.train.C}
	noise := make([]float64, n)
	for i := range noise {
		noise[i] = math.Max(sp.toy.NoiseVar, givenNoiseFloor)
	}
	var given []float64
	if m.UsesGivenNoise() {
		given = noise
	}
	p, err := m.Predict(x, n, given)
	if err != nil {
		return nil, err
	}
	c := &Curve{X: x, P: columns(p, n, grid.C), Bayes: columns(sp.toy.BayesPredictive(grid), n, grid.C),
		TrainX: sp.train.X, TrainY: sp.train.Y}
	if methodInputs(r.Method) == "first-order" {
		// Figure 1: the latent marginals at the grid, with the first-order
		// term Δ (for the same noise variances as the prediction above) and
		// without it (v − Δ).
		mu, v, delta, err := m.Marginals(x, n, given)
		if err != nil {
			return nil, err
		}
		if delta == nil {
			return nil, fmt.Errorf("NIMGP_FO returned no Δ term")
		}
		v0 := make([]float64, len(v))
		for i := range v {
			v0[i] = v[i] - delta[i]
		}
		L := len(mu) / n
		c.LatentMean, c.LatentVar, c.LatentVarNoDelta = columns(mu, n, L), columns(v, n, L), columns(v0, n, L)
		if c.Z, err = inducingInputs(m, L); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// columns turns an n×C row-major matrix into C columns.
func columns(p []float64, n, c int) [][]float64 {
	out := make([][]float64, c)
	for k := range out {
		out[k] = make([]float64, n)
		for i := range n {
			out[k][i] = p[i*c+k]
		}
	}
	return out
}

// activeRun is one active-learning curve (Figures 6, 7): bootstrap-resample
// Waveform (as the authors' script), take initial/test/pool blocks,
// standardise with the initial training statistics, inject noise, then
// repeatedly train, score, and move one pool point to the training set —
// the one of maximal predictive entropy, or a random one. The first model
// trains for the spec's epochs; after each added point it continues for
// step_epochs (models.Model.Continue: all parameters and the optimiser state
// kept, as the authors' code), or, with step_training: scratch, a new model
// is fitted for step_epochs.
func (e *env) activeRun(ctx context.Context, r Run) (*Result, error) {
	s, b, st := e.spec, r.Budget, r.Setting
	base, err := e.cached("uci:"+r.Dataset, func() (any, error) { return datasets.LoadUCI(e.dataDir, r.Dataset) })
	if err != nil {
		return nil, err
	}
	ds := base.(*datasets.Dataset)
	seed := s.seedFor(r.Split)
	rng := rand.New(rand.NewPCG(seed, 0xac7))
	need := b.InitialTrain + b.TestSize + b.PoolSize
	idx := make([]int, need)
	for i := range idx {
		idx[i] = rng.IntN(ds.N)
	}
	train := ds.Subset(idx[:b.InitialTrain])
	test := ds.Subset(idx[b.InitialTrain : b.InitialTrain+b.TestSize])
	pool := ds.Subset(idx[b.InitialTrain+b.TestSize:])
	std, _ := datasets.Standardize(train, test, pool)
	train = datasets.AddInputNoise(std[0], st.Noise, 3*seed+1)
	test = datasets.AddInputNoise(std[1], st.Noise, 3*seed+2)
	pool = datasets.AddInputNoise(std[2], st.Noise, 3*seed+3)
	stepEpochs := b.Epochs
	if b.StepEpochs > 0 {
		stepEpochs = b.StepEpochs
	}
	res := &Result{}
	t0 := time.Now()
	var m *models.Model
	for step := 0; ; step++ {
		rr := r
		var out *Result
		var err error
		if step == 0 || b.StepTraining == "scratch" {
			if step > 0 {
				rr.Budget.Epochs = stepEpochs
			}
			out, m, err = e.trainAndScore(ctx, rr, train, test, b.InitialTrain, true)
		} else {
			out, err = e.continueAndScore(ctx, m, train, test, stepEpochs)
		}
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
		res.ALError = append(res.ALError, out.Error)
		res.ALNLL = append(res.ALNLL, out.NLL)
		if step == 0 {
			*res = Result{ALError: res.ALError, ALNLL: res.ALNLL, NTrain: out.NTrain, NTest: out.NTest, D: out.D, C: out.C,
				Inducing: out.Inducing, Params: out.Params, NNParams: out.NNParams}
		}
		res.LearnedNoise = out.LearnedNoise
		res.Epochs += out.Epochs
		if step == b.Steps || pool.N == 0 {
			res.Error, res.NLL = out.Error, out.NLL
			break
		}
		pick := rng.IntN(pool.N)
		if st.Selection == "entropy" {
			var noise []float64
			if m.UsesGivenNoise() {
				noise = floorNoise(pool).Noise
			}
			p, err := m.Predict(pool.X, pool.N, noise)
			if err != nil {
				return nil, err
			}
			best := -1.0
			for i := range pool.N {
				var h float64
				for _, q := range p[i*pool.C : (i+1)*pool.C] {
					if q > 0 {
						h -= q * math.Log(q)
					}
				}
				if h > best {
					best, pick = h, i
				}
			}
		}
		rest := make([]int, 0, pool.N-1)
		for i := range pool.N {
			if i != pick {
				rest = append(rest, i)
			}
		}
		train = concat(train, pool.Subset([]int{pick}))
		pool = pool.Subset(rest)
	}
	res.Seconds = time.Since(t0).Seconds()
	if res.Epochs > 0 {
		res.SecondsPerEpoch = res.Seconds / float64(res.Epochs)
	}
	return res, nil
}

// concat appends b's rows to a.
func concat(a, b *datasets.Dataset) *datasets.Dataset {
	out := a.Clone()
	out.N += b.N
	out.X = append(out.X, b.X...)
	out.Y = append(out.Y, b.Y...)
	if out.Noise != nil && b.Noise != nil {
		out.Noise = append(out.Noise, b.Noise...)
	}
	return out
}
