package experiments

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
)

// The noisy-input paper (Villacampa-Calvo et al., "Multi-class Gaussian
// process classification with noisy inputs"): its six families share one
// executor (prepare builds each family's data; active learning has its
// own loop), and its eight figures (noisyinputs_figures.go).
func init() {
	run := RunFunc(noisyRun)
	fig := func(f func(*Reporter) error) FigureFunc { return func(rp *Reporter, _ string) error { return f(rp) } }
	p := Paper{
		Name: "noisy inputs",
		Families: map[string]Family{
			"toy1d":     {Run: run, Twin: true, Reads: minSteps, Validate: needSizes},
			"synthetic": {Run: run, Twin: true, Reads: append([]string{"settings.lengthscale_scaling", "settings.sq_lengthscale"}, minSteps...), Validate: needSizes},
			"uci":       {Run: run, Twin: true, Reads: minSteps, Validate: validateUCI},
			"mnist":     {Run: run, Twin: true, Reads: append([]string{"training.scaling"}, minSteps...)},
			"astro":     {Run: run, Twin: true, Reads: minSteps},
			"active": {
				Run:      func(ctx context.Context, e *Env, r Run) (*Result, error) { return e.activeRun(ctx, r) },
				Reads:    []string{"training.step_training", "settings.selection"},
				Validate: validateActive,
				Budget: func(s *Spec, b *Budget) {
					// Part of the key: a continued curve is never resumed as
					// one retrained from scratch (or as one from before
					// Continue existed).
					b.StepTraining = s.Training.StepTraining
					if b.StepTraining == "" {
						b.StepTraining = "continue"
					}
				},
			},
		},
		Figures: map[string]FigureFunc{
			"fig1": fig((*Reporter).fig1), "fig2": fig((*Reporter).fig2), "fig3": fig((*Reporter).fig3),
			"fig4": (*Reporter).figNoiseHist, "fig5": (*Reporter).figNoiseHist,
			"fig6": fig((*Reporter).fig6), "fig7": fig((*Reporter).fig7), "fig8": fig((*Reporter).fig8),
		},
		// noisyRun scores BayesModel itself, from the split's generator;
		// the entry makes specs accept the name.
		Fitters: map[string]Fitter{BayesModel: func(context.Context, *datasets.Dataset, Run) (Predictor, error) {
			return nil, fmt.Errorf("experiments: model %s is the generator's own classifier: only the toy1d and synthetic families have one", BayesModel)
		}},
		Validate: func(s *Spec) error {
			if err := checkGeneratedNames(s); err != nil {
				return err
			}
			if s.Family == "toy1d" || s.Family == "synthetic" {
				return nil
			}
			for _, m := range s.Methods {
				if m.Model == BayesModel {
					return fmt.Errorf("method %s: model %s exists only for generated problems (families toy1d and synthetic), not family %s", m.Name, BayesModel, s.Family)
				}
			}
			return nil
		},
	}
	if err := RegisterPaper(p); err != nil {
		panic(err)
	}
}

// minSteps are the optional fields of every family whose training counts
// optimiser steps (all but active learning, budgeted by step_epochs).
var minSteps = []string{"training.min_steps", "quick.min_steps"}

// modelSettings are the optional setting fields that vary the model
// (Setting.Kernel, Whitened, ZInit, Standardize), for families whose runs
// build their model by modelOptions from the run's budget.
var modelSettings = []string{"settings.kernel", "settings.whitened", "settings.z_init", "settings.standardize"}

// needSizes: generated problems need their training and test sizes.
func needSizes(s *Spec) error {
	if p := s.Protocol; p.NTrain < 1 || p.NTest < 1 {
		return s.errAt([]any{"protocol"}, "%s needs protocol.n_train and protocol.n_test ≥ 1", s.Family)
	}
	return nil
}

// knownUCINames refuses a data set the UCI loader does not know.
func knownUCINames(s *Spec) error {
	for i, d := range s.Datasets {
		if !slices.Contains(knownUCI(), d) {
			return s.errAt([]any{"datasets", i}, "unknown UCI data set %q (known: %s)", d, strings.Join(knownUCI(), ", "))
		}
	}
	return nil
}

func validateUCI(s *Spec) error {
	if err := knownUCINames(s); err != nil {
		return err
	}
	if s.Protocol.TestFraction <= 0 {
		return s.errAt([]any{"protocol", "test_fraction"}, "uci needs protocol.test_fraction > 0")
	}
	return nil
}

func validateActive(s *Spec) error {
	if err := knownUCINames(s); err != nil {
		return err
	}
	if p := s.Protocol; p.InitialTrain < 2 || p.TestSize < 1 || p.PoolSize < 1 || p.Steps < 0 {
		return s.errAt([]any{"protocol"}, "active needs initial_train ≥ 2, test_size ≥ 1, pool_size ≥ 1, steps ≥ 0")
	}
	for i, st := range s.Settings {
		if st.Selection == "" {
			return s.errAt([]any{"settings", i}, "active-learning setting %q needs selection: entropy or random", st.Name)
		}
	}
	return nil
}

// generatedNames are the data-set names of the families whose data do not
// depend on the name (generated, or one fixed data set): any other name
// would be ignored, and a spec asking for "glass" in the synthetic family
// would silently run on synthetic data under that name. The toy problem
// also answers to "toy".
var generatedNames = map[string][]string{
	"toy1d":     {"toy1d", "toy"},
	"synthetic": {"synthetic"},
	"mnist":     {"mnist"},
	"astro":     {"astro"},
}

// checkGeneratedNames refuses a data-set name its family would ignore.
func checkGeneratedNames(s *Spec) error {
	known, ok := generatedNames[s.Family]
	if !ok {
		return nil
	}
	for i, d := range s.Datasets {
		if !slices.Contains(known, d) {
			return s.errAt([]any{"datasets", i}, "data set %q: family %s has one data set, %s, and would ignore the name; use %q", d, s.Family, strings.Join(known, " or "), known[0])
		}
	}
	return nil
}
