package experiments

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/gpc-dev/gpc/datasets"
)

// Paper is what one paper's experiments add to the generic runner: its
// families (how a run's data are built and the run executed, and the spec
// fields and rules that go with them), and its figures. Everything else —
// spec parsing and validation, the grid, the resumable runner, the result
// tables with the paper's values — is shared. A paper registers itself
// from its own files (noisyinputs.go for the noisy-input paper), and a
// paper outside this package does the same with RegisterPaper: the runner
// never asks which paper or family a spec is beyond what Family declares.
type Paper struct {
	// Name identifies the paper in errors.
	Name string
	// Families maps a spec's family name to what it does.
	Families map[string]Family
	// Validate, if set, checks what the generic validation cannot about a
	// spec of any of the paper's families (its data set names, say).
	Validate func(s *Spec) error
	// Figures maps a figure name to the function drawing it from the
	// results (figure names are global across papers).
	Figures map[string]FigureFunc
	// Fitters maps a method's model name to an engine outside models'
	// compositions, for the paper's families.
	Fitters map[string]Fitter
}

// Family is one way of building a run's data and executing it.
type Family struct {
	// Run executes one run: build the split, train, score.
	Run RunFunc
	// Validate, if set, checks a spec of this family beyond the generic
	// validation and the paper's: its protocol, data set names, settings.
	Validate func(s *Spec) error
	// Reads lists the optional spec fields the family reads, as
	// "section.field" (OptionalFields); a spec setting one its family does
	// not read is refused, naming the families that do.
	Reads []string
	// Twin marks a family whose runs never read a setting's name (seeds
	// come from the split, data from the setting's fields), so that runs of
	// two settings with the same fields are one fit, done once.
	Twin bool
	// Budget, if set, adjusts a run's budget — the part of its key that
	// says how it was trained — for the family's own training fields.
	Budget func(s *Spec, b *Budget)
}

// Fitter trains a model that is not a models composition on a training
// set; the family scores it through Predict.
type Fitter func(ctx context.Context, train *datasets.Dataset, r Run) (Predictor, error)

// Predictor is a fitted model's class probabilities: n×C, row-major.
type Predictor interface {
	Predict(x []float64, n int) ([]float64, error)
}

// RunFunc executes one run of a family: build the split, train, score.
type RunFunc func(ctx context.Context, e *Env, r Run) (*Result, error)

// OptionalFields are the spec fields only some families read
// (Family.Reads); the generic validation refuses one set for a family that
// does not read it.
var OptionalFields = []string{
	"training.step_training", "training.min_steps", "quick.min_steps",
	"settings.lengthscale_scaling", "settings.sq_lengthscale", "settings.selection",
	"settings.kernel", "settings.whitened", "settings.z_init", "settings.standardize",
	"training.scaling",
}

// FigureFunc draws one figure into the report directory.
type FigureFunc func(rp *Reporter, name string) error

var (
	papersMu   sync.Mutex
	families   = map[string]Family{}
	validators = map[string]func(*Spec) error{}
	figures    = map[string]FigureFunc{}
	fitters    = map[string]Fitter{}
)

// fitterFor returns the registered engine of a method's model name.
func fitterFor(model string) (Fitter, bool) {
	papersMu.Lock()
	defer papersMu.Unlock()
	f, ok := fitters[model]
	return f, ok
}

// RegisterPaper adds a paper's families and figures; a name already taken
// by another paper is an error.
func RegisterPaper(p Paper) error {
	papersMu.Lock()
	defer papersMu.Unlock()
	for f := range p.Families {
		if _, ok := families[f]; ok {
			return fmt.Errorf("experiments: paper %s: family %q is already registered", p.Name, f)
		}
	}
	for f := range p.Figures {
		if _, ok := figures[f]; ok {
			return fmt.Errorf("experiments: paper %s: figure %q is already registered", p.Name, f)
		}
	}
	for f, fam := range p.Families {
		if fam.Run == nil {
			return fmt.Errorf("experiments: paper %s: family %q has no Run", p.Name, f)
		}
		for _, r := range fam.Reads {
			if !slices.Contains(OptionalFields, r) {
				return fmt.Errorf("experiments: paper %s: family %q reads %q, which is not one of the optional fields %v", p.Name, f, r, OptionalFields)
			}
		}
	}
	for f, fam := range p.Families {
		families[f] = fam
		if p.Validate != nil {
			validators[f] = p.Validate
		}
	}
	for f, draw := range p.Figures {
		figures[f] = draw
	}
	for name, fit := range p.Fitters {
		if _, ok := fitters[name]; ok {
			return fmt.Errorf("experiments: paper %s: fitter %q is already registered", p.Name, name)
		}
		fitters[name] = fit
	}
	return nil
}

// Families lists the registered families, sorted.
func Families() []string { return keysOf(families) }

// Figures lists the registered figures, sorted.
func Figures() []string { return keysOf(figures) }

func keysOf[V any](m map[string]V) []string {
	papersMu.Lock()
	defer papersMu.Unlock()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func familyRun(name string) (RunFunc, bool) {
	f, ok := familyOf(name)
	return f.Run, ok
}

// familyOf returns the registered family of that name.
func familyOf(name string) (Family, bool) {
	papersMu.Lock()
	defer papersMu.Unlock()
	f, ok := families[name]
	return f, ok
}

// readersOf lists the registered families that read an optional field.
func readersOf(field string) []string {
	papersMu.Lock()
	defer papersMu.Unlock()
	var out []string
	for name, f := range families {
		if slices.Contains(f.Reads, field) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func figureFunc(name string) (FigureFunc, bool) {
	papersMu.Lock()
	defer papersMu.Unlock()
	f, ok := figures[name]
	return f, ok
}

// executeRun dispatches a run to its family's executor.
func executeRun(ctx context.Context, e *Env, r Run) (*Result, error) {
	run, ok := familyRun(e.spec.Family)
	if !ok {
		return nil, fmt.Errorf("experiments: no paper registers family %q", e.spec.Family)
	}
	return run(ctx, e, r)
}

func familyValidator(name string) func(*Spec) error {
	papersMu.Lock()
	defer papersMu.Unlock()
	return validators[name]
}
