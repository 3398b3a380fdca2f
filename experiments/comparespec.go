package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/compare"
)

// CompareSpec is an approximation-against-gold-standard experiment: on
// each data set, one composition fitted under several inference engines
// and scored against a reference engine's (MCMC's) predictive (package
// compare), with verdicts on the known qualitative findings computed from
// the runs. Unlike the paper grids it has no per-method runs: a data set's
// comparison is one unit (its differences need every engine's
// predictions), stored as DIR/<data set>.json and resumed by skipping the
// data sets already stored.
type CompareSpec struct {
	Name  string `yaml:"name" json:"name"`
	Title string `yaml:"title" json:"title"`
	// Seed is the fits' seed (the reference's repeats use Seed+1, ...) and
	// that of the random splits where a data set has no official one.
	Seed uint64 `yaml:"seed" json:"seed"`
	// Datasets are Rätsch benchmarks (datasets.RatschSplit), each with the
	// 1-based realisation to use; inputs are standardised on the training
	// part.
	Datasets []CompareData `yaml:"datasets" json:"datasets"`
	// Likelihood and Kernel name the composition's parts (the full
	// posterior family, Z = X).
	Likelihood string `yaml:"likelihood" json:"likelihood"`
	Kernel     string `yaml:"kernel" json:"kernel"`
	// Engines are engine names; Reference is among them. An engine this
	// build does not register gets a row saying so.
	Engines        []string `yaml:"engines" json:"engines"`
	Reference      string   `yaml:"reference" json:"reference"`
	ReferenceSeeds int      `yaml:"reference_seeds" json:"reference_seeds"`
	// Epochs bounds the optimisers (L-BFGS iterations with optimizer lbfgs).
	Epochs    int    `yaml:"epochs" json:"epochs"`
	Optimizer string `yaml:"optimizer" json:"optimizer"`
	// Settings are engine settings (models.Options.Settings).
	Settings map[string]string `yaml:"settings" json:"settings"`
	// Verdicts are the thresholds of the computed verdicts.
	Verdicts CompareThresholds `yaml:"verdicts" json:"verdicts"`
	Notes    string            `yaml:"notes" json:"notes"`
}

// CompareData is one data set of a CompareSpec.
type CompareData struct {
	Name  string `yaml:"name" json:"name"`
	Split int    `yaml:"split" json:"split"`
}

// CompareThresholds are the verdicts' tolerances.
type CompareThresholds struct {
	// FloorFactor: an engine is "within Monte Carlo error" of the
	// reference when its mean |Δp| is at most FloorFactor times the
	// reference's own floor (its repeats' mean |Δp| to its first run).
	FloorFactor float64 `yaml:"floor_factor" json:"floor_factor"`
	// NLLTolerance: the acceptance bound on |NLL − NLL_ref| for the engine
	// named by NLLEngine (the "MCMC's test NLL within 0.02 of EP's").
	NLLTolerance float64 `yaml:"nll_tolerance" json:"nll_tolerance"`
	NLLEngine    string  `yaml:"nll_engine" json:"nll_engine"`
	// MaxRHat is the convergence bound on the reference's split-R̂.
	MaxRHat float64 `yaml:"max_rhat" json:"max_rhat"`
	// Shrunk names the engine expected to shrink the latent means and be
	// under-confident (Laplace); Accurate the one expected within Monte
	// Carlo error (EP); Between the one expected between them (KL/SVI).
	Shrunk   string `yaml:"shrunk" json:"shrunk"`
	Accurate string `yaml:"accurate" json:"accurate"`
	Between  string `yaml:"between" json:"between"`
}

// ReadCompareSpec parses and checks a comparison spec.
func ReadCompareSpec(path string) (*CompareSpec, error) {
	b, err := readSpecFile(path)
	if err != nil {
		return nil, err
	}
	var s CompareSpec
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, cutYAMLError(err))
	}
	switch {
	case s.Name == "":
		return nil, fmt.Errorf("%s: no name", path)
	case len(s.Datasets) == 0 || len(s.Engines) == 0:
		return nil, fmt.Errorf("%s: no data sets or no engines", path)
	case s.Epochs < 0 || s.ReferenceSeeds < 0:
		return nil, fmt.Errorf("%s: negative epochs or reference_seeds", path)
	}
	for _, d := range s.Datasets {
		if _, _, ok := datasets.RatschSizes(d.Name); !ok {
			return nil, fmt.Errorf("%s: unknown Rätsch data set %q (known: %s)", path, datasets.Excerpt(d.Name), strings.Join(datasets.RatschNames(), ", "))
		}
		if d.Split < 1 {
			return nil, fmt.Errorf("%s: data set %s: split %d (1-based)", path, d.Name, d.Split)
		}
	}
	if s.Likelihood == "" {
		s.Likelihood = "probit"
	}
	if s.Kernel == "" {
		s.Kernel = "se"
	}
	if s.Epochs == 0 {
		s.Epochs = 200
	}
	if s.Optimizer == "" {
		s.Optimizer = "lbfgs"
	}
	if s.Verdicts.FloorFactor == 0 {
		s.Verdicts.FloorFactor = 1.5
	}
	if s.Verdicts.MaxRHat == 0 {
		s.Verdicts.MaxRHat = 1.01
	}
	return &s, nil
}

