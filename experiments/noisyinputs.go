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
	fig := func(f func(*reporter) error) FigureFunc { return func(rp *reporter, _ string) error { return f(rp) } }
	p := Paper{
		Name: "noisy inputs",
		Families: map[string]RunFunc{
			"toy1d": run, "synthetic": run, "uci": run, "mnist": run, "astro": run,
			"active": func(ctx context.Context, e *env, r Run) (*Result, error) { return e.activeRun(ctx, r) },
		},
		Figures: map[string]FigureFunc{
			"fig1": fig((*reporter).fig1), "fig2": fig((*reporter).fig2), "fig3": fig((*reporter).fig3),
			"fig4": (*reporter).figNoiseHist, "fig5": (*reporter).figNoiseHist,
			"fig6": fig((*reporter).fig6), "fig7": fig((*reporter).fig7), "fig8": fig((*reporter).fig8),
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
