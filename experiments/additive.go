package experiments

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// The additive-noise GPC paper (Liu, Ong, Yu, Cai & Shen 2019, paper 004):
// family liu_uci runs its UCI benchmarks (Tables II–V) on the
// Fernández-Delgado et al. files through the protocol of the Bayesian
// Benchmarks package its pipeline used:
//
//   - the data set is the whole file (a train/test pair merged),
//     standardised with the statistics of the whole pool (mean and
//     population s.d. + 1e-6 per column, test rows included, before
//     splitting: B-B's normalize);
//   - split s is a random 90/10 partition (int(0.9·N) training rows) drawn
//     from seed spec.seed·1000003 + s — B-B uses numpy's shuffle with seed
//     s, which we do not reproduce bit for bit;
//   - every method gets Appendix D's settings (models.AppendixD: k-means Z
//     shared by the latent functions, RBF ℓ = 0.1·√d and σ² = 5, jitter
//     1e-6) with M, batch, learning rate and budget from the spec; the
//     budget is max(epochs × steps per epoch, min_steps) optimiser steps
//     exactly (the paper's 10 000 iterations: epochs 1, min_steps 10000);
//   - the test probabilities are clipped to [1e-12, 1 − 1e-12] and each row
//     renormalised before the error (argmax) and the mean negative log
//     probability are computed, as B-B's classification task does.
//
// The setting axis carries the variants, by name (the spec format has no
// keys of its own for them): "clean" drops the files' row-number column,
// "row_index" keeps it as an extra input the way B-B's pandas reader did
// (the paper's d is the number of features + 1), and "matern52+rbf" is
// clean with Table V's kernel (Matérn-5/2 with ℓ = 0.1·√d plus RBF with ℓ =
// √d, each σ² = 5).
//
// Family liu_toy draws Figure 2 (see liuToyRun) and family liu_delta
// Figure 4, fixed against learned δ (see liuDeltaRun); their figures are
// liu_fig2 and liu_fig4 (additive_figures.go). Figure 3, the airline
// curves, runs in the SVGP paper's airline family, which holds the
// streaming path and the stand-in data (svgplarge.go: data set
// airline-3class, setting appendix-d); its figure liu_fig3 is registered
// here with the paper's others.
func init() {
	p := Paper{
		Name:     "Additive-noise GPC (paper 004)",
		Families: map[string]Family{"liu_uci": {Run: liuRun, Reads: minSteps}, "liu_toy": {Run: liuToyRun, Reads: minSteps}, "liu_delta": {Run: liuDeltaRun, Reads: minSteps}},
		Figures:  map[string]FigureFunc{"liu_fig2": liuToyFigure, "liu_fig3": liuAirlineFigure, "liu_fig4": liuDeltaFigure},
		Validate: func(s *Spec) error {
			switch s.Family {
			case "liu_toy":
				return validateLiuToy(s)
			case "liu_delta":
				return validateLiuDelta(s)
			}
			return validateLiu(s)
		},
	}
	if err := RegisterPaper(p); err != nil {
		panic(err)
	}
}

// liuSetting is what a liu_uci setting name selects.
type liuSetting struct {
	rowIndex bool
	// kernel is Table V's kernel, a registered expression (so that a model
	// trained with it reloads by name); empty for Appendix D's RBF.
	kernel string
}

// liuSettings are the setting names liu_uci accepts.
var liuSettings = map[string]liuSetting{
	"clean":        {},
	"row_index":    {rowIndex: true},
	"matern52+rbf": {kernel: models.AdditiveMaternRBF},
	// Ablations of how Table V's two kernel parts start (the paper gives
	// the length-scales, not which part gets which): the Matérn part at √d
	// and the RBF part at 0.1·√d, and both at 0.1·√d (the kernel's
	// arguments are the parts' GPflow length-scales over √d).
	"matern52+rbf-swap":  {kernel: models.AdditiveMaternRBF + "(1,0.1)"},
	"matern52+rbf-short": {kernel: models.AdditiveMaternRBF + "(0.1,0.1)"},
}

