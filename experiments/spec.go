// Package experiments runs declarative YAML experiment specifications that
// reproduce the tables and figures of the papers gpc implements, and writes
// reports that put our numbers beside the papers'.
//
// The generic part is here: a spec names a family of experiments, the data
// sets, the settings, the methods (a model preset or its parts, with
// training overrides merged key by key), the training budget, the tables
// with the paper's published value for every cell, the figures and a quick
// profile. Run expands the grid data sets × settings × methods × splits,
// runs it on parallel workers and appends one JSON line per finished run to
// DIR/results.jsonl, so an interrupted experiment resumes where it stopped;
// Report turns the lines into DIR/report.md, DIR/report.json and the PNG
// figures. What belongs to one paper — its families (how data are built
// and runs executed) and its figures — is registered by that paper's files
// (RegisterPaper): noisyinputs*.go for "Multi-class Gaussian Process
// Classification with Noisy Inputs" (families toy1d, synthetic, uci,
// mnist, astro, active; figures fig1 … fig8), svgpclass*.go for "Scalable
// Variational Gaussian Process Classification" (banana, raetsch,
// mnist_oddeven, airline), robust*.go for "Robust Multi-class Gaussian
// Process Classification" (robust_uci, robust_outliers, with the fitters
// of RMGPC, SMGPC and HTPC) and additive*.go for "Scalable Gaussian Process
// Classification with Additive Noise for Various Likelihoods" (liu_uci,
// liu_toy, liu_delta).
//
// Splice rewrites a markdown document's generated blocks from the committed
// results: each table with its computed verdict, the verdict rule, and the
// scoreboard of every table and figure of the papers (Scoreboard), so that
// docs/REPRODUCTION.md cannot drift from the results. A grid runs in shards
// (--shard i/n) on a cluster (experiments/cluster); a report names the
// shards still missing runs.
package experiments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/models"
)

// Spec is one experiment specification (one YAML file). Every field maps
// to a YAML key of the same name in snake_case; unknown keys are rejected so
// that a typo cannot silently fall back to a default.
type Spec struct {
	// Name identifies the spec (default output directory out/<name>).
	Name string `yaml:"name" json:"name"`
	// Title is a human-readable description printed in the report.
	Title string `yaml:"title" json:"title"`
	// Source says which version and section of the paper the values come from.
	Source string `yaml:"source" json:"source"`
	// Family selects how data are built and runs executed; each paper
	// registers its own (RegisterPaper, Families lists them): toy1d,
	// synthetic, uci, mnist, astro and active (noisy inputs); banana,
	// raetsch, mnist_oddeven and airline (scalable variational GPC);
	// robust_uci and robust_outliers (robust multi-class GPC); liu_uci,
	// liu_toy and liu_delta (additive noise).
	Family string `yaml:"family" json:"family"`
	// Generator says where generated problems come from: "" or "paper"
	// (a data file, or a generator as the paper specifies it) or "own" (a
	// generator of ours standing in for one the paper does not specify and
	// the authors did not publish).
	// Every table of an "own" spec is judged not comparable (VerdictRule).
	Generator string `yaml:"generator" json:"generator,omitempty"`
	// Seed offsets every random seed of the spec (split s uses Seed+s).
	Seed uint64 `yaml:"seed" json:"seed"`
	// Datasets are the data sets (uci: LoadUCI names; others: one label).
	Datasets []string `yaml:"datasets" json:"datasets"`
	// Protocol is how data are split, standardised and sized.
	Protocol Protocol `yaml:"protocol" json:"protocol"`
	// Training holds the defaults every method inherits.
	Training Training `yaml:"training" json:"training"`
	// Settings are the grid's setting axis (noise levels, D/N/C variants,
	// model variants for the families that read them…).
	Settings []Setting `yaml:"settings" json:"settings"`
	// Methods are the grid's method axis.
	Methods []Method `yaml:"methods" json:"methods"`
	// Tables describe the report, with the paper's values.
	Tables []Table `yaml:"tables" json:"tables"`
	// Figures lists the PNG figures to draw (fig1 … fig8).
	Figures []string `yaml:"figures" json:"figures"`
	// Quick is the reduced budget selected by --quick.
	Quick *Quick `yaml:"quick" json:"quick,omitempty"`
	// Notes is free text copied into the report (deviations, caveats).
	Notes string `yaml:"notes" json:"notes"`

	// Budget records what was actually run (after --quick and flags).
	Budget string `yaml:"-" json:"budget,omitempty"`
	// file and lines locate the spec's nodes for error messages.
	file string
	root *yaml.Node
}

// Protocol describes the data protocol of a family.
type Protocol struct {
	// Splits is the number of repetitions (random splits or data draws).
	Splits int `yaml:"splits" json:"splits"`
	// TestFraction is the test share of a random split (uci: 0.1).
	TestFraction float64 `yaml:"test_fraction" json:"test_fraction"`
	// NTrain and NTest size generated data (toy1d, synthetic).
	NTrain int `yaml:"n_train" json:"n_train"`
	NTest  int `yaml:"n_test" json:"n_test"`
	// MaxTrain and MaxTest subsample large data sets (0 = all rows); used
	// by quick profiles (MNIST, satellite).
	MaxTrain int `yaml:"max_train" json:"max_train"`
	MaxTest  int `yaml:"max_test" json:"max_test"`
	// Uncertainty is how ± is computed: "stderr" over splits (default),
	// "median2sd" (the median over splits ± 2 standard deviations) or
	// "bootstrap" over test points (Table 1).
	Uncertainty string `yaml:"uncertainty" json:"uncertainty"`
	// Trace records the hold-out NLL and error after every evaluation of a
	// full-batch objective, against the training time so far (the SVGP
	// paper's Figure 2); the scoring time is excluded from the clock.
	Trace bool `yaml:"trace" json:"trace,omitempty"`
	// CheckpointMinutes is how often a minibatch fit writes its checkpoint
	// (DIR/checkpoints/, removed once the run's result is stored), so that a
	// killed or requeued runner resumes the fit instead of redoing it: 0 is
	// every 10 minutes (DefaultCheckpointMinutes), negative turns
	// checkpoints off. It is not part of the run keys: a checkpoint does not
	// change a result.
	CheckpointMinutes float64 `yaml:"checkpoint_minutes" json:"checkpoint_minutes,omitempty"`
	// Active learning: initial training size, test size, pool size, number
	// of points added.
	InitialTrain int `yaml:"initial_train" json:"initial_train"`
	TestSize     int `yaml:"test_size" json:"test_size"`
	PoolSize     int `yaml:"pool_size" json:"pool_size"`
	Steps        int `yaml:"steps" json:"steps"`
}

