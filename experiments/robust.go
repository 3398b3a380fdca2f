package experiments

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// The robust multi-class GPC paper (Hernández-Lobato et al. 2011): family
// robust_uci runs Table 2 — random 2/3–1/3 splits of four UCI sets, the
// labels of a fraction η of the training rows redrawn uniformly from all
// classes, features standardised on the training part, the balanced class
// rate scored — and keeps each test row's error and index for Table 3.
func init() {
	p := Paper{
		Name:     "Robust multi-class GPC (paper 003)",
		Families: map[string]Family{"robust_uci": {Run: robustRun, Reads: minSteps}, "robust_outliers": {Run: outliersRun, Reads: minSteps}},
		Figures:  map[string]FigureFunc{"rmgpc_fig1": outlierFigure},
		Validate: func(s *Spec) error {
			for i, d := range s.Datasets {
				if !slices.Contains(datasets.UCINames(), d) {
					return s.errAt([]any{"datasets", i}, "unknown UCI data set %q (known: %s)", d, strings.Join(datasets.UCINames(), ", "))
				}
			}
			return nil
		},
	}
	if err := RegisterPaper(p); err != nil {
		panic(err)
	}
}

// ownTraining reports whether a method's model trains by its preset's
// own settings (Preset.Train and Defaults: its optimiser, cap, tolerance,
// kernel and jitter) rather than by the spec's training section. The rule
// is a capability: a model whose engine reads every training row per
// objective evaluation under its own options (models.FullBatcher: EP,
// Laplace) fits to its own convergence, so the spec's minibatch settings,
// written for the SVI methods, do not apply to it.
func ownTraining(m Method) bool {
	mdl, err := models.New(ownOptions(m))
	return err == nil && mdl.IsFullBatch()
}

// ownOptions are a method's model options when it trains by its own
// settings: its parts, the library's defaults for the rest, and the
// inputs standardised, as the paper's protocol does.
func ownOptions(m Method) models.Options {
	o := models.Options{Model: m.Model, Inputs: models.InputOptions{Model: m.Inputs, Standardize: true}}
	o.Likelihood.Name = m.Likelihood
	return o
}

func fitPreset(ctx context.Context, train *datasets.Dataset, m Method) (*models.Model, error) {
	mdl, err := models.New(ownOptions(m))
	if err != nil {
		return nil, err
	}
	if err := mdl.Fit(ctx, train, models.FitConfig{Warnings: io.Discard}); err != nil {
		return nil, err
	}
	return mdl, nil
}

// robustSplit is the split of a data set shared by every method and every
// η (the paired tests compare methods split by split).
func robustSplit(ds *datasets.Dataset, seed uint64) (train, test []int) {
	rng := rand.New(rand.NewPCG(seed, 0x5e11))
	perm := rng.Perm(ds.N)
	nTrain := 2 * ds.N / 3
	train, test = perm[:nTrain], perm[nTrain:]
	slices.Sort(train)
	slices.Sort(test)
	return train, test
}

// corruptLabels redraws the labels of round(η·n) training rows uniformly
// from all c classes (a redraw may keep the old label, so the flip rate is
// η(c−1)/c, as the paper's protocol reads). The rows are a prefix of one
// seeded permutation, so a larger η corrupts a superset of a smaller one's
// rows: noise levels are nested within a split.
func corruptLabels(y []int, c int, eta float64, seed uint64) []int {
	out := slices.Clone(y)
	k := int(math.Round(eta * float64(len(y))))
	rng := rand.New(rand.NewPCG(seed, 0x1abe1))
	perm := rng.Perm(len(y))
	draws := rand.New(rand.NewPCG(seed, 0xd4a3))
	redraw := make([]int, len(y))
	for i := range redraw {
		redraw[i] = draws.IntN(c)
	}
	for _, i := range perm[:k] {
		out[i] = redraw[i]
	}
	return out
}

