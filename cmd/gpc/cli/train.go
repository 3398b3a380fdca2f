package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "train", summary: "train a model on a CSV file and save it as JSON", run: runTrain})
}

// noiseSpec is a parsed --input-noise value.
type noiseSpec struct {
	learn bool
	value float64 // > 0 when a number was given
	file  string  // non-empty when a file was given
}

func (s noiseSpec) given() bool { return s.learn || s.value > 0 || s.file != "" }

func (s noiseSpec) String() string {
	switch {
	case s.learn:
		return "learned"
	case s.file != "":
		return "per point from " + s.file
	case s.value > 0:
		return "variance " + strconv.FormatFloat(s.value, 'g', -1, 64)
	}
	return "none"
}

// parseNoise interprets --input-noise: "learn" (if allowed), a positive
// finite variance, or the path of an existing CSV file of variances.
func parseNoise(s string, allowLearn bool) (noiseSpec, error) {
	if s == "" {
		return noiseSpec{}, nil
	}
	if s == "learn" {
		if !allowLearn {
			return noiseSpec{}, usagef("--input-noise learn is only for training; give a variance or a file of variances")
		}
		return noiseSpec{learn: true}, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if !(v > 0) || math.IsInf(v, 0) {
			return noiseSpec{}, usagef("--input-noise %s: a noise variance must be a positive finite number", s)
		}
		return noiseSpec{value: v}, nil
	}
	st, err := os.Stat(s)
	if err != nil {
		want := "a positive variance or an existing CSV file of variances"
		if allowLearn {
			want = `"learn", ` + want
		}
		return noiseSpec{}, usagef("--input-noise %q is not %s", s, want)
	}
	if st.IsDir() {
		return noiseSpec{}, usagef("--input-noise %s is a directory, not a CSV file of variances", s)
	}
	return noiseSpec{file: s}, nil
}