// Training holds the model options shared by all methods of a spec.
type Training struct {
	Epochs int `yaml:"epochs" json:"epochs"`
	// MinSteps is a floor on the optimiser steps of every fit: a run trains
	// max(epochs, ⌈min_steps / steps per epoch⌉) epochs, where an epoch is
	// ⌈N_train / batch⌉ minibatch steps (see epochsWithFloor). An epoch
	// budget gives small training sets few steps — at batch 100, 40 epochs
	// are 40 Adam steps at N = 100 but 200 at N = 500 — so a spec that
	// varies N can ask for equal steps instead. 0 (or absent) means no
	// floor. It is part of the run key, omitted when 0 so that budgets
	// without it keep their keys. Not for the active family, whose continued
	// steps are budgeted by step_epochs.
	MinSteps int     `yaml:"min_steps" json:"min_steps,omitempty"`
	Batch    int     `yaml:"batch" json:"batch"`
	LR       float64 `yaml:"lr" json:"lr"`
	// Inducing is M; with InducingFrac > 0, M = min(Inducing, ⌊frac·N_total⌋)
	// as the paper's min(100, 5% of N).
	Inducing     int     `yaml:"inducing" json:"inducing"`
	InducingFrac float64 `yaml:"inducing_frac" json:"inducing_frac"`
	TestSamples  int     `yaml:"test_samples" json:"test_samples"`
	// Kernel is a kernel expression over the registered kernels
	// (kernels.Parse): se (the default), poly, matern52+linear, se*linear, …
	Kernel string `yaml:"kernel" json:"kernel"`
	// Degree is the degree of a kernel that has one and is given none in
	// Kernel (poly: default 9).
	Degree     int   `yaml:"degree" json:"degree"`
	Hidden     []int `yaml:"hidden" json:"hidden"`
	Residual   bool  `yaml:"residual" json:"residual"`
	Quadrature int   `yaml:"quadrature" json:"quadrature"`
	// Optimizer is the svi engine's optimiser: adam (default), adadelta
	// (lr is its step rate) or lbfgs (full batch, epochs = iterations).
	Optimizer string `yaml:"optimizer" json:"optimizer,omitempty"`
	// FreezeHyper and FreezeZ hold the kernel hyper-parameters, and the
	// inducing inputs, fixed for that many first epochs (L-BFGS: iterations).
	FreezeHyper int `yaml:"freeze_hyper" json:"freeze_hyper,omitempty"`
	FreezeZ     int `yaml:"freeze_z" json:"freeze_z,omitempty"`
	// LocalAdam is how NIMGP's per-row q(x_i) are stepped: dense (the
	// default, TensorFlow's Adam as the authors ran it) or lazy.
	LocalAdam string `yaml:"local_adam" json:"local_adam,omitempty"`
	// StepEpochs is the retraining budget after each active-learning step.
	StepEpochs int `yaml:"step_epochs" json:"step_epochs"`
	// StepTraining is how active learning retrains after each added point:
	// "continue" (default) resumes the previous model's training
	// (models.Model.Continue), "scratch" fits a new model.
	StepTraining string `yaml:"step_training" json:"step_training"`
	// Scaling is how the family prepares the inputs before training: empty
	// for its own rule (the noisy-input paper's families standardise with
	// the training rows' mean and standard deviation), or raw to keep them
	// as the data set gives them (MNIST's pixels in [0, 1], as the authors'
	// MGPC MNIST script trains). Injected input noise is added after it.
	Scaling string `yaml:"scaling" json:"scaling,omitempty"`
}

// Setting is one value of the grid's setting axis.
type Setting struct {
	// Name labels the setting in keys and tables, e.g. "noise=0.1".
	Name string `yaml:"name" json:"name"`
	// Noise is the injected input-noise variance (after standardisation).
	Noise float64 `yaml:"noise" json:"noise"`
	// LearnNoise learns one shared variance per dimension (false: given).
	LearnNoise bool `yaml:"learn_noise" json:"learn_noise"`
	// NoiseInit is the initial learned variance (0: the Training default 0.1).
	NoiseInit float64 `yaml:"noise_init" json:"noise_init"`
	// D, C and NTrain vary the synthetic problems (0: protocol defaults).
	D      int `yaml:"d" json:"d"`
	C      int `yaml:"c" json:"c"`
	NTrain int `yaml:"n_train" json:"n_train"`
	// LengthscaleScaling is the synthetic generator's rule for the squared
	// length-scale as D grows (datasets.LengthscaleScaling: fixed, sqrt-d
	// or linear-d; empty means fixed, §5.2 as written). It lives on the
	// setting, not the protocol, so that it is part of the run key: results
	// of one generator are never resumed as results of another. omitempty
	// keeps the keys of settings that do not use it unchanged.
	LengthscaleScaling string `yaml:"lengthscale_scaling" json:"lengthscale_scaling,omitempty"`
	// SqLengthscale replaces the synthetic generator's ℓ_j (the squared
	// length-scale at D = 2; 0 means §5.2's 2), to ask how the paper's
	// numbers depend on it. omitempty keeps other settings' keys unchanged.
	SqLengthscale float64 `yaml:"sq_lengthscale" json:"sq_lengthscale,omitempty"`
	// Columns selects the astrophysics inputs: table9 (6) or b4 (4).
	Columns string `yaml:"columns" json:"columns"`
	// Selection is the active-learning rule: entropy or random.
	Selection string `yaml:"selection" json:"selection"`
	// LabelNoise is the fraction η of training rows whose label is redrawn
	// uniformly from all classes (the robust paper's Table 2).
	LabelNoise float64 `yaml:"label_noise" json:"label_noise,omitempty"`

	// The model fields below vary the model itself along the setting axis,
	// so that an ablation is a list of settings of one spec rather than one
	// spec per variant. Each is optional (OptionalFields): a family reads it
	// only if it says so (Family.Reads), and empty or false leaves every
	// method as the spec's training and the method's preset make it; all are
	// omitempty, so the run keys of settings without them are unchanged.

	// Kernel, if set, is the kernel expression (kernels.Parse) of this
	// setting's runs, replacing training.kernel and the methods' own.
	Kernel string `yaml:"kernel" json:"kernel,omitempty"`
	// Whitened trains q(u) in the whitened parametrisation u = L_Z v,
	// q(v) = N(m, SSᵀ) (models.PosteriorOptions.Whitened); false keeps the
	// method's own (every preset's default is unwhitened).
	Whitened bool `yaml:"whitened" json:"whitened,omitempty"`
	// ZInit, if set, is how the inducing inputs start
	// (models.PosteriorOptions.ZInit: random training rows or k-means
	// centres), replacing the preset's.
	ZInit string `yaml:"z_init" json:"z_init,omitempty"`
	// Standardize standardises every input column with the training rows'
	// mean and standard deviation inside the model
	// (models.InputOptions.Standardize; a constant column is only centred),
	// instead of the inputs as the data set gives them.
	Standardize bool `yaml:"standardize" json:"standardize,omitempty"`
}

