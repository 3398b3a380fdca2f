package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// split is one prepared train/test pair.
type split struct {
	train, test *datasets.Dataset
	nTotal      int
	toy         *datasets.Toy1DProblem
	oracle      *datasets.SyntheticOracle
	noise       float64 // the test inputs' noise variance, for the oracle
}

// noisyRun executes a run of the noisy-input paper's families other than
// active learning: build the split's data, train, score.
func noisyRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	sp, err := e.prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	if r.Method.Model == BayesModel {
		return e.bayesRun(r, sp)
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

// prepare builds (or fetches from the cache) the data of a run's split;
// the synthetic family's O(n³) draw stops with ctx's error once ctx is done.
func (e *Env) prepare(ctx context.Context, r Run) (*split, error) {
	s := e.spec
	st, b := r.Setting, r.Budget
	key := fmt.Sprintf("%s|%s|%d|%d|%d|%s", r.Dataset, st.Name, r.Split, b.NTrain, b.MaxTrain, b.Scaling)
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
			sp, err := datasets.SyntheticSplitProblemContext(ctx, b.NTrain, b.NTest, d, c, st.Noise, seed,
				datasets.SyntheticOptions{Scaling: datasets.LengthscaleScaling(st.LengthscaleScaling), SqLengthscale: st.SqLengthscale})
			if err != nil {
				return nil, err
			}
			return &split{train: sp.Train, test: sp.Test, nTotal: sp.Train.N + sp.Test.N, oracle: sp.Oracle, noise: st.Noise}, nil
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
			std := []*datasets.Dataset{train, test}
			if b.Scaling != scalingRaw {
				std, _ = datasets.Standardize(train, test)
			}
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

// BayesModel is the model name of the Bayes-optimal classifier of a
// generated problem (families toy1d and synthetic): the generator's own
// p(y | x̃) (datasets.Toy1DProblem.BayesPredictive,
// datasets.SyntheticOracle), scored like a method. It trains nothing; its
// error and NLL are the floor under every method's on the same test set.
const BayesModel = "bayes"

// bayesRun scores the generator's Bayes-optimal predictive on the split's
// test set.
func (e *Env) bayesRun(r Run, sp *split) (*Result, error) {
	start := time.Now()
	var probs []float64
	var err error
	switch {
	case sp.toy != nil:
		probs = sp.toy.BayesPredictive(sp.test)
	case sp.oracle != nil:
		probs, err = sp.oracle.BayesPredictive(sp.test, sp.noise)
	default:
		err = fmt.Errorf("experiments: method %s: family %s has no Bayes-optimal classifier (only toy1d and synthetic problems, without σ0², do)", r.Method.Name, e.spec.Family)
	}
	if err != nil {
		return nil, err
	}
	sc := models.Score(probs, sp.test.Y, sp.test.C)
	res := &Result{
		Error: sc.Error, NLL: sc.NLL, Seconds: time.Since(start).Seconds(),
		NTrain: sp.train.N, NTest: sp.test.N, D: sp.test.D, C: sp.test.C,
	}
	if e.spec.Protocol.Uncertainty == "bootstrap" {
		res.PointNLL, res.PointErr = models.PointLosses(probs, sp.test.Y, sp.test.C)
	}
	if sp.test.C <= 10 {
		res.Confusion = confusion(probs, sp.test.Y, sp.test.C)
	}
	return res, nil
}

// subsample keeps max rows chosen by a seeded permutation (0: all rows).
func subsample(ds *datasets.Dataset, max int, seed uint64) *datasets.Dataset {
	if max <= 0 || max >= ds.N {
		return ds
	}
	perm := rand.New(rand.NewPCG(seed, 0x5ab)).Perm(ds.N)[:max]
	return ds.Subset(perm)
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
func (e *Env) activeRun(ctx context.Context, r Run) (*Result, error) {
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
