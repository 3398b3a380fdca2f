package experiments

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// Run is one cell of the expanded grid: a data set, a setting, a method and
// a split, with the fully resolved training budget.
type Run struct {
	// Key identifies the run in results.jsonl; it includes a hash of the
	// budget so that a rerun with other epochs or sizes is not mistaken for
	// a finished one.
	Key     string  `json:"key"`
	Dataset string  `json:"dataset"`
	Setting Setting `json:"setting"`
	Method  Method  `json:"method"`
	Split   int     `json:"split"`
	// Budget is the effective configuration the key hashes.
	Budget Budget `json:"budget"`
	// Twin is the key of an earlier run of the grid that is the same fit:
	// the same data, model and budget, the settings differing only in
	// fields this method does not read (MGP under "given" and "learned"
	// input noise). Its result is copied rather than computed again.
	Twin string `json:"twin,omitempty"`
}

// Budget is what a run trains with after defaults, quick profile and flags.
type Budget struct {
	Epochs int `json:"epochs"`
	// MinSteps is Training.MinSteps, the floor on optimiser steps that can
	// raise Epochs once the training size is known (epochsWithFloor). It
	// is hashed into the key, so results trained with another floor are
	// never resumed as these; omitempty keeps the keys of budgets without a
	// floor as they were before the field existed.
	MinSteps     int     `json:"min_steps,omitempty"`
	StepEpochs   int     `json:"step_epochs,omitempty"`
	StepTraining string  `json:"step_training,omitempty"`
	Batch        int     `json:"batch"`
	LR           float64 `json:"lr"`
	Inducing     int     `json:"inducing"`
	InducingFrac float64 `json:"inducing_frac,omitempty"`
	TestSamples  int     `json:"test_samples"`
	Kernel       string  `json:"kernel"`
	Degree       int     `json:"degree,omitempty"`
	Hidden       []int   `json:"hidden"`
	Residual     bool    `json:"residual"`
	Quadrature   int     `json:"quadrature,omitempty"`
	Optimizer    string  `json:"optimizer,omitempty"`
	FreezeHyper  int     `json:"freeze_hyper,omitempty"`
	FreezeZ      int     `json:"freeze_z,omitempty"`
	// LocalAdam is "dense" for input models with per-row parameters trained
	// densely, empty otherwise (lazily, or no such parameters), so that
	// other methods' keys, and lazy runs' from before it, are unchanged.
	LocalAdam string `json:"local_adam,omitempty"`
	// Scaling is Training.Scaling; omitempty keeps the keys of runs on the
	// family's own scaling as they were before the field existed.
	Scaling      string  `json:"scaling,omitempty"`
	NTrain       int     `json:"n_train,omitempty"`
	NTest        int     `json:"n_test,omitempty"`
	MaxTrain     int     `json:"max_train,omitempty"`
	MaxTest      int     `json:"max_test,omitempty"`
	TestFraction float64 `json:"test_fraction,omitempty"`
	InitialTrain int     `json:"initial_train,omitempty"`
	TestSize     int     `json:"test_size,omitempty"`
	PoolSize     int     `json:"pool_size,omitempty"`
	Steps        int     `json:"steps,omitempty"`
	Seed         uint64  `json:"seed"`
}

// Options are the command-line flags that change how a spec expands.
type Options struct {
	// Splits overrides protocol.splits (0: keep).
	Splits int
	// EpochsScale multiplies every epoch budget (0: 1).
	EpochsScale float64
	// Methods, Datasets and Settings restrict the grid (names,
	// case-insensitive).
	Methods, Datasets, Settings []string
	// Quick selects the spec's quick profile.
	Quick bool
}

