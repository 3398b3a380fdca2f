// Package compare fits one composition under several inference engines on
// one training set and scores them on a test set against a reference
// engine (by default the MCMC sampler, the gold standard): the engine of
// each row is named, never branched on, so any registered engine (a
// user's too) takes part. `gpc compare` and the experiment runner's
// comparison family print its Report.
package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// Config is one comparison.
type Config struct {
	// Base is the composition; each engine's model is Base with
	// Inference set to the engine's name.
	Base models.Options
	// Engines are registered engine names, in the order of the rows.
	Engines []string
	// Reference names the engine the others are measured against
	// (differences of predictive probabilities and latent marginals); it
	// must be among Engines. Empty: no reference columns.
	Reference string
	// ReferenceSeeds > 1 runs the reference that many times with
	// consecutive seeds (Base.Train.Seed, +1, ...): the extra rows'
	// differences to the first are its Monte Carlo floor, against which
	// "within Monte Carlo error" is judged.
	ReferenceSeeds int
	Train, Test    *datasets.Dataset
	// Progress receives a line per engine (nil: silent); FitProgress is
	// passed to the fits as FitConfig.Progress.
	Progress, FitProgress io.Writer
	// Warnings receives the fits' warnings (nil: os.Stderr).
	Warnings io.Writer
	// SkipUnknown gives an engine that is not registered a row saying so
	// instead of failing the comparison (a spec naming an engine that this
	// build lacks still runs the others).
	SkipUnknown bool
}

// Row is one engine's fit and scores.
type Row struct {
	// Engine is the engine's name; Run counts the reference's repeats
	// (1 for every first run).
	Engine string `json:"engine"`
	Run    int    `json:"run"`
	Seed   uint64 `json:"seed"`
	// Skipped says why the engine did not run (it does not support the
	// composition, or its fit failed); the other fields are then zero.
	Skipped string `json:"skipped,omitempty"`
	// TestError and NLL score the test rows.
	TestError float64 `json:"test_error"`
	NLL       float64 `json:"nll"`
	// Evidence is the log evidence or its bound (EvidenceKind says which)
	// on the training rows, nil when the engine has none.
	Evidence     *float64 `json:"evidence,omitempty"`
	EvidenceKind string   `json:"evidence_kind,omitempty"`
	// MaxAbsDP and MeanAbsDP are the largest and mean |p − p_ref| over the
	// test rows' class probabilities; LatentMeanErr and LatentVarErr the
	// mean |μ − μ_ref| and |v − v_ref| of the latent marginals at the test
	// inputs; LatentMeanRatio Σ|μ| / Σ|μ_ref| (below 1: means shrunk
	// towards zero); ConfidenceRatio the mean of max_c p over that of the
	// reference (below 1: under-confident). Nil without a reference.
	//
	// LatentMeanZ and LatentVarRel are the same errors in the reference's
	// units, comparable across data sets whose latent scales differ by
	// orders of magnitude: the mean |μ − μ_ref|/√v_ref and |v/v_ref − 1|.
	MaxAbsDP        *float64 `json:"max_abs_dp,omitempty"`
	MeanAbsDP       *float64 `json:"mean_abs_dp,omitempty"`
	LatentMeanErr   *float64 `json:"latent_mean_err,omitempty"`
	LatentVarErr    *float64 `json:"latent_var_err,omitempty"`
	LatentMeanZ     *float64 `json:"latent_mean_z,omitempty"`
	LatentVarRel    *float64 `json:"latent_var_rel,omitempty"`
	LatentMeanRatio *float64 `json:"latent_mean_ratio,omitempty"`
	ConfidenceRatio *float64 `json:"confidence_ratio,omitempty"`
	// FitSeconds is the fit's wall time.
	FitSeconds float64 `json:"fit_seconds"`
	// Figures are what the engine reports about its fit (models.Reporter),
	// such as a sampler's seconds_per_ess.
	Figures []models.Figure `json:"figures,omitempty"`
	// Probs (n×C), Mu and Var (n×L) are the test predictions and latent
	// marginals, for plots.
	Probs []float64 `json:"-"`
	Mu    []float64 `json:"-"`
	Var   []float64 `json:"-"`
}