func liuSettingNames() []string {
	out := make([]string, 0, len(liuSettings))
	for k := range liuSettings {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// validateLiu checks the data set and setting names and that every method
// is a sparse variational model on observed inputs.
func validateLiu(s *Spec) error {
	for i, d := range s.Datasets {
		if _, ok := datasets.DelgadoLookup(d); !ok {
			return s.errAt([]any{"datasets", i}, "unknown data set %q for liu_uci (the paper's: %s)", d, strings.Join(datasets.DelgadoNames(), ", "))
		}
	}
	if s.Protocol.TestFraction <= 0 {
		return s.errAt([]any{"protocol", "test_fraction"}, "liu_uci needs protocol.test_fraction > 0 (the paper: 0.1)")
	}
	for i, st := range s.Settings {
		at := []any{"settings", i}
		if _, ok := liuSettings[st.Name]; !ok {
			return s.errAt(append(at, "name"), "liu_uci setting %q: want one of %s (the name selects the variant)", st.Name, strings.Join(liuSettingNames(), ", "))
		}
		if st.Noise != 0 || st.LearnNoise || st.NoiseInit != 0 || st.D != 0 || st.C != 0 || st.NTrain != 0 || st.Columns != "" || st.Selection != "" {
			return s.errAt(at, "liu_uci setting %q: only a name is read (no input noise, sizes, columns or selection)", st.Name)
		}
	}
	return validateLiuMethods(s, "Appendix D's RBF (setting matern52+rbf for Table V's)", kernels.Default)
}

// validateLiuMethods checks that every method of a spec of one of the
// paper's families is a sparse variational model on observed inputs,
// without a variant, and that its kernel is one of kernels (the family
// fixes the kernel it builds; want names it for the message).
func validateLiuMethods(s *Spec, want string, kernels ...string) error {
	for i, m := range s.Methods {
		if m.Variant != "" {
			return s.errAt([]any{"methods", i, "variant"}, "%s methods take no variant", s.Family)
		}
		o, err := methodOptions(m).Resolve()
		if err != nil {
			continue // reported by the generic validation
		}
		mod, err := models.New(methodOptions(m))
		if err != nil {
			continue // reported by the generic validation
		}
		if !inputs.IsPassthrough(mod.Inputs()) || o.Posterior.Family != "sparse" || mod.IsFullBatch() {
			return s.errAt([]any{"methods", i}, "%s method %s: want a sparse variational model on observed inputs (svi), got %s inputs, %s posterior, %s inference", s.Family, m.Name, o.Inputs.Model, o.Posterior.Family, o.Inference)
		}
		if k := s.trainingFor(m).Kernel; k != "" && !slices.Contains(kernels, k) {
			return s.errAt([]any{"methods", i}, "%s method %s: kernel %q; the kernel is %s", s.Family, m.Name, k, want)
		}
	}
	return nil
}

// liuPool is a loaded and standardised data set.
type liuPool struct{ ds *datasets.Dataset }

// liuStandardize standardises every column with the statistics of the
// whole pool: (x − mean) / (population s.d. + 1e-6), B-B's normalize.
func liuStandardize(ds *datasets.Dataset) *datasets.Dataset {
	out := ds.Clone()
	n, d := ds.N, ds.D
	for j := range d {
		var mean float64
		for i := range n {
			mean += ds.X[i*d+j]
		}
		mean /= float64(n)
		var ss float64
		for i := range n {
			v := ds.X[i*d+j] - mean
			ss += v * v
		}
		sd := math.Sqrt(ss/float64(n)) + 1e-6
		for i := range n {
			out.X[i*d+j] = (ds.X[i*d+j] - mean) / sd
		}
	}
	return out
}

// liuAdultTest names adult's test file used alone (16 281 rows), a stand-in
// for adult where its training part is not on disk.
const liuAdultTest = "adult-test"

// liuLoad reads a data set of the paper by name, liuAdultTest included.
func liuLoad(dataDir, name string, rowIndex bool) (*datasets.Dataset, error) {
	if name == liuAdultTest {
		return datasets.LoadDelgadoPart(dataDir, "adult", "test", rowIndex)
	}
	return datasets.LoadDelgado(dataDir, name, rowIndex)
}

// liuSplit returns split r.Split of the run's data set: the standardised
// pool cut 90/10 (protocol.test_fraction), capped by max_train/max_test.
func liuSplit(e *Env, r Run, rowIndex bool) (*split, error) {
	pkey := fmt.Sprintf("liu|pool|%s|%v", r.Dataset, rowIndex)
	v, err := e.cached(pkey, func() (any, error) {
		ds, err := liuLoad(e.dataDir, r.Dataset, rowIndex)
		if err != nil {
			return nil, err
		}
		return &liuPool{liuStandardize(ds)}, nil
	})
	if err != nil {
		return nil, err
	}
	pool := v.(*liuPool).ds
	b := r.Budget
	key := fmt.Sprintf("liu|split|%s|%v|%d|%g|%d|%d", r.Dataset, rowIndex, r.Split, b.TestFraction, b.MaxTrain, b.MaxTest)
	v, err = e.cached(key, func() (any, error) {
		tr, te := datasets.Split(pool.N, b.TestFraction, e.spec.seedFor(r.Split))
		if b.MaxTrain > 0 && len(tr) > b.MaxTrain {
			tr = tr[:b.MaxTrain]
		}
		if b.MaxTest > 0 && len(te) > b.MaxTest {
			te = te[:b.MaxTest]
		}
		return &split{train: pool.Subset(tr), test: pool.Subset(te), nTotal: pool.N}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*split), nil
}

// liuIterations is a run's budget in optimiser steps on n training rows:
// max(epochs × steps per epoch, min_steps).
func liuIterations(b Budget, n int) int {
	batch := b.Batch
	if batch <= 0 || batch > n {
		batch = n
	}
	perEpoch := (n + batch - 1) / max(batch, 1)
	return max(b.Epochs*perEpoch, b.MinSteps)
}

// liuOptions are the run's model options: the spec's budget on Appendix
// D's settings, with the setting's kernel.
func liuOptions(r Run, nTotal int, seed uint64, st liuSetting) models.Options {
	o := models.AppendixD(modelOptions(r, nTotal, seed))
	if st.kernel != "" {
		o.Kernel.Name, o.Kernel.Factory = st.kernel, nil
	}
	return o
}

// liuRun trains and scores one run of liu_uci.
func liuRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	st, ok := liuSettings[r.Setting.Name]
	if !ok {
		return nil, fmt.Errorf("liu_uci: unknown setting %q", r.Setting.Name)
	}
	sp, err := liuSplit(e, r, st.rowIndex)
	if err != nil {
		return nil, err
	}
	o := liuOptions(r, sp.nTotal, e.spec.seedFor(r.Split)+1, st)
	iters := liuIterations(r.Budget, sp.train.N)
	o.Train.Epochs = models.EpochsFor(iters, sp.train.N, o.Train.Batch)
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}
	res, err := liuFit(ctx, e, r, m, sp.train, sp.test, iters, 0)
	if err != nil {
		return nil, err
	}
	if st.rowIndex {
		res.Notes = append(res.Notes, "row number kept as an input (the paper's pipeline)")
	}
	return res, nil
}

// liuFit trains m for exactly iters optimiser steps on train and scores it
// on test with B-B's clipping. With every > 0 it also scores test every
// that many steps and after the last, into Result.Trace (Eval is the
// optimiser step there; the scoring time is kept off Seconds). Fit reports
// at epoch ends only, so a point falls at the end of the epoch that
// reaches a multiple of every: at most one per epoch. The fit checkpoints
// to run r's file (env.checkpoint), so a killed runner resumes it with the
// same result.
func liuFit(ctx context.Context, e *Env, r Run, m *models.Model, train, test *datasets.Dataset, iters, every int) (*Result, error) {
	// What the result needs from the fit, carried across sessions by a
	// checkpoint: the epochs run, the trace and its next step, and the
	// training time (the scoring excluded).
	var state struct {
		Epochs, Next int
		Trace        []TracePoint
		Training     time.Duration
	}
	state.Next = every
	clock := startClock()
	cfg := models.FitConfig{Warnings: io.Discard, MaxIterations: iters, Callback: func(ep models.Epoch) error {
		state.Epochs++
		if every <= 0 || ep.Iterations < state.Next {
			return nil
		}
		for state.Next <= ep.Iterations {
			state.Next += every
		}
		s0 := time.Now()
		p, err := m.Predict(test.X, test.N, nil)
		if err != nil {
			return err
		}
		sc := models.Score(ClipProbabilities(p, test.C, 1e-12), test.Y, test.C)
		state.Trace = append(state.Trace, TracePoint{Eval: ep.Iterations, Seconds: clock.at(s0).Seconds(), NLL: sc.NLL, Error: sc.Error})
		clock.scoring += time.Since(s0)
		return nil
	}}
	if m.Checkpointable() {
		ck, err := e.checkpoint(r, &state, func() { state.Training = clock.training() }, func() { clock.prior = state.Training })
		if err != nil {
			return nil, err
		}
		cfg.Checkpoint = ck
	}
	if err := m.Fit(ctx, train, cfg); err != nil {
		return nil, err
	}
	secs, epochs, trace := clock.training().Seconds(), state.Epochs, state.Trace
	m.ReleaseTraining()
	probs, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		return nil, err
	}
	probs = ClipProbabilities(probs, test.C, 1e-12)
	sc := models.Score(probs, test.Y, test.C)
	res := &Result{
		Error: sc.Error, NLL: sc.NLL, Seconds: secs, Epochs: epochs,
		NTrain: train.N, NTest: test.N, D: train.D, C: train.C, Inducing: m.Opts.Posterior.Inducing,
	}
	if every > 0 && (len(trace) == 0 || trace[len(trace)-1].Eval < iters) {
		trace = append(trace, TracePoint{Eval: iters, Seconds: secs, NLL: sc.NLL, Error: sc.Error})
	}
	res.Trace = trace
	if epochs > 0 {
		res.SecondsPerEpoch = secs / float64(epochs)
	}
	if test.C <= 10 {
		res.Confusion = confusion(probs, test.Y, test.C)
	}
	res.ParamGroups = m.ParamCount()
	for _, v := range res.ParamGroups {
		res.Params += v
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d optimiser steps", iters))
	if a, ok := m.Likelihood().(*likelihoods.Additive); ok {
		res.Notes = append(res.Notes, fmt.Sprintf(liuDeltaNote, a.DeltaValue()))
	}
	return res, nil
}

// liuDeltaNote is the note recording δ after training; the figures read it
// back (parseLiuDelta).
const liuDeltaNote = "δ = %.4g"

// ClipProbabilities returns n×c probabilities clipped to [eps, 1 − eps]
// with each row renormalised to sum to one: Bayesian Benchmarks'
// treatment of predictions before scoring.
func ClipProbabilities(probs []float64, c int, eps float64) []float64 {
	out := make([]float64, len(probs))
	for i := 0; i+c <= len(probs); i += c {
		var s float64
		for j := range c {
			v := min(max(probs[i+j], eps), 1-eps)
			out[i+j] = v
			s += v
		}
		for j := range c {
			out[i+j] /= s
		}
	}
	return out
}

// Family liu_toy is Figure 2 of the paper: the models trained on two 2-D
// toys as in the authors' demo notebooks, each with its decision boundary
// and optimised inducing inputs drawn (figure liu_fig2).
//
//   - Data sets: "banana" is GPflow's 400-point banana training set
//     (datasets.LoadBanana); "banana-402" is the authors' file, the same
//     400 points plus two labelled 1 at (0.912, 1.941) and (0.912, 1.741)
//     (their repository's data/toy_binary_*; why they were added is not
//     said); "gp-3class" is datasets.LiuToy, 400 points whose three classes
//     are the argmax of three RBF GP draws, a new draw per split (seeded,
//     not numpy's seed-3 draw). Inputs are used as they are, unstandardised,
//     as the notebooks do.
//   - Model: the method's preset (binary or multi-class from the labels)
//     with the notebooks' settings, fixed by the family: Matérn-3/2 with
//     ARD, GPflow length-scale 0.5 and σ² = 1 (liuToyKernel), M inducing
//     inputs from k-means shared by the latent functions and trained, q(u)
//     whitened (GPflow's default there), jitter 1e-6, δ learned from 1e-3;
//     Adam with the spec's learning rate, batch and budget in optimiser
//     steps (liuIterations; the paper: 5000 full-batch steps at 0.01).
//   - Scores: the paper reports none, and the toys have no test set, so
//     Error and NLL are on the training points; "every model separates the
//     data well" is read from them.
//   - Surface: the model's class probabilities on a 100 × 100 grid (the
//     window of the SVGP paper's banana figure, or the unit square), with
//     the trained inducing inputs. A binary surface holds p(y=1); a
//     multi-class one holds the C grids of p(y=c) one after another
//     (c-major), since Surface has no field for several classes.
//   - Notes: how far the inducing inputs are from the decision boundary of
//     the trained model, at their k-means start and trained (liuToyNote),
//     the paper's "inducing points move toward the decision boundaries".
func liuToyRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	train, window, err := liuToyData(ctx, e, r)
	if err != nil {
		return nil, err
	}
	o := liuToyOptions(r, train.N, e.spec.seedFor(r.Split)+1)
	iters := liuIterations(r.Budget, train.N)
	o.Train.Epochs = models.EpochsFor(iters, train.N, o.Train.Batch)
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}
	// NewStepper initialises the parameters exactly as Fit will, which
	// gives the k-means start of Z without copying how models computes it.
	if _, err := m.NewStepper(train); err != nil {
		return nil, err
	}
	z0 := m.InducingInputs()[0]
	res, err := liuFit(ctx, e, r, m, train, train, iters, 0)
	if err != nil {
		return nil, err
	}
	s, err := predictSurface(m, train.C, window, liuToyGrid)
	if err != nil {
		return nil, err
	}
	res.Surface = s
	f, err := toyFindingsOf(s, z0)
	if err != nil {
		return nil, err
	}
	// The figure only draws contours from the grid: four decimals keep a
	// run's line a few hundred kilobytes instead of 0.6 MB (the findings
	// above used the full values).
	for i, p := range s.P {
		s.P[i] = math.Round(p*1e4) / 1e4
	}
	res.Notes = append(res.Notes, "error and NLL are on the training points (the toys have no test set)", f.note())
	return res, nil
}