// Resolve applies the quick profile and the flags to a copy of the spec.
func Resolve(spec *Spec, o Options) (*Spec, error) {
	s := *spec
	s.Datasets = append([]string(nil), spec.Datasets...)
	s.Settings = append([]Setting(nil), spec.Settings...)
	s.Methods = append([]Method(nil), spec.Methods...)
	budget := "full (paper protocol as written in the spec)"
	if o.Quick {
		if err := s.applyQuick(); err != nil {
			return nil, err
		}
		budget = "quick profile"
	}
	if o.Splits > 0 {
		s.Protocol.Splits = o.Splits
		budget += fmt.Sprintf(", --splits %d", o.Splits)
	}
	if o.EpochsScale > 0 && o.EpochsScale != 1 {
		scale := func(e int) int {
			if e == 0 {
				return 0
			}
			return max(1, int(math.Round(float64(e)*o.EpochsScale)))
		}
		s.Training.Epochs = scale(s.Training.Epochs)
		// The step floor scales with the epochs, so that a longer run keeps
		// small and large training sets at the same relative budget.
		s.Training.MinSteps = scale(s.Training.MinSteps)
		s.Training.StepEpochs = scale(s.Training.StepEpochs)
		for i := range s.Methods {
			if t := s.Methods[i].Training; t != nil {
				c := *t
				c.Epochs, c.MinSteps, c.StepEpochs = scale(c.Epochs), scale(c.MinSteps), scale(c.StepEpochs)
				s.Methods[i].Training = &c
			}
		}
		budget += fmt.Sprintf(", --epochs-scale %g", o.EpochsScale)
	}
	if len(o.Methods) > 0 {
		names := make([]string, len(s.Methods))
		for i, m := range s.Methods {
			names[i] = m.Name
		}
		keep, err := filterNames("method", o.Methods, names)
		if err != nil {
			return nil, err
		}
		s.keepMethods(func(i int, _ Method) bool { return keep[i] })
	}
	if len(o.Settings) > 0 {
		names := make([]string, len(s.Settings))
		for i, st := range s.Settings {
			names[i] = st.Name
		}
		keep, err := filterNames("setting", o.Settings, names)
		if err != nil {
			return nil, err
		}
		var sts []Setting
		for i, st := range s.Settings {
			if keep[i] {
				sts = append(sts, st)
			}
		}
		s.Settings = sts
	}
	if len(o.Datasets) > 0 {
		keep, err := filterNames("data set", o.Datasets, s.Datasets)
		if err != nil {
			return nil, err
		}
		var ds []string
		for i, d := range s.Datasets {
			if keep[i] {
				ds = append(ds, d)
			}
		}
		s.Datasets = ds
	}
	if n := gridSize(len(s.Datasets), len(s.Settings), len(s.Methods), s.Protocol.Splits); n > MaxRuns {
		return nil, fmt.Errorf("the grid would hold %.3g runs (%d data sets × %d settings × %d methods × %d splits%s), more than the limit %d",
			n, len(s.Datasets), len(s.Settings), len(s.Methods), s.Protocol.Splits, map[bool]string{true: " from --splits", false: ""}[o.Splits > 0], MaxRuns)
	}
	s.Budget = fmt.Sprintf("%s: %d splits, %d epochs", budget, s.Protocol.Splits, s.Training.Epochs)
	if s.Training.MinSteps > 0 {
		s.Budget += fmt.Sprintf(" but at least %d optimiser steps (min_steps)", s.Training.MinSteps)
	}
	return &s, nil
}

// keepMethods restricts the spec's methods to those keep accepts, and the
// tables with them: a results-like table's paper values are positional over
// its columns, so each row loses the values of the dropped methods (or a
// filtered run's report would set, say, SMGPC's published numbers under
// RMGPC-SVI); rows that name their method are kept or dropped whole. The
// tables and their rows are copied, never the spec's own edited.
func (s *Spec) keepMethods(keep func(i int, m Method) bool) {
	var names []string
	kept := map[string]bool{}
	var ms []Method
	for i, m := range s.Methods {
		names = append(names, m.Name)
		if keep(i, m) {
			ms = append(ms, m)
			kept[m.Name] = true
		}
	}
	s.Methods = ms
	tables := make([]Table, len(s.Tables))
	for ti, tb := range s.Tables {
		var paper []PaperRow
		switch tb.Kind {
		case "", "results", "params", "frontier":
			cols := tb.Methods
			if len(cols) == 0 {
				cols = names
			}
			var idx []int
			var newCols []string
			for j, m := range cols {
				if kept[m] {
					idx, newCols = append(idx, j), append(newCols, m)
				}
			}
			if len(tb.Methods) > 0 {
				tb.Methods = newCols
			}
			for _, r := range tb.Paper {
				if r.Method != "" {
					if kept[r.Method] {
						paper = append(paper, r)
					}
					continue
				}
				vs := make([]string, 0, len(idx))
				for _, j := range idx {
					if j < len(r.Values) {
						vs = append(vs, r.Values[j])
					}
				}
				r.Values = vs
				paper = append(paper, r)
			}
		default: // rows per method (confusion, instances) or not per method at all
			for _, r := range tb.Paper {
				if r.Method == "" || kept[r.Method] {
					paper = append(paper, r)
				}
			}
		}
		tb.Paper = paper
		tables[ti] = tb
	}
	s.Tables = tables
}