// modelFields reports whether the setting sets any of the fields that vary
// the model (Kernel, Whitened, ZInit, Standardize).
func (st Setting) modelFields() bool {
	return st.Kernel != "" || st.Whitened || st.ZInit != "" || st.Standardize
}

// applyModel puts a setting's model fields on a model's options; the
// kernel reaches the options through the run's budget (Spec.budgetFor).
func (st Setting) applyModel(o *models.Options) {
	if st.Whitened {
		o.Posterior.Whitened = true
	}
	if st.ZInit != "" {
		o.Posterior.ZInit = st.ZInit
	}
	if st.Standardize {
		o.Inputs.Standardize, o.Inputs.NoStandardize = true, false
	}
}

// Method is one value of the grid's method axis.
type Method struct {
	// Name is the display name used in tables (MGP, NIMGP_NN, …).
	Name string `yaml:"name" json:"name"`
	// Model is a preset (models.PresetNames: mgp, nimgp, nimgp-nn,
	// nimgp-fo, svgp, …), or empty when the parts below define the model.
	Model string `yaml:"model" json:"kind"`
	// Kind is the older name of Model, still accepted.
	Kind string `yaml:"kind" json:"-"`
	// Likelihood and Inputs name parts explicitly (a registered likelihood
	// and input model); with a preset they must be ones it accepts.
	Likelihood string `yaml:"likelihood" json:"likelihood,omitempty"`
	Inputs     string `yaml:"inputs" json:"inputs,omitempty"`
	// Variant modifies MGP's training data: augmented or sampling (T11/T12);
	// sampling-mc is sampling that also averages its predictions over draws
	// of the test inputs from N(x̃, V).
	Variant string `yaml:"variant" json:"variant"`
	// Training overrides the spec's training settings for this method:
	// every key given under it (any key of the spec's training:) replaces
	// the spec's value, merged field by field (Spec.trainingFor).
	Training *Training `yaml:"training" json:"training,omitempty"`
	// Set lists the keys given under training:, read from the YAML (and
	// kept in the resolved spec.json, which a report and a resumed run
	// read back).
	Set []string `yaml:"-" json:"training_keys,omitempty"`
}

// Table is one table of the report.
type Table struct {
	// ID is the paper's table number, e.g. "T5".
	ID    string `yaml:"id" json:"id"`
	Title string `yaml:"title" json:"title"`
	// Kind is results (default), confusion, data (Table 4) or params (Table 19).
	Kind string `yaml:"kind" json:"kind"`
	// Metric is nll, error, seconds_per_epoch or learned_noise (results tables).
	Metric string `yaml:"metric" json:"metric"`
	// Ranks adds a mean-rank row per setting (Tables 5/6).
	Ranks bool `yaml:"ranks" json:"ranks"`
	// Averages adds, per setting, a row of averages over the data sets (the
	// additive-noise paper's Table II): each method's mean over the data
	// sets that have both its runs and a paper value, beside the paper's
	// mean over the same sets.
	Averages bool `yaml:"averages" json:"averages,omitempty"`
	// Settings restricts the rows to these settings (default all).
	Settings []string `yaml:"settings" json:"settings"`
	// Methods are the columns (default all methods of the spec).
	Methods []string `yaml:"methods" json:"methods"`
	// Paper holds the published values.
	Paper []PaperRow `yaml:"paper" json:"paper"`
	// Note is printed under the table.
	Note string `yaml:"note" json:"note"`
	// PaperPM says what the paper's ± is, for the computed verdicts: se
	// (a standard error, the default), sd (a standard deviation over
	// PaperN runs) or 2sd (two standard deviations over PaperN runs around
	// a median), or none.
	PaperPM string `yaml:"paper_pm" json:"paper_pm,omitempty"`
	// PaperN is the number of runs behind the paper's ± when it is sd or 2sd.
	PaperN int `yaml:"paper_n" json:"paper_n,omitempty"`
	// TestAgainst names a method: cells of other methods whose per-split
	// values differ from its by a two-sided Wilcoxon signed-rank test at
	// p < 0.01 are marked ◁ (the robust paper's Table 2).
	TestAgainst string `yaml:"test_against" json:"test_against,omitempty"`
	// DiffAgainst names a setting or a method of a results table, the
	// reference of an ablation: under the table a second one gives every
	// other cell's paired difference from the reference cell of its row
	// (a setting) or column (a method), mean ± standard error, paired over
	// the splits both have or, for single runs that kept per-point losses,
	// over the test points they share.
	DiffAgainst string `yaml:"diff_against" json:"diff_against,omitempty"`
	// Instances are 1-based rows of the data set (file order) that an
	// instances table follows (each method's average test error on them
	// over the splits where they are test rows), or that an outliers table
	// expects above probability 0.5.
	Instances []int `yaml:"instances" json:"instances,omitempty"`
	// Dataset is the data set whose rows Instances number.
	Dataset string `yaml:"dataset" json:"dataset,omitempty"`
	// Leader is the method family (a method name's first word) holding the
	// paper's efficient frontier, for frontier tables.
	Leader string `yaml:"leader" json:"leader,omitempty"`
	// LargeAbove marks our cells above it "Large", the paper's word for a
	// value dominated by hugely confident wrong predictions (0: never).
	LargeAbove float64 `yaml:"large_above" json:"large_above,omitempty"`
	// NotComparable, when set, says why our runs are not the paper's
	// experiment (e.g. a generator that could not be recovered): the table's
	// verdict is then "not reproduced" with that reason, whatever the values
	// give, and the value comparison is still shown beside it.
	NotComparable string `yaml:"not_comparable" json:"not_comparable,omitempty"`
}

// PaperRow holds the paper's values for one row of a table: one value per
// column (Table.Methods order; for confusion tables, per true class in the
// order bll, fsrq, psr as printed; for data tables N, D, C). A value is
// "mean±err", "mean", "-" (not reported) or free text.
type PaperRow struct {
	Setting string   `yaml:"setting" json:"setting"`
	Dataset string   `yaml:"dataset" json:"dataset"`
	Method  string   `yaml:"method" json:"method"`
	Pred    string   `yaml:"pred" json:"pred"`
	Values  []string `yaml:"values" json:"values"`
}