// liuToyGrid is the number of grid points per axis of a toy's surface.
const liuToyGrid = 100

// liuToyDatasets are the data sets liu_toy accepts.
var liuToyDatasets = []string{"banana", "banana-402", "gp-3class"}

// liuBananaExtra are the two points (label 1) the authors' banana file adds
// to GPflow's 400.
var liuBananaExtra = [][2]float64{{0.912, 1.941}, {0.912, 1.741}}

// liuToyData returns a toy's training set and its plotting window
// (x1 min, x1 max, x2 min, x2 max), cached for the runs that share it.
func liuToyData(ctx context.Context, e *Env, r Run) (*datasets.Dataset, [4]float64, error) {
	seed := e.spec.seedFor(r.Split)
	window, _ := liuToyWindow(r.Dataset)
	v, err := e.cached(fmt.Sprintf("liu_toy|%s|%d", r.Dataset, seed), func() (any, error) {
		ds, _, err := liuToyTrain(ctx, e.dataDir, r.Dataset, seed)
		return ds, err
	})
	if err != nil {
		return nil, window, err
	}
	return v.(*datasets.Dataset), window, nil
}

// liuToyWindow is a toy's plotting window; ok is false for an unknown toy.
func liuToyWindow(dataset string) (window [4]float64, ok bool) {
	switch dataset {
	case "banana", "banana-402":
		return [4]float64{-3.25, 3.65, -2.85, 3.4}, true
	case "gp-3class":
		return [4]float64{0, 1, 0, 1}, true
	}
	return window, false
}