// CompareResult is one data set's comparison, as stored.
type CompareResult struct {
	Dataset  string          `json:"dataset"`
	Split    int             `json:"split"`
	Official bool            `json:"official_split"`
	Report   *compare.Report `json:"report"`
}

// RunCompareSpec runs every data set of the spec not yet stored in dir,
// then writes dir/report.md and dir/verdicts.json from all stored results.
func RunCompareSpec(ctx context.Context, s *CompareSpec, dataDir, dir string, progress io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range s.Datasets {
		path := filepath.Join(dir, d.Name+".json")
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintf(progress, "compare %s: %s already done\n", s.Name, d.Name)
			continue
		}
		train, test, official, err := datasets.RatschSplit(dataDir, d.Name, d.Split, s.Seed)
		if err != nil {
			return err
		}
		std, _ := datasets.Standardize(train, test)
		train, test = std[0], std[1]
		train.Name, test.Name = d.Name+" train", d.Name+" test"
		base := models.Options{
			Kernel:     models.KernelOptions{Name: s.Kernel},
			Likelihood: models.LikelihoodOptions{Name: s.Likelihood},
			Posterior:  models.PosteriorOptions{Family: "full"},
			Train:      models.TrainOptions{Epochs: s.Epochs, Seed: s.Seed, Optimizer: s.Optimizer},
			Settings:   s.Settings,
		}
		fmt.Fprintf(progress, "compare %s: %s (%d train, %d test rows)\n", s.Name, d.Name, train.N, test.N)
		rep, err := compare.Run(ctx, compare.Config{Base: base, Engines: s.Engines, Reference: s.Reference, ReferenceSeeds: s.ReferenceSeeds,
			Train: train, Test: test, Progress: progress, Warnings: progress, SkipUnknown: true})
		if err != nil {
			return err
		}
		if err := rep.WritePNG(filepath.Join(dir, d.Name+".png"), test.Y); err != nil {
			return err
		}
		b, err := json.MarshalIndent(CompareResult{Dataset: d.Name, Split: d.Split, Official: official, Report: rep}, "", "  ")
		if err != nil {
			return err
		}
		if err := datasets.WriteFileAtomic(path, append(b, '\n')); err != nil {
			return err
		}
	}
	return ReportCompareSpec(s, dir)
}

// Verdict is one finding checked on one data set, computed from its run.
type Verdict struct {
	Dataset string `json:"dataset"`
	Finding string `json:"finding"`
	// Outcome is "holds", "fails" or "not run" (an engine missing).
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
}