// parseHidden parses "50,50" into layer sizes.
func parseHidden(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, usagef("--hidden %q: want comma-separated positive layer sizes such as 50,50", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseModel checks a --model value: a registered preset.
func parseModel(s string) (string, error) {
	for _, k := range models.PresetNames() {
		if k == s {
			return k, nil
		}
	}
	return "", usagef("unknown model %q (want one of %s)", s, modelList())
}

func modelList() string { return strings.Join(models.PresetNames(), ", ") }

// modelHelp lists the presets with their summaries, for help texts.
func modelHelp() string {
	var b strings.Builder
	for _, p := range models.Presets() {
		fmt.Fprintf(&b, "  %-9s %s\n", p.Name, p.Summary)
	}
	return b.String()
}

// trainArgs is the parsed command line of gpc train.
type trainArgs struct {
	train, out    string
	opts          models.Options
	model         *models.Model
	noise         noiseSpec
	quiet         bool
	noStandardize bool
	// checkpoint is the --checkpoint file ("" none), written every
	// checkpointEvery.
	checkpoint      string
	checkpointEvery time.Duration
}

func parseTrain(args []string, stdout io.Writer) (*trainArgs, error) {
	f := newFlags("train",
		"gpc train --train FILE.csv --model NAME | --likelihood L [--inputs I] --out MODEL.json [flags]",
		`Train a classifier on FILE.csv (comma-separated, optional header, integer
class label 0..C−1 in the last column) and save it as JSON. Progress goes to
standard error. Ctrl-C stops training without writing a model.

A model is a preset or a composition of parts: --likelihood (`+strings.Join(likelihoods.Names(), ", ")+`),
--inputs (`+strings.Join(inputs.Names(), ", ")+`), --posterior (sparse or full) and
--kernel. With --model the parts given must be ones the preset accepts.
Presets:
`+modelHelp()+`
--input-noise says how the inputs are corrupted: "learn" learns one variance
per input dimension (the default for models with an input-noise part), a
number is the known variance of every input entry, and a file gives one
variance per entry (a CSV with the same rows and input columns as the training
file). Models without an input-noise part ignore it.

The inputs are standardised with the training rows' mean and standard
deviation per column; the transform is saved in the model and applied by
gpc predict, so inputs of any scale (×1e6, ×1e−6) train alike. Noise
variances are given in the inputs' units. --no-standardize uses the inputs
as given. A training error no better than always predicting the most
frequent class is reported as a warning.

Training runs to convergence within a cap: each model's default optimiser
and cap are those its paper fits with (svgp, svgp-kl, ep, ep-fitc, mfsp:
L-BFGS on the full batch until ten iterations in a row each improve the
objective by less than --tol relative, at most 1000 iterations; the other
models: Adam over minibatches until the ELBO, averaged over 10 epochs, has
risen by less than --tol relative per epoch for ten epochs in a row, at
most 1000 epochs). A fit that stops at its cap while still improving is
reported in one line, and the saved model records how its fit ended (its
"fit" record). --stop budget runs every epoch instead.

--checkpoint FILE saves the training state to FILE every --checkpoint-every
(at the end of an epoch) and, when FILE exists, resumes from it: a run
interrupted (Ctrl-C, a killed or requeued job) and started again with the
same command ends with the same model, bit for bit, as one never
interrupted. FILE is refused if it was written for other options or data.
It is removed once the model is written. Minibatch training (adam,
adadelta) and engines with checkpoints (mcmc: the chains resume with the
draws of an uninterrupted run) checkpoint.`)
	var a trainArgs
	var model, noise, hidden string
	f.StringVar(&a.train, "train", "", "training data `FILE.csv` (required)")
	var lik, inp, post, optim, engine string
	f.StringVar(&model, "model", "", "model `NAME`: "+modelList()+" (or give the parts)")
	f.StringVar(&lik, "likelihood", "", "likelihood `NAME`: "+strings.Join(likelihoods.Names(), ", ")+" (default: the model's)")
	f.StringVar(&inp, "inputs", "", "input model `NAME`: "+strings.Join(inputs.Names(), ", ")+" (default: the model's, else observed)")
	f.StringVar(&post, "posterior", "", "posterior `family`: sparse or full (Z = X fixed)")
	f.StringVar(&engine, "inference", "", "inference `engine`: "+models.EngineHelp()+" (default: the model's; another must support the model's parts)")
	f.StringVar(&optim, "optimizer", "", "`optimizer`: "+strings.Join(models.Optimizers, ", ")+" (svi models; default: the model's)")
	f.StringVar(&a.out, "out", "", "where to write the trained model, `MODEL.json` (required)")
	f.StringVar(&noise, "input-noise", "", "input noise: `learn|VARIANCE|FILE.csv` (default learn for the noise-aware models)")
	epochs := f.Int("epochs", 0, "cap on training `epochs` (L-BFGS: iterations) (default: the model's)")
	batch := f.Int("batch", 0, "minibatch `size` (default: the model's, else 50)")
	var stop string
	f.StringVar(&stop, "stop", "", "stopping `rule`: "+models.StopConverged+" (stop once the objective stops improving; the default) or "+models.StopBudget+" (run every epoch)")
	tol := f.Float64("tol", 0, "converged rule's relative `tolerance` (default: per L-BFGS iteration "+strconv.FormatFloat(models.DefaultLBFGSTol, 'g', 2, 64)+", per epoch of the smoothed minibatch ELBO "+strconv.FormatFloat(models.DefaultEpochTol, 'g', 2, 64)+")")
	inducing := f.Int("inducing", 100, "inducing points per class, `M` (capped at the training size)")
	lr := f.Float64("lr", 0, "Adam learning `rate` (default: the model's, else 0.01)")
	seed := f.Uint64("seed", 0, "random `seed` (initialisation, shuffling, sampling)")
	kernel := f.String("kernel", "", "`kernel` expression (default: the model's, else "+kernels.Default+"): "+kernels.Describe())
	degree := f.Int("degree", 9, "`degree` of a kernel that has one and is given none in --kernel (poly; poly(3) sets it in the expression)")
	f.StringVar(&hidden, "hidden", "50", "nimgp-nn: hidden layer `sizes`, comma-separated")
	residual := f.Bool("residual", false, "nimgp-nn: start q(x) at the observed input (residual networks)")
	samples := f.Int("test-samples", 500, "nimgp, nimgp-nn: Monte Carlo `samples` of the noiseless test input per prediction")
	delta := f.Float64("delta", 0, "gpc1, gpc2, gpc3: initial robust-likelihood `δ` (0: 1e-3), or its value with --fix-delta")
	fixDelta := f.Bool("fix-delta", false, "gpc1, gpc2, gpc3: keep δ fixed instead of learning it")
	f.BoolVar(&a.quiet, "quiet", false, "no progress output (warnings are still printed)")
	f.BoolVar(&a.noStandardize, "no-standardize", false, "use the inputs as given instead of standardising each column")
	f.StringVar(&a.checkpoint, "checkpoint", "", "save the training state to `FILE` and resume from it when it exists")
	f.DurationVar(&a.checkpointEvery, "checkpoint-every", 10*time.Minute, "least `duration` between checkpoints, taken at epoch ends (0: every epoch)")
	set := settingsFlag{}
	f.Var(set, "set", "engine setting `ENGINE.KEY=VALUE`, repeatable (say mcmc.samples=2000, mcmc.init-from=M.json)")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return nil, err
	}
	if err := noArgs(pos); err != nil {
		return nil, err
	}
	// A training flag not given is left zero for the model to fill with
	// its preset's training, as the library does with zero Options.
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if a.train == "" {
		return nil, usagef("--train FILE.csv is required")
	}
	if a.out == "" {
		return nil, usagef("--out MODEL.json is required")
	}
	if model == "" && lik == "" && inp == "" {
		return nil, usagef("give --model (one of %s) or the parts (--likelihood, --inputs)", modelList())
	}
	if model != "" {
		if _, err := parseModel(model); err != nil {
			return nil, err
		}
	}
	switch {
	case given["epochs"] && *epochs < 1:
		return nil, usagef("--epochs %d: need at least 1 epoch", *epochs)
	case given["batch"] && *batch < 1:
		return nil, usagef("--batch %d: the batch size must be at least 1", *batch)
	case *inducing < 1:
		return nil, usagef("--inducing %d: need at least 1 inducing point", *inducing)
	case given["lr"] && (!(*lr > 0) || math.IsInf(*lr, 0)):
		return nil, usagef("--lr %g: the learning rate must be positive and finite", *lr)
	case given["stop"] && stop != models.StopConverged && stop != models.StopBudget:
		return nil, usagef("--stop %q: want %s or %s", stop, models.StopConverged, models.StopBudget)
	case given["tol"] && (!(*tol > 0) || math.IsInf(*tol, 0)):
		return nil, usagef("--tol %g: the tolerance must be positive and finite", *tol)
	case *degree < 1:
		return nil, usagef("--degree %d: the polynomial degree must be at least 1", *degree)
	case *samples < 1 || *samples > models.MaxTestSamples:
		return nil, usagef("--test-samples %d: want 1 to %d samples", *samples, models.MaxTestSamples)
	case a.checkpointEvery < 0:
		return nil, usagef("--checkpoint-every %v: the interval must not be negative", a.checkpointEvery)
	}
	if *kernel != "" {
		if _, err := kernels.Build(*kernel, kernels.Config{Name: "probe", D: 1, Degree: *degree}); err != nil {
			return nil, usagef("--kernel %q: %v (registered kernels: %s)", *kernel, err, kernels.Describe())
		}
	}
	h, err := parseHidden(hidden)
	if err != nil {
		return nil, err
	}
	if a.noise, err = parseNoise(noise, true); err != nil {
		return nil, err
	}
	a.opts = models.Options{
		Model:      model,
		Kernel:     models.KernelOptions{Name: *kernel, Degree: *degree},
		Likelihood: models.LikelihoodOptions{Name: lik, Delta: *delta, FixDelta: *fixDelta},
		Posterior:  models.PosteriorOptions{Family: post, Inducing: *inducing},
		Inputs:     models.InputOptions{Model: inp},
		Inference:  engine,
		Train:      models.TrainOptions{Epochs: *epochs, Batch: *batch, LR: *lr, Seed: *seed, Optimizer: optim, Stop: stop, Tolerance: *tol},
	}
	if len(set) > 0 {
		a.opts.Settings = set
	}
	a.opts.Inputs.Hidden, a.opts.Inputs.Residual, a.opts.Inputs.TestSamples = h, *residual, *samples
	a.opts.Inputs.NoStandardize = a.noStandardize
	a.opts.Inputs.Noise.Var = a.noise.value
	// Learned noise is the default where the model has a noise part; a
	// model without one ignores these settings.
	a.opts.Inputs.Noise.Learn = a.noise.learn || !a.noise.given()
	// Build the model now: a contradictory composition is a usage error,
	// reported before any data is read.
	m, err := models.New(a.opts)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if err := refuseIgnored(m, setFlags(f.FlagSet)); err != nil {
		return nil, err
	}
	a.model = m
	if c := filepath.Clean(a.checkpoint); a.checkpoint != "" && (c == filepath.Clean(a.out) || c == filepath.Clean(a.train)) {
		return nil, usagef("--checkpoint %s is also the training file or the output", a.checkpoint)
	}
	if a.checkpoint != "" && !m.Checkpointable() {
		return nil, usagef("--checkpoint: model %s cannot be checkpointed: %v", m.Name(), m.CheckpointError())
	}
	if !a.noise.given() && m.InputNoise() != nil {
		a.noise.learn = true
	}
	return &a, nil
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseTrain(args, stdout)
	if err != nil {
		return err
	}
	// An output that cannot be written is found now, not after training.
	if err := checkOutput(a.out, "model.json", a.train, a.noise.file); err != nil {
		return err
	}
	ds, err := datasets.ReadCSV(a.train, datasets.CSVOptions{})
	if err != nil {
		return err
	}
	if ds.C < 2 {
		return fmt.Errorf("%s: every label is 0; a classifier needs at least two classes", a.train)
	}
	// With the data's size known, so is the model file's, roughly: a file
	// system without room for it is found before training, not after.
	if err := datasets.CheckWritableSize(a.out, a.model.SavedSizeEstimate(ds.N, ds.D, ds.C)); err != nil {
		return err
	}
	// Every class 0..C−1 must have rows: a gap in the labels, a file of one
	// class, or a stray label of 1000000 (a million latent functions) is
	// refused here, naming the classes.
	if err := ds.MissingClasses(a.train, ""); err != nil {
		return err
	}
	if a.noise.file != "" {
		if ds.Noise, err = datasets.ReadNoiseCSV(a.noise.file, ds.N, ds.D); err != nil {
			return err
		}
		if n := a.model.InputNoise(); n != nil && n.Positive {
			// Their ELBO has log V and 1/V terms, so a zero variance is
			// meaningless there (the first-order model only adds V).
			for k, v := range ds.Noise {
				if v == 0 {
					return fmt.Errorf("%s: data row %d, column %d: noise variance 0; %s needs positive variances", a.noise.file, k/ds.D+1, k%ds.D+1, a.model.Name())
				}
			}
		}
	}
	if err := a.model.CheckClasses(ds.C); err != nil {
		return fmt.Errorf("%s: %w", a.train, err)
	}
	m := a.model
	var progress io.Writer
	if !a.quiet {
		progress = stderr
		fmt.Fprintf(stderr, "training %s on %s: %d rows, %d features, %d classes; input noise %s\n",
			m.Name(), a.train, ds.N, ds.D, ds.C, noiseDesc(m, a.noise))
	}
	start := time.Now()
	cfg := models.FitConfig{Progress: progress, Warnings: stderr}
	if a.checkpoint != "" {
		cfg.Checkpoint = &models.Checkpoint{Path: a.checkpoint, Every: a.checkpointEvery}
		if _, err := os.Stat(a.checkpoint); err == nil && !a.quiet {
			fmt.Fprintf(stderr, "resuming from checkpoint %s\n", a.checkpoint)
		}
	}
	err = m.Fit(ctx, ds, cfg)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			if a.checkpoint != "" {
				return fmt.Errorf("training interrupted; no model written to %s; run the same command again to resume from checkpoint %s", a.out, a.checkpoint)
			}
			return fmt.Errorf("training interrupted; no model written to %s", a.out)
		}
		return explainNumerical("training on "+a.train, err)
	}
	if err := warnAtChance(ctx, m, ds, a, stderr); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("training interrupted; no model written to %s", a.out)
		}
		// The model is trained; the check is advisory.
		fmt.Fprintf(stderr, "gpc train: warning: could not check the training error: %v\n", err)
	}
	if err := m.Save(a.out); err != nil {
		return err
	}
	if a.checkpoint != "" {
		// The model is safe; a checkpoint left behind would make the next
		// run with this command resume a finished fit.
		if err := models.RemoveCheckpoint(a.checkpoint); err != nil {
			fmt.Fprintf(stderr, "gpc train: warning: could not remove checkpoint %s: %v\n", a.checkpoint, err)
		}
	}
	if !a.quiet {
		// A fit that did not converge was reported as a warning by Fit.
		how := ""
		if r := m.FitReport(); r != nil && r.Converged {
			how = fmt.Sprintf(", converged after %d %ss", r.Iterations, r.Unit)
		}
		fmt.Fprintf(stderr, "wrote %s (%s%s, trained in %.1f s)\n", a.out, m.Name(), how, time.Since(start).Seconds())
	}
	return nil
}

