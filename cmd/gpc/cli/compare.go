package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/compare"
	// The sampler is the comparison's default reference.
	_ "github.com/gpc-dev/gpc/models/mcmc"
)

func init() {
	register(&command{name: "compare", summary: "fit one composition under several inference engines and score them against MCMC", run: runCompare})
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("compare",
		"gpc compare --train A.csv --test B.csv [--likelihood L] [--inference E1,E2,...] [--reference mcmc] [--json] [--png FILE] [flags]",
		`Fit one composition (the full posterior family: Z = X) under each of the
inference engines named by --inference on the training file and score them on
the test file: test error and NLL, the log evidence or its bound where the
engine has one (models.EvidenceReporter), the largest and mean absolute
difference of predictive probabilities to the reference engine, the mean
absolute error of the latent marginals' means and variances at the test
inputs, the ratio of the mean |latent mean| to the reference's (below 1:
shrunk towards zero), the ratio of the mean largest class probability
(below 1: under-confident), the fit time and, for engines that report it,
the time per effective sample.

An engine that does not support the composition gets a row saying why; the
others still run. --reference-seeds K repeats the reference with K−1 other
seeds: their differences to its first run are the Monte Carlo floor. Engine
settings are given with --set, e.g. --set mcmc.samples=2000 --set mcmc.fit=ep
(the sampler's hyper-parameters at EP's fit) --set mcmc.proposal=fit (its
ellipses around EP's Gaussian: the same posterior, far better mixing).`)
	var trainPath, testPath, lik, engines, ref, kernel, optim, png string
	f.StringVar(&trainPath, "train", "", "training data `FILE.csv` (required)")
	f.StringVar(&testPath, "test", "", "test data `FILE.csv` with labels (required)")
	f.StringVar(&lik, "likelihood", "probit", "likelihood `NAME`: "+strings.Join(likelihoods.Names(), ", "))
	f.StringVar(&engines, "inference", "", "comma-separated `engines` (default: every registered one: "+models.EngineHelp()+")")
	f.StringVar(&ref, "reference", "mcmc", "the reference `engine` the others are measured against (\"\": none)")
	f.StringVar(&kernel, "kernel", kernels.Default, "`kernel` expression: "+kernels.Describe())
	f.StringVar(&optim, "optimizer", "lbfgs", "svi `optimizer`: "+strings.Join(models.Optimizers, ", "))
	f.StringVar(&png, "png", "", "write a plot of each engine's predictive probabilities against the reference's to `FILE.png`")
	epochs := f.Int("epochs", 200, "training epochs (L-BFGS iterations for svi with lbfgs, ep)")
	seed := f.Uint64("seed", 1, "random `seed`")
	refSeeds := f.Int("reference-seeds", 1, "runs of the reference with consecutive seeds (the Monte Carlo floor)")
	asJSON := f.Bool("json", false, "print the report as JSON")
	quiet := f.Bool("quiet", false, "no progress output")
	noStd := f.Bool("no-standardize", false, "use the inputs as given instead of standardising each column")
	set := settingsFlag{}
	f.Var(set, "set", "engine setting `ENGINE.KEY=VALUE`, repeatable")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if trainPath == "" || testPath == "" {
		return usagef("--train and --test are required")
	}
	if *epochs < 1 || *refSeeds < 1 {
		return usagef("--epochs and --reference-seeds must be at least 1")
	}
	names := models.EngineNames()
	if engines != "" {
		names = nil
		for _, e := range strings.Split(engines, ",") {
			if e = strings.TrimSpace(e); e != "" {
				names = append(names, e)
			}
		}
	}
	if err := compare.CheckEngines(names); err != nil {
		return usagef("--inference: %v", err)
	}
	if ref != "" {
		found := false
		for _, n := range names {
			found = found || n == ref
		}
		if !found {
			return usagef("--reference %s is not among the engines %s", ref, strings.Join(names, ","))
		}
	}
	if png != "" {
		if err := checkOutput(png, "compare.png", trainPath, testPath); err != nil {
			return err
		}
		if ref == "" {
			return usagef("--png plots against the reference: give --reference")
		}
	}
	train, err := datasets.ReadCSV(trainPath, datasets.CSVOptions{})
	if err != nil {
		return err
	}
	if err := train.MissingClasses(trainPath, ""); err != nil {
		return err
	}
	test, err := datasets.ReadCSV(testPath, datasets.CSVOptions{NumClasses: train.C})
	if err != nil {
		return err
	}
	base := models.Options{
		Kernel:     models.KernelOptions{Name: kernel},
		Likelihood: models.LikelihoodOptions{Name: lik},
		Posterior:  models.PosteriorOptions{Family: "full"},
		Train:      models.TrainOptions{Epochs: *epochs, Seed: *seed, Optimizer: optim},
	}
	base.Inputs.Standardize = !*noStd
	if len(set) > 0 {
		base.Settings = set
	}
	cfg := compare.Config{Base: base, Engines: names, Reference: ref, ReferenceSeeds: *refSeeds, Train: train, Test: test, Warnings: stderr}
	if !*quiet {
		cfg.Progress = stderr
	}
	rep, err := compare.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if png != "" {
		if err := rep.WritePNG(png, test.Y); err != nil {
			return err
		}
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if png != "" && !*quiet {
		fmt.Fprintf(stderr, "wrote %s\n", png)
	}
	return nil
}