// liuToyTrain loads or draws a toy's training set (seed: the split's, for
// the drawn toy). The runs and the figure both call it, so the results
// need not carry the training points (banana is a file under the data
// directory, which the results must not copy).
func liuToyTrain(ctx context.Context, dataDir, dataset string, seed uint64) (*datasets.Dataset, [4]float64, error) {
	window, ok := liuToyWindow(dataset)
	switch {
	case !ok:
		return nil, window, fmt.Errorf("liu_toy: unknown data set %q (want %s)", dataset, strings.Join(liuToyDatasets, ", "))
	case dataset == "gp-3class":
		ds, err := datasets.LiuToyContext(ctx, datasets.LiuToyN, seed)
		return ds, window, err
	}
	ds, err := datasets.LoadBanana(dataDir)
	if err != nil || dataset == "banana" {
		return ds, window, err
	}
	out := ds.Clone()
	out.Name = "banana-402"
	for _, p := range liuBananaExtra {
		out.X = append(out.X, p[0], p[1])
		out.Y = append(out.Y, 1)
		out.N++
	}
	return out, window, out.Validate()
}

// liuToyOptions are the demo notebooks' model settings around the spec's
// budget (full batch when the spec's batch is at least the training size).
func liuToyOptions(r Run, n int, seed uint64) models.Options {
	o := modelOptions(r, n, seed)
	// One kernel for all classes, as the demos' GPflow SVGP (num_latent = C).
	o.Kernel = models.KernelOptions{Name: "matern32", Factory: liuToyKernel, Shared: true}
	o.Posterior.ZInit, o.Posterior.SharedZ, o.Posterior.Whitened, o.Posterior.Jitter = "kmeans", true, true, 1e-6
	o.Train.Batch = min(o.Train.Batch, n)
	return o
}