// Figure returns the row's figure of that name.
func (r *Row) Figure(name string) (float64, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// Report is a comparison's result.
type Report struct {
	Train      string `json:"train"`
	Test       string `json:"test"`
	N          int    `json:"n"`
	NTest      int    `json:"n_test"`
	D          int    `json:"d"`
	C          int    `json:"c"`
	Likelihood string `json:"likelihood"`
	Reference  string `json:"reference,omitempty"`
	Rows       []Row  `json:"rows"`
}

// ReferenceRow returns the reference's first run, nil if it did not run.
func (r *Report) ReferenceRow() *Row {
	for i := range r.Rows {
		if r.Rows[i].Engine == r.Reference && r.Rows[i].Run == 1 && r.Rows[i].Skipped == "" {
			return &r.Rows[i]
		}
	}
	return nil
}

// Row returns the first run of the named engine, nil if absent.
func (r *Report) Row(engine string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Engine == engine && r.Rows[i].Run == 1 {
			return &r.Rows[i]
		}
	}
	return nil
}

// Floor returns the reference's Monte Carlo floor: the mean and largest
// |Δp| of its repeated runs to its first (the mean over repeats); ok is
// false without repeats.
func (r *Report) Floor() (mean, maxAbs float64, ok bool) {
	k := 0
	for _, row := range r.Rows {
		if row.Engine == r.Reference && row.Run > 1 && row.MeanAbsDP != nil {
			mean += *row.MeanAbsDP
			maxAbs += *row.MaxAbsDP
			k++
		}
	}
	if k == 0 {
		return 0, 0, false
	}
	return mean / float64(k), maxAbs / float64(k), true
}

// CheckEngines refuses names that are not registered engines, listing
// those that are.
func CheckEngines(names []string) error {
	for _, n := range names {
		if _, ok := models.LookupEngine(n); !ok {
			return fmt.Errorf("unknown engine %q (registered: %s)", n, models.EngineHelp())
		}
	}
	return nil
}