// chanceRows bounds the training rows the chance check predicts.
const chanceRows = 5000

// warnAtChance predicts the training rows (at most chanceRows, evenly
// spaced) and warns when the error is within 0.01 of always predicting the
// most frequent class: a model that has learned nothing from its inputs,
// which is what inputs of an extreme scale give without standardisation.
func warnAtChance(ctx context.Context, m *models.Model, ds *datasets.Dataset, a *trainArgs, stderr io.Writer) error {
	sub := ds
	if ds.N > chanceRows {
		idx := make([]int, chanceRows)
		for k := range idx {
			idx[k] = k * ds.N / chanceRows
		}
		sub = ds.Subset(idx)
	}
	var noise []float64
	if m.UsesGivenNoise() && sub.Noise != nil {
		noise = sub.Noise
		for _, v := range noise {
			if !(v > 0) { // allowed in training by some models, not in prediction
				noise = nil
				break
			}
		}
	}
	// A model that samples its test inputs needs no more than a few dozen
	// draws to tell a constant classifier; the saved model keeps its own.
	if n := m.Opts.Inputs.TestSamples; n > 50 {
		if err := m.SetTestSamples(50); err == nil {
			defer m.SetTestSamples(n)
		}
	}
	probs, err := m.PredictContext(ctx, sub.X, sub.N, noise)
	if err != nil {
		return explainNumerical("predicting the training rows", err)
	}
	s := models.Score(probs, sub.Y, m.C)
	most := 0
	var chanceNLL float64 // predicting the class frequencies for every row
	for _, n := range sub.ClassCounts() {
		most = max(most, n)
		if n > 0 {
			p := float64(n) / float64(sub.N)
			chanceNLL -= p * math.Log(p)
		}
	}
	chance := 1 - float64(most)/float64(sub.N)
	// A fit that learned nothing but a few rows (huge rows that squash the
	// rest to one point after standardisation: EP and the sparse models
	// then get those rows right and predict the class frequencies
	// elsewhere) beats chance by those rows' share of the error; its NLL
	// stays at the class frequencies' entropy.
	nothing := s.Error >= chance-0.01 || s.NLL >= chanceNLL-0.01 && s.Error >= chance-0.05
	if !nothing {
		return nil
	}
	scale := "inputs on an extreme scale (look for very large or very small values)"
	if a.noStandardize {
		scale = "inputs on an extreme scale (you gave --no-standardize)"
	}
	causes := "Likely causes: " + scale + ", too few --epochs or an unsuitable --lr, or labels unrelated to the inputs"
	if s.Error >= chance-0.01 {
		fmt.Fprintf(stderr, "gpc train: warning: the training error %.3f is no better than always predicting the most frequent class (%.3f): the model has learned nothing from the inputs. %s\n", s.Error, chance, causes)
		return nil
	}
	fmt.Fprintf(stderr, "gpc train: warning: the training NLL %.3f is no better than predicting the class frequencies (%.3f), and the error %.3f beats always predicting the most frequent class (%.3f) on a few rows only: the model has learned nothing from most inputs. %s\n", s.NLL, chanceNLL, s.Error, chance, causes)
	return nil
}

func noiseDesc(m *models.Model, s noiseSpec) string {
	if m.InputNoise() == nil {
		return "ignored by " + m.Name() + " (no input-noise part)"
	}
	return s.String()
}