// Quick is the reduced budget of --quick: every non-zero field overrides
// the spec; list fields restrict the grid.
type Quick struct {
	Splits      int      `yaml:"splits" json:"splits"`
	Epochs      int      `yaml:"epochs" json:"epochs"`
	MinSteps    int      `yaml:"min_steps" json:"min_steps,omitempty"` // replaces training.min_steps (Training.MinSteps)
	StepEpochs  int      `yaml:"step_epochs" json:"step_epochs"`
	Batch       int      `yaml:"batch" json:"batch"`
	LR          float64  `yaml:"lr" json:"lr"`
	Inducing    int      `yaml:"inducing" json:"inducing"`
	TestSamples int      `yaml:"test_samples" json:"test_samples"`
	NTrain      int      `yaml:"n_train" json:"n_train"`
	NTest       int      `yaml:"n_test" json:"n_test"`
	MaxTrain    int      `yaml:"max_train" json:"max_train"`
	MaxTest     int      `yaml:"max_test" json:"max_test"`
	Steps       int      `yaml:"steps" json:"steps"`
	PoolSize    int      `yaml:"pool_size" json:"pool_size"`
	TestSize    int      `yaml:"test_size" json:"test_size"`
	Datasets    []string `yaml:"datasets" json:"datasets"`
	Settings    []string `yaml:"settings" json:"settings"`
	Methods     []string `yaml:"methods" json:"methods"`
}

// Families, kinds and names the validator accepts.
var (
	variants     = []string{"", "augmented", "sampling", "sampling-mc"}
	tableKinds   = []string{"", "results", "confusion", "data", "params", "frontier", "instances", "outliers"}
	tableMetrics = []string{"nll", "error", "bcr", "seconds_per_epoch", "learned_noise"}
)

// SpecError is a problem in a spec file, located by line and column.
type SpecError struct {
	File         string
	Line, Column int
	Msg          string
}

// Error implements error as file:line:col: message, the form editors jump to.
func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// LoadSpec reads and validates a spec file.
func LoadSpec(path string) (*Spec, error) {
	b, err := readSpecFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSpec(path, b)
}

// readSpecFile reads a spec (an experiment's or a comparison's) of at most
// MaxSpecBytes.
func readSpecFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read at most one byte past the limit: a huge file is refused
	// without being held.
	b, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxSpecBytes {
		return nil, fmt.Errorf("%s: a spec is at most %d KiB; this file is larger (is it a spec?)", path, MaxSpecBytes>>10)
	}
	return b, nil
}

// quotedExcerpts returns args with each string that format quotes (%q)
// cut to datasets.Excerpt: those are the spec's own values, which can be
// as long as the file, while the lists and reasons a message gives with
// %s or %v are gpc's and stay whole.
func quotedExcerpts(format string, args []any) []any {
	out := slices.Clone(args)
	arg := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		// Flags, width and precision come before the verb; %% takes no
		// argument. (Explicit argument indexes are not used here.)
		for i < len(format) && strings.IndexByte("+-# 0123456789.*", format[i]) >= 0 {
			if format[i] == '*' {
				arg++
			}
			i++
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		if format[i] == 'q' && arg < len(out) {
			if v, ok := out[arg].(string); ok {
				out[arg] = datasets.Excerpt(v)
			}
		}
		arg++
	}
	return out
}

// cutSpecValues cuts to datasets.Excerpt every long scalar of the spec
// document that msg repeats, bare or quoted: a name printed with %s, or
// quoted inside another package's error (an unknown model, say), is as
// long as the spec let it be.
func cutSpecValues(msg string, root *yaml.Node) string {
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode: // a value longer than an excerpt is what the message may echo
			if len(n.Value) > 40 {
				if q := strconv.Quote(n.Value); strings.Contains(msg, q) {
					msg = strings.ReplaceAll(msg, q, strconv.Quote(datasets.Excerpt(n.Value)))
				}
				msg = strings.ReplaceAll(msg, n.Value, datasets.Excerpt(n.Value))
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return msg
}

// yamlKeyEcho matches the YAML decoder's messages that quote a key whole
// (an unknown or repeated key), with the key as the second group.
var yamlKeyEcho = regexp.MustCompile(`^(line \d+: (?:field |mapping key ))(.*)( (?:not found in type|already set in type|already defined at line) [^ ]+)$`)

// cutYAMLError cuts the keys the YAML decoder's messages quote to
// datasets.Excerpt: a spec's key can be as long as the file (values it
// quotes, the decoder itself shortens).
func cutYAMLError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	cut := &yaml.TypeError{Errors: make([]string, len(te.Errors))}
	for i, m := range te.Errors {
		if g := yamlKeyEcho.FindStringSubmatch(m); g != nil {
			m = g[1] + datasets.Excerpt(g[2]) + g[3]
		}
		cut.Errors[i] = m
	}
	return cut
}

// MaxSpecBytes bounds a spec file: the papers' largest spec is a few
// kilobytes.
const MaxSpecBytes = 1 << 20

// ParseSpec decodes a spec strictly (unknown keys are errors with their
// line) and validates it (semantic errors carry the offending node's line).
func ParseSpec(file string, b []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, cutYAMLError(err))
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s.file, s.root = file, &root
	if err := wholeNumbers(file, &root, reflect.TypeOf(s)); err != nil {
		return nil, err
	}
	if err := finiteNumbers(file, &root); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// wholeNumbers rejects a fractional number given for an integer field: the