// budgetFor resolves a method's effective budget.
func (s *Spec) budgetFor(m Method, st Setting) Budget {
	t, p := s.trainingFor(m), s.Protocol
	b := Budget{
		Epochs: t.Epochs, MinSteps: t.MinSteps, StepEpochs: t.StepEpochs, Batch: t.Batch, LR: t.LR, Inducing: t.Inducing,
		InducingFrac: t.InducingFrac, TestSamples: t.TestSamples, Kernel: t.Kernel, Degree: t.Degree,
		Hidden: t.Hidden, Residual: t.Residual, Quadrature: t.Quadrature, Optimizer: t.Optimizer, FreezeHyper: t.FreezeHyper, FreezeZ: t.FreezeZ,
		NTrain: p.NTrain, NTest: p.NTest, MaxTrain: p.MaxTrain, MaxTest: p.MaxTest, TestFraction: p.TestFraction,
		InitialTrain: p.InitialTrain, TestSize: p.TestSize, PoolSize: p.PoolSize, Steps: p.Steps, Seed: s.Seed,
	}
	// A setting's kernel (Setting.Kernel) replaces the spec's and the
	// method's. The kernel is part of the key: an unset one is the
	// default's, and an expression is keyed in its canonical form (the
	// single kernels' names are their own canonical forms, so their keys are
	// as before).
	if st.Kernel != "" {
		b.Kernel = st.Kernel
	}
	if b.Kernel == "" {
		b.Kernel = kernels.Default
	}
	if e, err := kernels.Parse(b.Kernel); err == nil {
		b.Kernel = e.String()
	}
	if fam, _ := familyOf(s.Family); fam.Budget != nil {
		fam.Budget(s, &b)
	}
	if b.TestSamples == 0 {
		b.TestSamples = 500
	}
	b.Scaling = t.Scaling
	if st.NTrain > 0 {
		b.NTrain = st.NTrain
	}
	// Settings a method's input model does not read stay out of its run key.
	switch methodInputs(m) {
	case "amortised":
	case "latent":
		b.Hidden, b.Residual = nil, false
		// Lazy was the only update before the option existed: it keeps
		// the old keys (an empty field), so those results are reused.
		b.LocalAdam = "dense"
		if t.LocalAdam == "lazy" {
			b.LocalAdam = ""
		}
	default:
		b.Hidden, b.Residual = nil, false
		if m.Variant != "sampling-mc" { // the one observed-input model that draws test inputs
			b.TestSamples = 0
		}
	}
	return b
}

// Expand lists the runs of a resolved spec in a deterministic order: data
// sets × settings × splits × methods, so that the methods of one split
// finish close together and partial results are comparable early.
func Expand(s *Spec) []Run {
	var runs []Run
	eachRun(s, func(r Run) { runs = append(runs, r) })
	return runs
}

// eachRun calls fn with the runs of Expand in its order, holding none of
// them: counting a shard of a large grid needs no list of it.
func eachRun(s *Spec, fn func(Run)) {
	first := map[string]string{} // fit identity → the first run's key
	fam, _ := familyOf(s.Family)
	twin := fam.Twin
	// The budget and hashes of a (setting, method) pair do not depend on
	// the data set or split: computed once per pair, not per run (at the
	// run limit, per run took minutes).
	type pair struct {
		b       Budget
		keyHash string
		fit     string // the fit's identity but for the data set and split
	}
	pairs := make([][]pair, len(s.Settings))
	for i, st := range s.Settings {
		pairs[i] = make([]pair, len(s.Methods))
		for j, m := range s.Methods {
			b := s.budgetFor(m, st)
			pairs[i][j] = pair{b: b, keyHash: hashOf(s.Family, st, m.keyView(), b)}
			if twin {
				pairs[i][j].fit = hashOf(s.Family, fitSetting(m, st), m.keyView(), b)
			}
		}
	}
	for _, d := range s.Datasets {
		for i, st := range s.Settings {
			for split := range s.Protocol.Splits {
				for j, m := range s.Methods {
					p := pairs[i][j]
					r := Run{Dataset: d, Setting: st, Method: m, Split: split, Budget: p.b}
					r.Key = fmt.Sprintf("%s|%s|%s|%d|%s", d, st.Name, m.Name, split, p.keyHash)
					if twin {
						fit := fmt.Sprintf("%s|%s|%d", p.fit, d, split)
						if k, ok := first[fit]; ok {
							r.Twin = k
						} else {
							first[fit] = r.Key
						}
					}
					fn(r)
				}
			}
		}
	}
}

// fitSetting is the part of a setting that a method's fit reads in a twin
// family: not its name, and for observed inputs not how an input-noise
// variance would be learned, since none is.
func fitSetting(m Method, st Setting) Setting {
	st.Name = ""
	if methodInputs(m) == "observed" {
		st.LearnNoise, st.NoiseInit = false, 0
	}
	return st
}

// hashOf is a short FNV hash of the JSON of its arguments.
func hashOf(v ...any) string {
	b, _ := json.Marshal(v)
	h := fnv.New32a()
	h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())
}

// methodKey is the JSON shape a method had in run keys before its training
// overrides moved under training: and its parts were added; keeping it
// keeps the keys of existing results (and resumption) unchanged.
type methodKey struct {
	Name        string    `json:"name"`
	Kind        string    `json:"kind"`
	Variant     string    `json:"variant"`
	Hidden      []int     `json:"hidden"`
	Residual    *bool     `json:"residual"`
	LR          float64   `json:"lr"`
	Epochs      int       `json:"epochs"`
	Batch       int       `json:"batch"`
	TestSamples int       `json:"test_samples"`
	Likelihood  string    `json:"likelihood,omitempty"`
	Inputs      string    `json:"inputs,omitempty"`
	Training    *Training `json:"training,omitempty"`
	Set         []string  `json:"set,omitempty"`
}

func (m Method) keyView() methodKey {
	k := methodKey{Name: m.Name, Kind: m.Model, Variant: m.Variant, Likelihood: m.Likelihood, Inputs: m.Inputs}
	if len(m.Set) > 0 {
		k.Training, k.Set = m.Training, m.Set
	}
	return k
}
