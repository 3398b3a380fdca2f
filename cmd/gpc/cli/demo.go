package cli

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "demo", summary: "run the paper's 1-D toy experiment (Table 1) for all four models", run: runDemo})
}

// Demo settings: the toy problem of §5.1 of the noisy-inputs paper.
const (
	demoNoiseVar    = 0.1
	demoN           = 1000
	demoInducing    = 100
	demoBatch       = 50
	demoLR          = 0.01
	demoEpochs      = 60 // the whole demo: 144 s on 2 idle cores, 170 s on a busy machine
	demoTestSamples = 200
	demoTableFile   = "demo.csv"
)

// paperTable1 holds the paper's Table 1 (test error, test NLL).
var paperTable1 = map[string][2]float64{
	"mgp":      {0.125, 0.884},
	"nimgp":    {0.129, 0.286},
	"nimgp-nn": {0.125, 0.347},
	"nimgp-fo": {0.128, 0.495},
}

// demoModels are the noisy-input paper's models, in its order.
var demoModels = []string{"mgp", "nimgp", "nimgp-nn", "nimgp-fo"}

// demoRow is one line of the demo's table.
type demoRow struct {
	Model      string
	Error, NLL float64
	KL         float64 // mean KL(Bayes ‖ model) over the test points
	Seconds    float64 // training and prediction; NaN for the Bayes row
	Paper      [2]float64
	HasPaper   bool
}

type demoArgs struct {
	epochs, samples int
	seed            uint64
	out             string
	kinds           []string
	quiet           bool
}

func parseDemo(args []string, stdout io.Writer) (*demoArgs, error) {
	f := newFlags("demo", "gpc demo [--epochs E] [--seed S] [--out DIR]",
		fmt.Sprintf(`Run the 1-D toy problem of the noisy-inputs paper (§5.1, Table 1) on
synthetic data generated in memory: three latent functions drawn from a GP
prior on [−3, 3], noise-free argmax labels, inputs observed with Gaussian noise
of variance %g; %d training and %d test points. Each model is trained with
M = %d inducing points, batch %d and learning rate %g, given the true noise
variance, and scored on the test set: error, negative log-likelihood, and the
mean KL divergence from the Bayes-optimal predictive p(y | x̃), which is known
exactly for this problem. The paper's Table 1 is shown beside ours; it comes
from another draw of the latent functions (the paper does not give them) and
its own training schedule, so compare the pattern rather than the digits: the
noise-aware models' NLL is far below MGP's. Use --epochs to train longer.`, demoNoiseVar, demoN, demoN, demoInducing, demoBatch, demoLR))
	var a demoArgs
	var kinds string
	f.IntVar(&a.epochs, "epochs", demoEpochs, "training `epochs` per model")
	f.Uint64Var(&a.seed, "seed", 1, "random `seed` of the problem, the data and the models")
	f.StringVar(&a.out, "out", "", "also write the table to `DIR`/"+demoTableFile)
	f.IntVar(&a.samples, "test-samples", demoTestSamples, "nimgp, nimgp-nn: Monte Carlo `samples` of x* per prediction")
	f.StringVar(&kinds, "models", "all", "comma-separated `models` to run")
	f.BoolVar(&a.quiet, "quiet", false, "no progress lines on standard error")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return nil, err
	}
	if err := noArgs(pos); err != nil {
		return nil, err
	}
	if a.epochs < 1 {
		return nil, usagef("--epochs %d: need at least 1 epoch", a.epochs)
	}
	if a.samples < 1 || a.samples > models.MaxTestSamples {
		return nil, usagef("--test-samples %d: want 1 to %d samples", a.samples, models.MaxTestSamples)
	}
	if a.kinds, err = parseKinds(kinds); err != nil {
		return nil, err
	}
	return &a, nil
}

