package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "check-grad", summary: "compare a model's ELBO gradients with finite differences", run: runCheckGrad})
}

// gradCase is one configuration checked by gpc check-grad.
type gradCase struct {
	kind  string
	noise string // "learned", "given" or "none"
	order int
}

func runCheckGrad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("check-grad", "gpc check-grad --model NAME|all [--order 1|2|both] [--tol 1e-6] [--seed S]",
		`Check the automatic gradients of a model's ELBO against finite differences on
a small random problem (models.CheckGradients). The noise-aware models are
checked twice: with learned input noise, so the noise parameters are covered,
and with given per-point noise. Order 2 checks a directional second
derivative (differentiating through the first gradient). Prints the worst
relative error of each check and exits with status 1 if any exceeds --tol.`)
	model := f.String("model", "", "model `NAME`: "+modelList()+" or all (required)")
	orderFlag := f.String("order", "both", "derivative `order`: 1, 2 or both")
	tol := f.Float64("tol", 1e-6, "largest acceptable relative `error`")
	seed := f.Uint64("seed", 1, "random `seed` of the problem and the checked elements")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	var kinds []string
	switch *model {
	case "all":
		kinds = models.PresetNames()
	case "":
		return usagef("--model is required (one of %s, or all)", modelList())
	default:
		k, err := parseModel(*model)
		if err != nil {
			return err
		}
		kinds = []string{k}
	}
	var orders []int
	switch *orderFlag {
	case "1":
		orders = []int{1}
	case "2":
		orders = []int{2}
	case "both":
		orders = []int{1, 2}
	default:
		return usagef("--order %q: want 1, 2 or both", *orderFlag)
	}
	if !(*tol > 0) || math.IsInf(*tol, 0) {
		return usagef("--tol %g: the tolerance must be positive and finite", *tol)
	}
	var cases []gradCase
	for _, k := range kinds {
		noises := []string{"learned", "given"}
		m, err := models.New(models.Options{Model: k})
		if err != nil {
			return err
		}
		if m.InputNoise() == nil {
			noises = []string{"none"}
		}
		for _, n := range noises {
			for _, o := range orders {
				if !slices.Contains(m.GradientOrders(), o) {
					continue // e.g. the EP evidence has a first-order check only
				}
				cases = append(cases, gradCase{k, n, o})
			}
		}
	}
	// Rows are printed as each check finishes, so the columns have fixed widths.
	const row = "%-9s  %-11s  %5v  %14v  %-6s  %s\n"
	fmt.Fprintf(stdout, row, "model", "input noise", "order", "max rel. error", "result", "worst parameter")
	failed := 0
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted")
		}
		opts := models.Options{Model: c.kind}
		opts.Inputs.Noise.Learn = c.noise == "learned"
		rep, err := models.CheckGradients(opts, c.order, *seed)
		if err != nil {
			return fmt.Errorf("%s (%s noise, order %d): %w", c.kind, c.noise, c.order, err)
		}
		result := "ok"
		if !(rep.MaxRelErr <= *tol) { // NaN fails too
			result = "FAIL"
			failed++
		}
		worst := rep.Worst()
		if i := strings.LastIndex(worst, " (relative error"); i > 0 {
			worst = worst[:i]
		}
		fmt.Fprintf(stdout, row, c.kind, c.noise, c.order, fmt.Sprintf("%.3g", rep.MaxRelErr), result, worst)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d gradient checks exceed --tol %g", failed, len(cases), *tol)
	}
	return nil
}