// liuToyKernel is the demos' Matern32(lengthscales=0.5, ARD=True) with
// GPflow's default variance 1, trainable: ℓ_j = 0.5² here, where ℓ_j
// divides squared distances.
func liuToyKernel(name string, d int, init models.KernelInit) kernels.Kernel {
	k, err := kernels.NewMatern(name, 1.5, d, 0.25, 1, init.Noise)
	if err != nil {
		panic(err) // ν = 1.5 is supported
	}
	return k
}

// validateLiuToy checks liu_toy's data sets, settings and methods.
func validateLiuToy(s *Spec) error {
	for i, d := range s.Datasets {
		if !slices.Contains(liuToyDatasets, d) {
			return s.errAt([]any{"datasets", i}, "unknown data set %q for liu_toy (want %s)", d, strings.Join(liuToyDatasets, ", "))
		}
	}
	for i, st := range s.Settings {
		if st != (Setting{Name: st.Name}) {
			return s.errAt([]any{"settings", i}, "liu_toy setting %q: only a name is read", st.Name)
		}
	}
	return validateLiuMethods(s, "the demos' Matérn-3/2, fixed by the family (leave kernel unset)")
}

// Family liu_delta is Figure 4 of the paper: GPC-I/II/III with δ fixed at
// 1e-3 (setting "fixed") against δ learned from 1e-3 ("learned"), GPCsm
// beside them, with hold-out accuracy and NLL recorded along training.
//
//   - Data: the Fernández-Delgado sets through liu_uci's protocol (the
//     whole file standardised, random 90/10 splits), and "adult-test",
//     adult's 16 281-row test file on its own, standing in for adult
//     (48 842 rows), whose training file is not on disk.
//   - Model and budget: liu_uci's (Appendix D's settings: RBF ℓ = 0.1·√d,
//     σ² = 5, M k-means inducing inputs, Adam), for exactly the spec's
//     optimiser steps.
//   - Curve: the hold-out error and NLL (clipped as B-B does) every
//     ⌈steps/liuCurvePoints⌉ optimiser steps (at the end of the epoch that
//     reaches it) and after the last, in Result.Trace with Eval the step;
//     the scoring is kept off the clock.
//   - A likelihood without δ (GPCsm) is the same model in both settings, so
//     its run is done once and its result serves both (noted).
func liuDeltaRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	fixed := r.Setting.Name == "fixed"
	if !fixed && r.Setting.Name != "learned" {
		return nil, fmt.Errorf("liu_delta: unknown setting %q (want learned or fixed)", r.Setting.Name)
	}
	sp, err := liuSplit(e, r, false)
	if err != nil {
		return nil, err
	}
	o := liuOptions(r, sp.nTotal, e.spec.seedFor(r.Split)+1, liuSetting{})
	o.Likelihood.Delta, o.Likelihood.FixDelta = liuFixedDelta, fixed
	iters := liuIterations(r.Budget, sp.train.N)
	o.Train.Epochs = models.EpochsFor(iters, sp.train.N, o.Train.Batch)
	every := max(1, (iters+liuCurvePoints-1)/liuCurvePoints)
	run := func() (*Result, error) {
		m, err := models.New(o)
		if err != nil {
			return nil, err
		}
		return liuFit(ctx, e, r, m, sp.train, sp.test, iters, every)
	}
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}
	if _, ok := m.Likelihood().(*likelihoods.Additive); ok {
		return run()
	}
	key := fmt.Sprintf("liu_delta|no-delta|%s|%s|%d|%s", r.Dataset, r.Method.Name, r.Split, hashOf(r.Method.keyView(), r.Budget))
	v, err := e.cached(key, func() (any, error) { return run() })
	if err != nil {
		return nil, err
	}
	res := *v.(*Result)
	res.Notes = append(slices.Clone(res.Notes), liuNoDeltaNote)
	res.Trace = slices.Clone(res.Trace)
	return &res, nil
}

