package experiments

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
)

// The SVGP classification paper (Hensman, Matthews & Ghahramani 2015):
// family raetsch runs Table 1 on the Rätsch benchmarks — official IDA
// splits where they were obtained (heart, ringnorm), seeded random splits
// of the published sizes otherwise (flagged in each result) — with the
// inputs standardised on the training part.
func init() {
	p := Paper{
		Name:     "SVGP classification",
		Families: map[string]Family{"raetsch": {Run: raetschRun, Reads: minSteps}, "banana": {Run: bananaRun, Reads: minSteps}},
		Figures:  map[string]FigureFunc{"svgp_fig1": bananaFigure, "svgp_fig2": traceFigure},
		Validate: func(s *Spec) error {
			if s.Family == "banana" {
				return nil
			}
			for i, d := range s.Datasets {
				if _, _, ok := datasets.RatschSizes(d); !ok {
					return s.errAt([]any{"datasets", i}, "unknown Rätsch data set %q (known: %s)", d, strings.Join(datasets.RatschNames(), ", "))
				}
			}
			return nil
		},
	}
	if err := RegisterPaper(p); err != nil {
		panic(err)
	}
}

// raetschRun trains and scores one split of a Rätsch data set.
func raetschRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	key := fmt.Sprintf("raetsch|%s|%d", r.Dataset, r.Split)
	v, err := e.cached(key, func() (any, error) {
		train, test, official, err := datasets.RatschSplit(e.dataDir, r.Dataset, r.Split+1, e.spec.seedFor(r.Split))
		if err != nil {
			return nil, err
		}
		std, _ := datasets.Standardize(train, test)
		return &ratschSplit{split{train: std[0], test: std[1], nTotal: train.N}, official}, nil
	})
	if err != nil {
		return nil, err
	}
	sp := v.(*ratschSplit)
	res, _, err := e.trainAndScore(ctx, r, sp.train, sp.test, sp.nTotal, false)
	if err != nil {
		return nil, err
	}
	if !sp.official {
		res.Notes = slices.Concat(res.Notes, []string{"random split of the published sizes (official split not available)"})
	}
	return res, nil
}

type ratschSplit struct {
	split
	official bool
}

// bananaRun trains on the 400-point banana training set (IDA realisation 1,
// the set of GPflow's Figure 1 replication), scores on realisation 1's 4900
// test points, and records p(y=1) on a 50×50 grid over GPflow's window
// [−3.25, 3.65] × [−2.85, 3.4] with the inducing inputs, for Figure 1.
func bananaRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	v, err := e.cached("banana", func() (any, error) {
		train, test, _, err := datasets.RatschSplit(e.dataDir, "banana", 1, 0)
		if err != nil {
			return nil, err
		}
		return &split{train: train, test: test, nTotal: train.N}, nil
	})
	if err != nil {
		return nil, err
	}
	sp := v.(*split)
	res, m, err := e.trainAndScore(ctx, r, sp.train, sp.test, sp.nTotal, false)
	if err != nil || r.Split != 0 {
		return res, err
	}
	// The window of the paper's Figure 1 panels.
	s, err := predictSurface(m, 2, [4]float64{-3.25, 3.65, -2.85, 3.4}, 50)
	if err != nil {
		return nil, err
	}
	res.Surface = s
	return res, nil
}