// parseKinds parses "all" or a comma-separated list of models.
func parseKinds(s string) ([]string, error) {
	if s == "all" {
		return demoModels, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		k, err := parseModel(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseDemo(args, stdout)
	if err != nil {
		return err
	}
	if a.out != "" {
		if err := os.MkdirAll(a.out, 0o755); err != nil {
			return err
		}
	}
	logf := func(format string, args ...any) {
		if !a.quiet {
			fmt.Fprintf(stderr, format, args...)
		}
	}
	prob, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), demoNoiseVar, a.seed)
	if err != nil {
		return err
	}
	_, train := prob.Sample(demoN, a.seed+1)
	_, test := prob.Sample(demoN, a.seed+2)
	bayes := prob.BayesPredictive(test)
	bs := models.Score(bayes, test.Y, test.C)
	rows := []demoRow{{Model: "bayes-optimal", Error: bs.Error, NLL: bs.NLL, Seconds: math.NaN()}}
	logf("1-D toy problem: %d training and %d test points, input-noise variance %g, %d epochs per model\n", train.N, test.N, demoNoiseVar, a.epochs)
	total := time.Now()
	for _, k := range a.kinds {
		logf("%-9s ", k)
		st := time.Now()
		o := models.Options{Model: k, Posterior: models.PosteriorOptions{Inducing: demoInducing},
			Train: models.TrainOptions{Batch: demoBatch, LR: demoLR, Epochs: a.epochs, Seed: a.seed}}
		o.Inputs.Noise.Var, o.Inputs.TestSamples = demoNoiseVar, a.samples
		m, err := models.New(o)
		if err != nil {
			return err
		}
		// Warnings (a fit stopped at the demo's short budget, say) follow
		// the model's line rather than break it.
		var warn strings.Builder
		if err := m.Fit(ctx, train, models.FitConfig{Warnings: &warn}); err != nil {
			logf("\n%s", warn.String())
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while training %s", k)
			}
			return fmt.Errorf("training %s: %w", k, err)
		}
		fitSec := time.Since(st).Seconds()
		p, err := m.Predict(test.X, test.N, test.Noise)
		if err != nil {
			logf("\n")
			return fmt.Errorf("predicting with %s: %w", k, err)
		}
		s := models.Score(p, test.Y, test.C)
		row := demoRow{Model: k, Error: s.Error, NLL: s.NLL, KL: meanKL(bayes, p, test.N, test.C), Seconds: time.Since(st).Seconds()}
		row.Paper, row.HasPaper = paperTable1[k]
		rows = append(rows, row)
		logf(" %.1f s (training %.1f s, prediction %.1f s)\n", row.Seconds, fitSec, row.Seconds-fitSec)
		if warn.Len() > 0 {
			logf("          %s", warn.String())
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted")
		}
	}
	writeDemoTable(stdout, rows)
	logf("total %.1f s\n", time.Since(total).Seconds())
	if a.out != "" {
		path := filepath.Join(a.out, demoTableFile)
		if err := writeDemoCSV(path, rows); err != nil {
			return err
		}
		logf("wrote %s\n", path)
	}
	return nil
}

// meanKL is the mean over rows of KL(p ‖ q) for n×c probability matrices.
func meanKL(p, q []float64, n, c int) float64 {
	var kl float64
	for i := range p[:n*c] {
		if p[i] > 0 {
			kl += p[i] * math.Log(p[i]/math.Max(q[i], 1e-300))
		}
	}
	return kl / float64(n)
}

func fmtOpt(v float64, ok bool, prec int) string {
	if !ok || math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func writeDemoTable(w io.Writer, rows []demoRow) {
	const row = "%-13s  %10s  %8s  %11s  %7s  %11s  %9s\n"
	fmt.Fprintf(w, row, "model", "test error", "test NLL", "KL to Bayes", "seconds", "paper error", "paper NLL")
	for _, r := range rows {
		fmt.Fprintf(w, row, r.Model, fmtOpt(r.Error, true, 3), fmtOpt(r.NLL, true, 3),
			fmtOpt(r.KL, r.Model != "bayes-optimal", 3), fmtOpt(r.Seconds, true, 1),
			fmtOpt(r.Paper[0], r.HasPaper, 3), fmtOpt(r.Paper[1], r.HasPaper, 3))
	}
}

func writeDemoCSV(path string, rows []demoRow) error {
	return datasets.WriteAtomic(path, func(f io.Writer) error {
		cw := csv.NewWriter(f)
		cw.Write([]string{"model", "test_error", "test_nll", "kl_to_bayes", "seconds", "paper_error", "paper_nll"})
		g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		for _, r := range rows {
			sec, pe, pn := "", "", ""
			if !math.IsNaN(r.Seconds) {
				sec = g(r.Seconds)
			}
			if r.HasPaper {
				pe, pn = g(r.Paper[0]), g(r.Paper[1])
			}
			cw.Write([]string{r.Model, g(r.Error), g(r.NLL), g(r.KL), sec, pe, pn})
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}