// Run fits and scores every engine. An engine that does not support the
// composition, or whose fit fails, gets a row saying why and the others
// still run; cancelling ctx stops the comparison.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := CheckEngines(cfg.Engines); err != nil && !cfg.SkipUnknown {
		return nil, err
	}
	if len(cfg.Engines) == 0 {
		return nil, errors.New("compare: no engines")
	}
	if cfg.Reference != "" && !slices.Contains(cfg.Engines, cfg.Reference) {
		return nil, fmt.Errorf("compare: the reference %q is not among the engines %v", cfg.Reference, cfg.Engines)
	}
	if cfg.Train == nil || cfg.Test == nil {
		return nil, errors.New("compare: a training and a test set are needed")
	}
	if cfg.Test.D != cfg.Train.D {
		return nil, fmt.Errorf("compare: the test set has %d features, the training set %d", cfg.Test.D, cfg.Train.D)
	}
	rep := &Report{Train: cfg.Train.Name, Test: cfg.Test.Name, N: cfg.Train.N, NTest: cfg.Test.N, D: cfg.Train.D, C: cfg.Train.C,
		Likelihood: cfg.Base.Likelihood.Name, Reference: cfg.Reference}
	if cfg.Base.Likelihood.Custom != nil {
		rep.Likelihood = "custom"
	}
	for _, name := range cfg.Engines {
		runs := 1
		if name == cfg.Reference && cfg.ReferenceSeeds > 1 {
			runs = cfg.ReferenceSeeds
		}
		if _, ok := models.LookupEngine(name); !ok {
			rep.Rows = append(rep.Rows, Row{Engine: name, Run: 1, Skipped: fmt.Sprintf("engine %q is not registered in this build (registered: %s)", name, models.EngineHelp())})
			continue
		}
		for run := 1; run <= runs; run++ {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			o := cfg.Base
			o.Inference = name
			o.Train.Seed += uint64(run - 1)
			row := fitOne(ctx, o, cfg)
			row.Engine, row.Run, row.Seed = name, run, o.Train.Seed
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if cfg.Progress != nil {
				if row.Skipped != "" {
					fmt.Fprintf(cfg.Progress, "compare: %s: %s\n", name, row.Skipped)
				} else {
					fmt.Fprintf(cfg.Progress, "compare: %s (run %d): test error %.4f, NLL %.4f, fit %.1fs\n", name, run, row.TestError, row.NLL, row.FitSeconds)
				}
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	if ref := rep.ReferenceRow(); ref != nil {
		for i := range rep.Rows {
			if r := &rep.Rows[i]; r.Skipped == "" {
				against(r, ref, cfg.Test.C)
			}
		}
	}
	return rep, nil
}

// fitOne fits and scores one engine.
func fitOne(ctx context.Context, o models.Options, cfg Config) Row {
	var row Row
	m, err := models.New(o)
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	start := time.Now()
	if err := m.Fit(ctx, cfg.Train, models.FitConfig{Progress: cfg.FitProgress, Warnings: cfg.Warnings}); err != nil {
		row.Skipped = "fit failed: " + err.Error()
		return row
	}
	row.FitSeconds = time.Since(start).Seconds()
	test := cfg.Test
	if row.Probs, err = m.PredictContext(ctx, test.X, test.N, nil); err != nil {
		row.Skipped = "prediction failed: " + err.Error()
		return row
	}
	sc := models.Score(row.Probs, test.Y, test.C)
	row.TestError, row.NLL = sc.Error, sc.NLL
	if row.Mu, row.Var, _, err = m.Marginals(test.X, test.N, nil); err != nil {
		row.Skipped = "latent marginals failed: " + err.Error()
		return row
	}
	if v, kind, ok, err := m.LogEvidence(ctx, cfg.Train); ok && err == nil {
		row.Evidence, row.EvidenceKind = &v, kind
	} else if err != nil {
		row.EvidenceKind = "failed: " + err.Error()
	}
	row.Figures = m.Report()
	return row
}

// against fills r's differences to the reference ref.
func against(r, ref *Row, c int) {
	ptr := func(v float64) *float64 { return &v }
	var maxDP, sumDP float64
	for i := range r.Probs {
		d := math.Abs(r.Probs[i] - ref.Probs[i])
		maxDP = math.Max(maxDP, d)
		sumDP += d
	}
	r.MaxAbsDP, r.MeanAbsDP = ptr(maxDP), ptr(sumDP/float64(len(r.Probs)))
	if len(r.Mu) == len(ref.Mu) && len(r.Mu) > 0 {
		var dm, dv, am, amRef, zm, rv float64
		for i := range r.Mu {
			dm += math.Abs(r.Mu[i] - ref.Mu[i])
			dv += math.Abs(r.Var[i] - ref.Var[i])
			am += math.Abs(r.Mu[i])
			amRef += math.Abs(ref.Mu[i])
			if ref.Var[i] > 0 {
				zm += math.Abs(r.Mu[i]-ref.Mu[i]) / math.Sqrt(ref.Var[i])
				rv += math.Abs(r.Var[i]/ref.Var[i] - 1)
			}
		}
		n := float64(len(r.Mu))
		r.LatentMeanErr, r.LatentVarErr = ptr(dm/n), ptr(dv/n)
		r.LatentMeanZ, r.LatentVarRel = ptr(zm/n), ptr(rv/n)
		if amRef > 0 {
			r.LatentMeanRatio = ptr(am / amRef)
		}
	}
	conf := func(p []float64) float64 {
		var s float64
		rows := len(p) / c
		for i := 0; i < rows; i++ {
			s += slices.Max(p[i*c : (i+1)*c])
		}
		return s / float64(rows)
	}
	if cr := conf(ref.Probs); cr > 0 {
		r.ConfidenceRatio = ptr(conf(r.Probs) / cr)
	}
}