// liuFixedDelta is the fixed δ of Figure 4 (the digest's reading of the
// text) and the initial δ of the learned one.
const liuFixedDelta = 1e-3

// liuCurvePoints is about how many points a liu_delta curve has.
const liuCurvePoints = 50

// liuNoDeltaNote marks a liu_delta result of a likelihood without δ, which
// is one run shown under both settings.
const liuNoDeltaNote = "the likelihood has no δ: one run serves both settings"

// liuDeltaSettings are the setting names liu_delta accepts.
var liuDeltaSettings = []string{"fixed", "learned"}

// validateLiuDelta checks liu_delta's data sets, settings, protocol and
// methods.
func validateLiuDelta(s *Spec) error {
	for i, d := range s.Datasets {
		if _, ok := datasets.DelgadoLookup(d); !ok && d != liuAdultTest {
			return s.errAt([]any{"datasets", i}, "unknown data set %q for liu_delta (the paper's: %s; or %s)", d, strings.Join(datasets.DelgadoNames(), ", "), liuAdultTest)
		}
	}
	if s.Protocol.TestFraction <= 0 {
		return s.errAt([]any{"protocol", "test_fraction"}, "liu_delta needs protocol.test_fraction > 0 (the paper: 0.1)")
	}
	for i, st := range s.Settings {
		if !slices.Contains(liuDeltaSettings, st.Name) || st != (Setting{Name: st.Name}) {
			return s.errAt([]any{"settings", i}, "liu_delta setting %q: want a name only, one of %s", st.Name, strings.Join(liuDeltaSettings, ", "))
		}
	}
	return validateLiuMethods(s, "Appendix D's RBF", kernels.Default)
}