// YAML decoder silently truncates "epochs: 2.7" to 2, which would run a
// different experiment than the one written. It walks the document beside
// the Go type, by yaml tag names.
func wholeNumbers(file string, n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNode(n, yaml.DocumentNode) {
		for _, c := range n.Content {
			if err := wholeNumbers(file, c, t); err != nil {
				return err
			}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if isNode(n, yaml.ScalarNode) && n.Tag == "!!float" {
			if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != math.Trunc(f) {
				return &SpecError{File: file, Line: n.Line, Column: n.Column,
					Msg: fmt.Sprintf("%s must be a whole number", datasets.Excerpt(n.Value))}
			}
		}
	case reflect.Slice, reflect.Array:
		if isNode(n, yaml.SequenceNode) {
			for _, c := range n.Content {
				if err := wholeNumbers(file, c, t.Elem()); err != nil {
					return err
				}
			}
		}
	case reflect.Struct:
		if !isNode(n, yaml.MappingNode) {
			return nil
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if ft, ok := fields[n.Content[i].Value]; ok {
				if err := wholeNumbers(file, n.Content[i+1], ft); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// finiteNumbers rejects .inf and .nan anywhere in a spec: no setting is
// meaningful at infinity, and a NaN would pass every range check (all its
// comparisons are false) and fail only later, inside a run or its JSON.
func finiteNumbers(file string, n *yaml.Node) error {
	if isNode(n, yaml.ScalarNode) && n.ShortTag() == "!!float" {
		v := strings.ToLower(strings.TrimLeft(n.Value, "+-"))
		f, _ := strconv.ParseFloat(n.Value, 64) // 1e999 parses to ±Inf with ErrRange
		if v == ".inf" || v == ".nan" || math.IsInf(f, 0) {
			return &SpecError{File: file, Line: n.Line, Column: n.Column,
				Msg: fmt.Sprintf("%s is not a finite number", datasets.Excerpt(n.Value))}
		}
	}
	for _, c := range n.Content {
		if err := finiteNumbers(file, c); err != nil {
			return err
		}
	}
	return nil
}

// MaxRuns bounds a grid's size: far beyond any paper's budget (the largest,
// 100 splits of every table, is some 10⁵ runs), it stops a typo such as
// "splits: 1e8" before the grid is built in memory.
const MaxRuns = 1_000_000

// safeName is what a spec's name may be: it becomes a directory under out/.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// errAt builds a SpecError at the node reached by path (map keys and list
// indices); if the path stops early, the deepest node found is used, so the
// message still points near the problem.
func (s *Spec) errAt(path []any, format string, args ...any) error {
	e := &SpecError{File: s.file, Msg: fmt.Sprintf(format, quotedExcerpts(format, args)...)}
	if s.root == nil {
		return e
	}
	e.Msg = cutSpecValues(e.Msg, s.root)
	n := s.root
	if isNode(n, yaml.DocumentNode) && len(n.Content) > 0 {
		n = n.Content[0]
	}
	e.Line, e.Column = n.Line, n.Column
	for _, p := range path {
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if isNode(n, yaml.MappingNode) {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next = n.Content[i+1]
						break
					}
				}
			}
		case int:
			if isNode(n, yaml.SequenceNode) && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			break
		}
		n = next
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// keysAt returns the keys of the mapping at path (none if absent).
func (s *Spec) keysAt(path ...any) []string {
	if s.root == nil {
		return nil
	}
	n := s.root
	if isNode(n, yaml.DocumentNode) && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			for i := 0; isNode(n, yaml.MappingNode) && i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
				}
			}
		case int:
			if isNode(n, yaml.SequenceNode) && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	var keys []string
	for i := 0; isNode(n, yaml.MappingNode) && i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

// trainingFor is the spec's training settings with a method's overrides
// applied: each key the method gives replaces the field of the same yaml
// key, whatever its type, so a new training setting needs no merge code.
func (s *Spec) trainingFor(m Method) Training {
	t := s.Training
	if m.Training == nil {
		return t
	}
	dst, src := reflect.ValueOf(&t).Elem(), reflect.ValueOf(m.Training).Elem()
	for i := 0; i < dst.NumField(); i++ {
		key, _, _ := strings.Cut(dst.Type().Field(i).Tag.Get("yaml"), ",")
		if slices.Contains(m.Set, key) {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return t
}

// validate checks everything the YAML decoder cannot: allowed values,
// references between sections, and that every paper row has the right
// number of values.
func (s *Spec) validate() error {
	if s.Name == "" {
		return s.errAt(nil, "missing name")
	}
	if !safeName.MatchString(s.Name) || strings.Contains(s.Name, "..") {
		return s.errAt([]any{"name"}, "name %q: use letters, digits, '.', '_' and '-' only (it names the output directory out/<name>)", s.Name)
	}
	for i, d := range s.Datasets {
		if j := slices.Index(s.Datasets, d); j < i {
			return s.errAt([]any{"datasets", i}, "data set %q is listed twice (entries %d and %d)", d, j+1, i+1)
		}
	}
	if s.Generator != "" && s.Generator != "paper" && s.Generator != "own" {
		return s.errAt([]any{"generator"}, "generator %q: want paper or own", s.Generator)
	}
	if _, ok := familyRun(s.Family); !ok {
		return s.errAt([]any{"family"}, "family %q: want one of %s", s.Family, strings.Join(Families(), ", "))
	}
	if v := familyValidator(s.Family); v != nil {
		if err := v(s); err != nil {
			return err
		}
	}
	if len(s.Datasets) == 0 {
		return s.errAt([]any{"datasets"}, "no datasets")
	}
	fam, _ := familyOf(s.Family)
	p := s.Protocol
	if p.Splits < 1 {
		return s.errAt([]any{"protocol", "splits"}, "protocol.splits must be ≥ 1")
	}
	if n := gridSize(len(s.Datasets), len(s.Settings), len(s.Methods), p.Splits); n > MaxRuns {
		return s.errAt([]any{"protocol", "splits"}, "the grid would hold %.3g runs (%d data sets × %d settings × %d methods × %d splits), more than the limit %d", n, len(s.Datasets), len(s.Settings), len(s.Methods), p.Splits, MaxRuns)
	}
	if !slices.Contains([]string{"", "stderr", "bootstrap", "median2sd"}, p.Uncertainty) {
		return s.errAt([]any{"protocol", "uncertainty"}, "uncertainty %q: want stderr, bootstrap or median2sd", p.Uncertainty)
	}
	if math.IsNaN(p.CheckpointMinutes) || math.IsInf(p.CheckpointMinutes, 0) || p.CheckpointMinutes > 7*24*60 {
		return s.errAt([]any{"protocol", "checkpoint_minutes"}, "checkpoint_minutes %v: want minutes between checkpoints (0: every %d, negative: none)", p.CheckpointMinutes, DefaultCheckpointMinutes)
	}
	if p.TestFraction < 0 || p.TestFraction >= 1 {
		return s.errAt([]any{"protocol", "test_fraction"}, "test_fraction %v outside [0, 1)", p.TestFraction)
	}
	if fam.Validate != nil {
		if err := fam.Validate(s); err != nil {
			return err
		}
	}
	// unread refuses an optional field the family does not read.
	unread := func(at []any, field string) error {
		if slices.Contains(fam.Reads, field) {
			return nil
		}
		short := field[strings.IndexByte(field, '.')+1:]
		by := readersOf(field)
		if len(by) == 0 {
			return s.errAt(at, "%s does not apply to the %s family (no registered family reads it)", short, s.Family)
		}
		return s.errAt(at, "%s does not apply to the %s family (the families that read it: %s)", short, s.Family, strings.Join(by, ", "))
	}
	t := s.Training
	if t.Epochs < 1 || t.Batch < 1 || !(t.LR > 0) || t.Inducing < 1 {
		return s.errAt([]any{"training"}, "training needs epochs, batch, inducing ≥ 1 and lr > 0")
	}
	switch {
	case t.StepTraining != "" && t.StepTraining != "continue" && t.StepTraining != "scratch":
		return s.errAt([]any{"training", "step_training"}, "step_training %q: want continue or scratch", t.StepTraining)
	case t.StepTraining != "":
		if err := unread([]any{"training", "step_training"}, "training.step_training"); err != nil {
			return err
		}
	}
	switch {
	case t.MinSteps < 0:
		return s.errAt([]any{"training", "min_steps"}, "min_steps %d must be ≥ 0 (0: no floor on optimiser steps)", t.MinSteps)
	case t.MinSteps > 0:
		if err := unread([]any{"training", "min_steps"}, "training.min_steps"); err != nil {
			return err
		}
	}
	if t.InducingFrac < 0 || t.InducingFrac > 1 {
		return s.errAt([]any{"training", "inducing_frac"}, "inducing_frac %v outside [0, 1]", t.InducingFrac)
	}
	if t.LocalAdam != "" && t.LocalAdam != "dense" && t.LocalAdam != "lazy" {
		return s.errAt([]any{"training", "local_adam"}, "local_adam %q: want dense or lazy", t.LocalAdam)
	}
	if err := checkScaling([]any{"training", "scaling"}, t.Scaling, s, unread); err != nil {
		return err
	}
	if t.Kernel != "" {
		if _, err := kernels.Build(t.Kernel, kernels.Config{Name: "probe", D: 1, Degree: t.Degree}); err != nil {
			return s.errAt([]any{"training", "kernel"}, "kernel %q: %v (registered: %s)", t.Kernel, err, kernels.Describe())
		}
	}
	if len(s.Settings) == 0 {
		return s.errAt([]any{"settings"}, "no settings")
	}
	seen := map[string]bool{}
	for i, st := range s.Settings {
		at := []any{"settings", i}
		switch {
		case st.Name == "":
			return s.errAt(at, "setting without name")
		case seen[st.Name]:
			return s.errAt(append(at, "name"), "duplicate setting %q", st.Name)
		case !(st.Noise >= 0) || math.IsInf(st.Noise, 0):
			return s.errAt(append(at, "noise"), "noise variance %v must be finite and ≥ 0", st.Noise)
		case st.NoiseInit < 0:
			return s.errAt(append(at, "noise_init"), "noise_init %v must be > 0", st.NoiseInit)
		case st.D < 0 || st.C < 0 || st.NTrain < 0:
			return s.errAt(at, "d, c and n_train must be ≥ 0")
		case st.C == 1:
			return s.errAt(append(at, "c"), "c = 1: need at least 2 classes")
		case st.LengthscaleScaling != "" && unread(append(at, "lengthscale_scaling"), "settings.lengthscale_scaling") != nil:
			return unread(append(at, "lengthscale_scaling"), "settings.lengthscale_scaling")
		case !slices.Contains(datasets.LengthscaleScalings(), datasets.LengthscaleScaling(st.LengthscaleScaling)) && st.LengthscaleScaling != "":
			return s.errAt(append(at, "lengthscale_scaling"), "lengthscale_scaling %q: want one of %v", st.LengthscaleScaling, datasets.LengthscaleScalings())
		case st.SqLengthscale != 0 && unread(append(at, "sq_lengthscale"), "settings.sq_lengthscale") != nil:
			return unread(append(at, "sq_lengthscale"), "settings.sq_lengthscale")
		case !(st.SqLengthscale >= 0) || math.IsInf(st.SqLengthscale, 0):
			return s.errAt(append(at, "sq_lengthscale"), "sq_lengthscale %v must be finite and > 0 (or absent)", st.SqLengthscale)
		case st.Columns != "" && st.Columns != "table9" && st.Columns != "b4":
			return s.errAt(append(at, "columns"), "columns %q: want table9 or b4", st.Columns)
		case !(st.LabelNoise >= 0 && st.LabelNoise <= 1):
			return s.errAt(append(at, "label_noise"), "label_noise %v outside [0, 1]", st.LabelNoise)
		case st.Selection != "" && st.Selection != "entropy" && st.Selection != "random":
			return s.errAt(append(at, "selection"), "selection %q: want entropy or random", st.Selection)
		case st.Selection != "" && unread(append(at, "selection"), "settings.selection") != nil:
			return unread(append(at, "selection"), "settings.selection")
		}
		if err := s.validateModelFields(i, st, unread); err != nil {
			return err
		}
		seen[st.Name] = true
	}
	if len(s.Methods) == 0 {
		return s.errAt([]any{"methods"}, "no methods")
	}
	mseen := map[string]bool{}
	for i := range s.Methods {
		m := &s.Methods[i]
		at := []any{"methods", i}
		if len(m.Kind) > 0 { // the old key
			if m.Model != "" && m.Model != m.Kind {
				return s.errAt(append(at, "kind"), "method gives model %q and kind %q; kind is the old name of model, give one", m.Model, m.Kind)
			}
			m.Model, m.Kind = m.Kind, ""
		}
		switch {
		case m.Name == "":
			return s.errAt(at, "method without name")
		case mseen[m.Name]:
			return s.errAt(append(at, "name"), "duplicate method %q", m.Name)
		case !slices.Contains(variants, m.Variant):
			return s.errAt(append(at, "variant"), "variant %q: want augmented, sampling or sampling-mc", m.Variant)
		case m.Variant != "" && methodInputs(*m) != "observed":
			return s.errAt(append(at, "variant"), "variant %q applies to models with observed inputs only (this one has %s inputs)", m.Variant, methodInputs(*m))
		}
		if m.Training != nil {
			m.Set = s.keysAt("methods", i, "training")
			t := *m.Training
			if t.LR < 0 || t.Epochs < 0 || t.Batch < 0 || t.TestSamples < 0 || t.Inducing < 0 {
				return s.errAt(append(at, "training"), "negative training override")
			}
			if err := checkScaling(append(at, "training", "scaling"), t.Scaling, s, unread); err != nil {
				return err
			}
		}
		if _, ok := fitterFor(m.Model); ok {
			if m.Likelihood != "" || m.Inputs != "" || m.Variant != "" {
				return s.errAt(append(at, "model"), "method %s: model %s takes no likelihood, inputs or variant", m.Name, m.Model)
			}
		} else if _, err := models.New(methodOptions(*m)); err != nil {
			return s.errAt(append(at, "model"), "method %s: %v", m.Name, err)
		}
		mseen[m.Name] = true
	}
	for i, f := range s.Figures {
		if _, ok := figureFunc(f); !ok {
			return s.errAt([]any{"figures", i}, "figure %q: want one of %s", f, strings.Join(Figures(), ", "))
		}
	}
	for i, tb := range s.Tables {
		if err := s.validateTable(i, tb, seen, mseen); err != nil {
			return err
		}
	}
	if q := s.Quick; q != nil {
		for i, d := range q.Datasets {
			if !slices.Contains(s.Datasets, d) {
				return s.errAt([]any{"quick", "datasets", i}, "quick data set %q is not in datasets", d)
			}
		}
		for i, st := range q.Settings {
			if !seen[st] {
				return s.errAt([]any{"quick", "settings", i}, "quick setting %q is not in settings", st)
			}
		}
		for i, m := range q.Methods {
			if !mseen[m] {
				return s.errAt([]any{"quick", "methods", i}, "quick method %q is not in methods", m)
			}
		}
		switch {
		case q.MinSteps < 0:
			return s.errAt([]any{"quick", "min_steps"}, "quick min_steps %d must be ≥ 0 (0: inherit training.min_steps)", q.MinSteps)
		case q.MinSteps > 0:
			if err := unread([]any{"quick", "min_steps"}, "quick.min_steps"); err != nil {
				return err
			}
		}
		if q.Splits < 0 || q.Epochs < 0 || q.LR < 0 || q.Batch < 0 || q.Inducing < 0 || q.TestSamples < 0 {
			return s.errAt([]any{"quick"}, "negative quick budget")
		}
	}
	return nil
}

// validateModelFields checks a setting's model fields (Setting.Kernel,
// Whitened, ZInit, Standardize): each must be read by the spec's family,
// the kernel must build, and every method's model must accept the setting,
// as models.New decides.
func (s *Spec) validateModelFields(i int, st Setting, unread func(at []any, field string) error) error {
	at := []any{"settings", i}
	for _, f := range []struct {
		set        bool
		key, field string
	}{
		{st.Kernel != "", "kernel", "settings.kernel"},
		{st.Whitened, "whitened", "settings.whitened"},
		{st.ZInit != "", "z_init", "settings.z_init"},
		{st.Standardize, "standardize", "settings.standardize"},
	} {
		if f.set {
			if err := unread(append(slices.Clone(at), f.key), f.field); err != nil {
				return err
			}
		}
	}
	if !st.modelFields() {
		return nil
	}
	if st.Kernel != "" {
		if _, err := kernels.Build(st.Kernel, kernels.Config{Name: "probe", D: 1, Degree: s.Training.Degree}); err != nil {
			return s.errAt(append(at, "kernel"), "setting %s: kernel %q: %v (registered: %s)", st.Name, st.Kernel, err, kernels.Describe())
		}
	}
	for j, m := range s.Methods {
		if _, ok := fitterFor(m.Model); ok {
			return s.errAt(at, "setting %s: method %s: model %s is not a models composition; kernel, whitened, z_init and standardize do not apply to it", st.Name, m.Name, m.Model)
		}
		o := methodOptions(m)
		st.applyModel(&o)
		if _, err := models.New(o); err != nil {
			return s.errAt(at, "setting %s with method %s (methods[%d]): %v", st.Name, m.Name, j, err)
		}
	}
	return nil
}

func (s *Spec) validateTable(i int, tb Table, settings, methods map[string]bool) error {
	at := []any{"tables", i}
	if tb.ID == "" {
		return s.errAt(at, "table without id")
	}
	if !slices.Contains(tableKinds, tb.Kind) {
		return s.errAt(append(at, "kind"), "table kind %q: want results, confusion, data, params, frontier, instances or outliers", tb.Kind)
	}
	if slices.Contains([]string{"", "results"}, tb.Kind) && !slices.Contains(tableMetrics, tb.Metric) {
		return s.errAt(append(at, "metric"), "metric %q: want one of %s", tb.Metric, strings.Join(tableMetrics, ", "))
	}
	for j, st := range tb.Settings {
		if !settings[st] {
			return s.errAt(append(at, "settings", j), "table %s: unknown setting %q", tb.ID, st)
		}
	}
	for j, m := range tb.Methods {
		if !methods[m] {
			return s.errAt(append(at, "methods", j), "table %s: unknown method %q", tb.ID, m)
		}
	}
	cols := len(tb.Methods)
	if cols == 0 {
		cols = len(s.Methods)
	}
	switch tb.Kind {
	case "confusion":
		cols = 3
	case "data":
		cols = 3
	case "instances", "outliers":
		cols = len(tb.Instances)
		if cols == 0 {
			return s.errAt(append(at, "instances"), "table %s: a %s table needs instances (1-based rows)", tb.ID, tb.Kind)
		}
		for j, i := range tb.Instances {
			if i < 1 {
				return s.errAt(append(at, "instances", j), "table %s: instance %d: rows are numbered from 1", tb.ID, i)
			}
		}
		if tb.Dataset != "" && !slices.Contains(s.Datasets, tb.Dataset) {
			return s.errAt(append(at, "dataset"), "table %s: data set %q is not in datasets", tb.ID, tb.Dataset)
		}
	}
	if tb.DiffAgainst != "" {
		if !slices.Contains([]string{"", "results"}, tb.Kind) {
			return s.errAt(append(at, "diff_against"), "table %s: diff_against compares the cells of a results table, not of a %s table", tb.ID, tb.Kind)
		}
		if settings[tb.DiffAgainst] == methods[tb.DiffAgainst] {
			what := "neither a setting nor a method"
			if settings[tb.DiffAgainst] {
				what = "both a setting and a method"
			}
			return s.errAt(append(at, "diff_against"), "table %s: diff_against %q is %s of the spec", tb.ID, datasets.Excerpt(tb.DiffAgainst), what)
		}
	}
	if tb.Averages && !slices.Contains([]string{"", "results"}, tb.Kind) {
		return s.errAt(append(at, "averages"), "table %s: averages are rows of a results table, not of a %s table", tb.ID, tb.Kind)
	}
	if !slices.Contains([]string{"", "se", "sd", "2sd", "none"}, tb.PaperPM) {
		return s.errAt(append(at, "paper_pm"), "table %s: paper_pm %q: want se, sd, 2sd or none", tb.ID, tb.PaperPM)
	}
	if (tb.PaperPM == "sd" || tb.PaperPM == "2sd") && tb.PaperN < 2 {
		return s.errAt(append(at, "paper_n"), "table %s: paper_pm %s needs paper_n ≥ 2 (the runs behind the paper's ±), got %d", tb.ID, tb.PaperPM, tb.PaperN)
	}
	if tb.PaperN < 0 || tb.LargeAbove < 0 || math.IsNaN(tb.LargeAbove) || math.IsInf(tb.LargeAbove, 0) {
		return s.errAt(at, "table %s: paper_n and large_above must be finite and ≥ 0", tb.ID)
	}
	for j, r := range tb.Paper {
		rat := append(slices.Clone(at), "paper", j)
		if len(r.Values) != cols {
			return s.errAt(append(rat, "values"), "table %s: paper row has %d values, want %d", tb.ID, len(r.Values), cols)
		}
		if r.Setting != "" && !settings[r.Setting] {
			return s.errAt(append(rat, "setting"), "table %s: paper row names unknown setting %q", tb.ID, r.Setting)
		}
		if r.Method != "" && !methods[r.Method] {
			return s.errAt(append(rat, "method"), "table %s: paper row names unknown method %q", tb.ID, r.Method)
		}
		if r.Dataset != "" && r.Dataset != rankRow && !slices.Contains(s.Datasets, r.Dataset) {
			return s.errAt(append(rat, "dataset"), "table %s: paper row names unknown data set %q", tb.ID, r.Dataset)
		}
		for k, v := range r.Values {
			if !strings.EqualFold(tb.Kind, "params") {
				if _, _, ok := parsePaperValue(v); !ok && v != "-" && v != "Large" {
					return s.errAt(append(rat, "values", k), "table %s: cannot read paper value %q (want mean±err, mean, Large or -)", tb.ID, v)
				}
			}
		}
	}
	return nil
}

// gridSize multiplies in floating point so that a huge product cannot
// overflow into a small one.
func gridSize(counts ...int) float64 {
	n := 1.0
	for _, c := range counts {
		n *= float64(max(c, 1))
	}
	return n
}

// rankRow is the pseudo data set naming the mean-rank rows of paper tables.
const rankRow = "mean rank"

// sigMark follows a value significantly different from the table's
// reference method (TestAgainst), in the paper's cells and in ours.
const sigMark = "◁"

// parsePaperValue reads "0.758±0.022", "0.758 ± 0.022" or "0.0883", with
// an optional trailing significance mark.
func parsePaperValue(v string) (mean, err float64, ok bool) {
	v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), sigMark))
	a, b, has := strings.Cut(v, "±")
	m, e1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	if e1 != nil {
		return 0, 0, false
	}
	if !has {
		return m, math.NaN(), true
	}
	e, e2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if e2 != nil {
		return 0, 0, false
	}
	return m, e, true
}

// knownUCI lists the loadable UCI names.
func knownUCI() []string { return uciNames }

// applyQuick overrides the budget with the quick profile.
func (s *Spec) applyQuick() error {
	q := s.Quick
	if q == nil {
		return errors.New("spec " + s.Name + " has no quick profile")
	}
	setInt := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	setInt(&s.Protocol.Splits, q.Splits)
	setInt(&s.Training.Epochs, q.Epochs)
	setInt(&s.Training.MinSteps, q.MinSteps)
	setInt(&s.Training.StepEpochs, q.StepEpochs)
	setInt(&s.Training.Batch, q.Batch)
	setInt(&s.Training.Inducing, q.Inducing)
	setInt(&s.Training.TestSamples, q.TestSamples)
	if q.LR > 0 {
		s.Training.LR = q.LR
	}
	setInt(&s.Protocol.NTrain, q.NTrain)
	setInt(&s.Protocol.NTest, q.NTest)
	setInt(&s.Protocol.MaxTrain, q.MaxTrain)
	setInt(&s.Protocol.MaxTest, q.MaxTest)
	setInt(&s.Protocol.Steps, q.Steps)
	setInt(&s.Protocol.PoolSize, q.PoolSize)
	setInt(&s.Protocol.TestSize, q.TestSize)
	if q.Inducing > 0 {
		// The quick M is absolute; the 5% rule would otherwise cap it again
		// only where it is smaller, which is what we want, so keep the frac.
		s.Training.Inducing = q.Inducing
	}
	// A quick budget replaces the methods' own overrides of the same keys.
	for i := range s.Methods {
		m := &s.Methods[i]
		m.Set = slices.DeleteFunc(slices.Clone(m.Set), func(k string) bool {
			return (k == "lr" && q.LR > 0) || (k == "epochs" && q.Epochs > 0) || (k == "test_samples" && q.TestSamples > 0) || (k == "batch" && q.Batch > 0)
		})
	}
	if len(q.Datasets) > 0 {
		s.Datasets = slices.Clone(q.Datasets)
	}
	if len(q.Settings) > 0 {
		s.Settings = slices.DeleteFunc(s.Settings, func(st Setting) bool { return !slices.Contains(q.Settings, st.Name) })
	}
	if len(q.Methods) > 0 {
		s.keepMethods(func(_ int, m Method) bool { return slices.Contains(q.Methods, m.Name) })
	}
	return nil
}

// filterNames keeps the items whose name is listed (case-insensitive, also
// matching a method's kind), reporting names that match nothing.
func filterNames(what string, want []string, names []string) (keep []bool, err error) {
	keep = make([]bool, len(names))
	for _, w := range want {
		hit := false
		for i, n := range names {
			if strings.EqualFold(n, w) || strings.EqualFold(strings.ReplaceAll(n, "_", "-"), w) {
				keep[i], hit = true, true
			}
		}
		if !hit {
			return nil, fmt.Errorf("no %s named %q (have %s)", what, datasets.Excerpt(w), strings.Join(names, ", "))
		}
	}
	return keep, nil
}

// methodOptions is the composition a method names (no budget yet).
func methodOptions(m Method) models.Options {
	o := models.Options{Model: m.Model}
	// What the library would choose when the spec says nothing is pinned
	// to what the specs were written for (see modelOptions): Adam, the
	// fixed budget, the inputs as the data set gives them.
	o.Train.Optimizer, o.Train.Stop = "adam", models.StopBudget
	o.Inputs.NoStandardize = true
	o.Likelihood.Name = m.Likelihood
	o.Inputs.Model = m.Inputs
	if sampledVariant(m.Variant) {
		// MGP (sampling): the observed-input model trained on inputs redrawn
		// from N(x̃, V) at every step, composed from parts; sampling-mc
		// also averages its predictions over such draws of the test inputs.
		o.Model, o.Inputs.Model = "", "sampled"
		if m.Variant == "sampling-mc" {
			o.Inputs.Model = "sampled-mc"
		}
		if o.Likelihood.Name == "" {
			o.Likelihood.Name = "robustmax"
		}
	}
	return o
}

// sampledVariant reports whether a variant trains MGP on inputs redrawn
// from N(x̃, V) (the sampled input models, which need the noise given).
func sampledVariant(v string) bool { return v == "sampling" || v == "sampling-mc" }

// methodInputs is the input model a method's model has.
func methodInputs(m Method) string {
	if m.Inputs != "" {
		return m.Inputs
	}
	if p, ok := models.LookupPreset(m.Model); ok {
		return p.Inputs
	}
	return "observed"
}

// isNode reports whether n is a YAML node of kind k.
func isNode(n *yaml.Node, k yaml.Kind) bool { return n.Kind&k != 0 }

// scalingRaw is Training.Scaling's one value besides the family's own rule.
const scalingRaw = "raw"

// checkScaling validates a training.scaling value at path: empty or raw,
// and set only for a family that reads it.
func checkScaling(path []any, v string, s *Spec, unread func([]any, string) error) error {
	switch v {
	case "":
		return nil
	case scalingRaw:
		return unread(path, "training.scaling")
	}
	return s.errAt(path, "scaling %q: want raw (or leave it out for the family's own scaling)", datasets.Excerpt(v))
}
