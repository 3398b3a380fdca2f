package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
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

// parseKind checks a --model value.
func parseKind(s string) (models.Kind, error) {
	if s == "" {
		return "", usagef("--model is required (one of %s)", kindList())
	}
	for _, k := range models.Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", usagef("unknown model %q (want one of %s)", s, kindList())
}

func kindList() string {
	names := make([]string, len(models.Kinds))
	for i, k := range models.Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

var kernelNames = []string{"se", "poly", "matern32", "matern52", "linear"}

// trainArgs is the parsed command line of gpc train.
type trainArgs struct {
	train, out string
	opts       models.Options
	noise      noiseSpec
	quiet      bool
}

func parseTrain(args []string, stdout io.Writer) (*trainArgs, error) {
	f := newFlags("train",
		"gpc train --train FILE.csv --model mgp|nimgp|nimgp-nn|nimgp-fo --out MODEL.json [flags]",
		`Train a classifier on FILE.csv (comma-separated, optional header, integer
class label 0..C−1 in the last column) and save it as JSON. Progress goes to
standard error. Ctrl-C stops training without writing a model.

--input-noise says how the inputs are corrupted: "learn" learns one variance
per input dimension (the default for the noise-aware models), a number is the
known variance of every input entry, and a file gives one variance per entry
(a CSV with the same rows and input columns as the training file). MGP
ignores input noise.`)
	var a trainArgs
	var model, noise, hidden string
	f.StringVar(&a.train, "train", "", "training data `FILE.csv` (required)")
	f.StringVar(&model, "model", "", "model `KIND`: "+kindList()+" (required)")
	f.StringVar(&a.out, "out", "", "where to write the trained model, `MODEL.json` (required)")
	f.StringVar(&noise, "input-noise", "", "input noise: `learn|VARIANCE|FILE.csv` (default learn for the noise-aware models)")
	epochs := f.Int("epochs", 100, "training `epochs`")
	batch := f.Int("batch", 50, "minibatch `size`")
	inducing := f.Int("inducing", 100, "inducing points per class, `M` (capped at the training size)")
	lr := f.Float64("lr", 0.01, "Adam learning `rate`")
	seed := f.Uint64("seed", 0, "random `seed` (initialisation, shuffling, sampling)")
	kernel := f.String("kernel", "se", "`kernel`: "+strings.Join(kernelNames, ", "))
	degree := f.Int("degree", 9, "polynomial kernel `degree` (with --kernel poly)")
	f.StringVar(&hidden, "hidden", "50", "nimgp-nn: hidden layer `sizes`, comma-separated")
	residual := f.Bool("residual", false, "nimgp-nn: start q(x) at the observed input (residual networks)")
	samples := f.Int("test-samples", 500, "nimgp, nimgp-nn: Monte Carlo `samples` of the noiseless test input per prediction")
	f.BoolVar(&a.quiet, "quiet", false, "no progress output")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return nil, err
	}
	if err := noArgs(pos); err != nil {
		return nil, err
	}
	if a.train == "" {
		return nil, usagef("--train FILE.csv is required")
	}
	if a.out == "" {
		return nil, usagef("--out MODEL.json is required")
	}
	kind, err := parseKind(model)
	if err != nil {
		return nil, err
	}
	switch {
	case *epochs < 1:
		return nil, usagef("--epochs %d: need at least 1 epoch", *epochs)
	case *batch < 1:
		return nil, usagef("--batch %d: the batch size must be at least 1", *batch)
	case *inducing < 1:
		return nil, usagef("--inducing %d: need at least 1 inducing point", *inducing)
	case !(*lr > 0) || math.IsInf(*lr, 0):
		return nil, usagef("--lr %g: the learning rate must be positive and finite", *lr)
	case *degree < 1:
		return nil, usagef("--degree %d: the polynomial degree must be at least 1", *degree)
	case *samples < 1:
		return nil, usagef("--test-samples %d: need at least 1 sample", *samples)
	}
	known := false
	for _, k := range kernelNames {
		known = known || k == *kernel
	}
	if !known {
		return nil, usagef("unknown kernel %q (want one of %s)", *kernel, strings.Join(kernelNames, ", "))
	}
	h, err := parseHidden(hidden)
	if err != nil {
		return nil, err
	}
	if a.noise, err = parseNoise(noise, true); err != nil {
		return nil, err
	}
	if !a.noise.given() && kind != models.MGP {
		a.noise.learn = true
	}
	a.opts = models.Options{
		Kind: kind, Inducing: *inducing, Kernel: *kernel, Degree: *degree,
		LearnNoise: a.noise.learn && kind != models.MGP, NoiseVar: a.noise.value,
		Hidden: h, Residual: *residual, TestSamples: *samples,
		Epochs: *epochs, Batch: *batch, LR: *lr, Seed: *seed,
	}
	return &a, nil
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseTrain(args, stdout)
	if err != nil {
		return err
	}
	ds, err := datasets.ReadCSV(a.train, datasets.CSVOptions{})
	if err != nil {
		return err
	}
	if ds.C < 2 {
		return fmt.Errorf("%s: every label is 0; a classifier needs at least two classes", a.train)
	}
	if a.noise.file != "" {
		if ds.Noise, err = datasets.ReadNoiseCSV(a.noise.file, ds.N, ds.D); err != nil {
			return err
		}
		if a.opts.Kind == models.NIMGP || a.opts.Kind == models.NIMGPNN {
			// Their ELBO has log V and 1/V terms, so a zero variance is
			// meaningless there (NIMGP_FO only adds V to the variance).
			for k, v := range ds.Noise {
				if v == 0 {
					return fmt.Errorf("%s: data row %d, column %d: noise variance 0; %s needs positive variances", a.noise.file, k/ds.D+1, k%ds.D+1, a.opts.Kind)
				}
			}
		}
	}
	m, err := models.New(a.opts)
	if err != nil {
		return err
	}
	var progress io.Writer
	if !a.quiet {
		progress = stderr
		fmt.Fprintf(stderr, "training %s on %s: %d rows, %d features, %d classes; input noise %s\n",
			a.opts.Kind, a.train, ds.N, ds.D, ds.C, noiseDesc(a.opts.Kind, a.noise))
	}
	start := time.Now()
	err = m.Fit(ctx, ds, models.FitConfig{Progress: progress, Warnings: stderr})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return fmt.Errorf("training interrupted; no model written to %s", a.out)
		}
		return err
	}
	if err := m.Save(a.out); err != nil {
		return err
	}
	if !a.quiet {
		fmt.Fprintf(stderr, "wrote %s (%s, trained in %.1f s)\n", a.out, a.opts.Kind, time.Since(start).Seconds())
	}
	return nil
}

func noiseDesc(k models.Kind, s noiseSpec) string {
	if k == models.MGP {
		return "ignored by mgp"
	}
	return s.String()
}