// BalancedClassRate is the mean, over the classes present among the
// labels, of the accuracy on that class (argmax of the n×c probabilities).
func BalancedClassRate(probs []float64, y []int, c int) float64 {
	hit, count := make([]float64, c), make([]float64, c)
	for i, yi := range y {
		count[yi]++
		if argmax(probs[i*c:(i+1)*c]) == yi {
			hit[yi]++
		}
	}
	var s float64
	var k int
	for j := range c {
		if count[j] > 0 {
			s += hit[j] / count[j]
			k++
		}
	}
	if k == 0 {
		return math.NaN()
	}
	return s / float64(k)
}

func robustRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	v, err := e.cached("uci|"+r.Dataset, func() (any, error) { return datasets.LoadUCI(e.dataDir, r.Dataset) })
	if err != nil {
		return nil, err
	}
	ds := v.(*datasets.Dataset)
	seed := e.spec.seedFor(r.Split)
	tr, te := robustSplit(ds, seed)
	train, test := ds.Subset(tr), ds.Subset(te)
	train.Y = corruptLabels(train.Y, ds.C, r.Setting.LabelNoise, seed)
	train.C, test.C = ds.C, ds.C
	std, _ := datasets.Standardize(train, test)
	train, test = std[0], std[1]
	var res *Result
	var p []float64
	if ownTraining(r.Method) {
		t0 := time.Now()
		m, err := fitPreset(ctx, train, r.Method)
		if err != nil {
			return nil, err
		}
		secs := time.Since(t0).Seconds()
		if p, err = m.Predict(test.X, test.N, nil); err != nil {
			return nil, err
		}
		sc := models.Score(p, test.Y, test.C)
		res = &Result{Error: sc.Error, NLL: sc.NLL, Seconds: secs, NTrain: train.N, NTest: test.N, D: train.D, C: train.C}
	} else {
		var m *models.Model
		if res, m, err = e.trainAndScore(ctx, r, train, test, train.N, false); err != nil {
			return nil, err
		}
		if p, err = m.Predict(test.X, test.N, nil); err != nil {
			return nil, err
		}
	}
	res.BCR = BalancedClassRate(p, test.Y, test.C)
	_, res.PointErr = models.PointLosses(p, test.Y, test.C)
	res.TestIndex = te
	if eta := r.Setting.LabelNoise; eta > 0 {
		changed := 0
		for i, y := range train.Y {
			if y != ds.Y[tr[i]] {
				changed++
			}
		}
		res.Notes = append(res.Notes, fmt.Sprintf("η = %g: %d of %d training labels redrawn, %d changed", eta, int(math.Round(eta*float64(train.N))), train.N, changed))
	}
	return res, nil
}

// outliersRun fits RMGPC on a whole standardised data set and records
// P(z_i = 1 | y, X) for every row (the robust paper's Figure 1 and the
// last row of its Table 3); the scores are training-set ones.
func outliersRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	ds, err := datasets.LoadUCI(e.dataDir, r.Dataset)
	if err != nil {
		return nil, err
	}
	std, _ := datasets.Standardize(ds)
	all := std[0]
	t0 := time.Now()
	m, err := fitPreset(ctx, all, r.Method)
	if err != nil {
		return nil, err
	}
	secs := time.Since(t0).Seconds()
	out, err := m.Outliers()
	if err != nil {
		return nil, fmt.Errorf("robust_outliers: model %s: %w", r.Method.Model, err)
	}
	p, err := m.Predict(all.X, all.N, nil)
	if err != nil {
		return nil, err
	}
	sc := models.Score(p, all.Y, all.C)
	res := &Result{Error: sc.Error, NLL: sc.NLL, BCR: BalancedClassRate(p, all.Y, all.C), Seconds: secs,
		NTrain: all.N, D: all.D, C: all.C, Outliers: out}
	note := fmt.Sprintf("fitted on all %d rows; error and NLL are training-set scores", all.N)
	if st, ok := m.EngineState().(*models.MultiEPState); ok {
		note = fmt.Sprintf("fitted on all %d rows; log Z_EP %.4f, ρ̂ %.4f; error and NLL are training-set scores", all.N, st.LogZ, st.Rho())
	}
	res.Notes = append(res.Notes, note)
	return res, nil
}