// CompareVerdicts computes the findings' verdicts of one data set's report.
func CompareVerdicts(s *CompareSpec, dataset string, rep *compare.Report) []Verdict {
	v := s.Verdicts
	var out []Verdict
	add := func(finding, outcome, detail string) {
		out = append(out, Verdict{Dataset: dataset, Finding: finding, Outcome: outcome, Detail: detail})
	}
	ran := func(name string) *compare.Row {
		if r := rep.Row(name); r != nil && r.Skipped == "" {
			return r
		}
		return nil
	}
	why := func(name string) string {
		if r := rep.Row(name); r != nil {
			return r.Skipped
		}
		return "not in the spec's engines"
	}
	holds := func(ok bool) string {
		if ok {
			return "holds"
		}
		return "fails"
	}
	ref := rep.ReferenceRow()
	if ref == nil {
		add("reference ran", "not run", why(rep.Reference))
		return out
	}
	floor, _, hasFloor := rep.Floor()
	if r, ok := ref.Figure("max_rhat"); ok {
		ess, _ := ref.Figure("min_ess")
		spe, _ := ref.Figure("seconds_per_ess")
		add(fmt.Sprintf("%s converged (max split-R̂ < %g)", rep.Reference, v.MaxRHat), holds(r < v.MaxRHat),
			fmt.Sprintf("max split-R̂ %.4f, min bulk ESS %.0f, %.3g s per effective sample, fit %.1fs", r, ess, spe, ref.FitSeconds))
	}
	if e := v.NLLEngine; e != "" {
		if r := ran(e); r == nil {
			add(fmt.Sprintf("%s's test NLL within %g of %s's", rep.Reference, v.NLLTolerance, e), "not run", why(e))
		} else {
			d := math.Abs(ref.NLL - r.NLL)
			add(fmt.Sprintf("%s's test NLL within %g of %s's", rep.Reference, v.NLLTolerance, e), holds(d <= v.NLLTolerance),
				fmt.Sprintf("NLL %s %.4f, %s %.4f, |Δ| %.4f", rep.Reference, ref.NLL, e, r.NLL, d))
		}
	}
	if e := v.Accurate; e != "" {
		f := fmt.Sprintf("%s within Monte Carlo error of %s on predictions", e, rep.Reference)
		switch r := ran(e); {
		case r == nil:
			add(f, "not run", why(e))
		case !hasFloor:
			add(f, "not run", "the reference was not repeated (reference_seeds < 2): no Monte Carlo floor")
		default:
			add(f, holds(*r.MeanAbsDP <= v.FloorFactor*floor),
				fmt.Sprintf("mean |Δp| %.4f against the floor %.4f (×%g allowed); max |Δp| %.4f", *r.MeanAbsDP, floor, v.FloorFactor, *r.MaxAbsDP))
		}
	}
	if e := v.Shrunk; e != "" {
		f := fmt.Sprintf("%s's latent means shrunk towards zero and its predictions under-confident", e)
		if r := ran(e); r == nil {
			add(f, "not run", why(e))
		} else if r.LatentMeanRatio != nil && r.ConfidenceRatio != nil {
			add(f, holds(*r.LatentMeanRatio < 1 && *r.ConfidenceRatio < 1),
				fmt.Sprintf("Σ|μ| ratio %.3f, mean max-probability ratio %.3f (both < 1 expected)", *r.LatentMeanRatio, *r.ConfidenceRatio))
		}
	}
	if b := v.Between; b != "" {
		f := fmt.Sprintf("%s between %s and %s (mean |Δp| to %s)", b, v.Accurate, v.Shrunk, rep.Reference)
		rb, ra, rs := ran(b), ran(v.Accurate), ran(v.Shrunk)
		switch {
		case rb == nil:
			add(f, "not run", why(b))
		case ra == nil:
			add(f, "not run", why(v.Accurate))
		case rs == nil:
			ok := *rb.MeanAbsDP >= *ra.MeanAbsDP
			add(f, "not run", fmt.Sprintf("%s: %s; the half that ran, %s no closer than %s: %s (%.4f against %.4f)",
				v.Shrunk, why(v.Shrunk), b, v.Accurate, holds(ok), *rb.MeanAbsDP, *ra.MeanAbsDP))
		default:
			ok := *ra.MeanAbsDP <= *rb.MeanAbsDP && *rb.MeanAbsDP <= *rs.MeanAbsDP
			add(f, holds(ok), fmt.Sprintf("mean |Δp|: %s %.4f, %s %.4f, %s %.4f", v.Accurate, *ra.MeanAbsDP, b, *rb.MeanAbsDP, v.Shrunk, *rs.MeanAbsDP))
		}
	}
	return out
}

// ReportCompareSpec writes dir/report.md (every data set's table and the
// verdicts) and dir/verdicts.json from the results stored in dir.
func ReportCompareSpec(s *CompareSpec, dir string) error {
	var md bytes.Buffer
	fmt.Fprintf(&md, "# %s\n\n%s\n\n", s.Name, s.Title)
	fmt.Fprintf(&md, "Composition: likelihood %s, kernel %s, full posterior family (Z = X); engines %s; reference %s (%d runs); engine settings %v.\n\n",
		s.Likelihood, s.Kernel, strings.Join(s.Engines, ", "), s.Reference, max(1, s.ReferenceSeeds), s.Settings)
	var all []Verdict
	for _, d := range s.Datasets {
		b, err := os.ReadFile(filepath.Join(dir, d.Name+".json"))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&md, "## %s\n\nnot run yet\n\n", d.Name)
			continue
		}
		if err != nil {
			return err
		}
		var r CompareResult
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		split := "official split"
		if !r.Official {
			split = "seeded random split of the published sizes (no official split available)"
		}
		fmt.Fprintf(&md, "## %s (realisation %d, %s)\n\n```\n", d.Name, r.Split, split)
		if err := r.Report.WriteTable(&md); err != nil {
			return err
		}
		fmt.Fprintf(&md, "```\n\n![%s](%s.png)\n\n", d.Name, d.Name)
		vs := CompareVerdicts(s, d.Name, r.Report)
		for _, v := range vs {
			fmt.Fprintf(&md, "- **%s**: %s — %s\n", v.Finding, v.Outcome, v.Detail)
		}
		md.WriteString("\n")
		all = append(all, vs...)
	}
	if s.Notes != "" {
		fmt.Fprintf(&md, "## Notes\n\n%s\n", s.Notes)
	}
	if err := datasets.WriteFileAtomic(filepath.Join(dir, "report.md"), md.Bytes()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return datasets.WriteFileAtomic(filepath.Join(dir, "verdicts.json"), append(b, '\n'))
}
