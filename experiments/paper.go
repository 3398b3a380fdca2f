package experiments

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/gpc-dev/gpc/datasets"
)

// Paper is what one paper's experiments add to the generic runner: its
// families (how a run's data are built and the run executed), and its
// figures. Everything else — spec parsing and validation, the grid, the
// resumable runner, the result tables with the paper's values — is shared.
// A paper registers itself from one file (noisyinputs.go for the
// noisy-input paper), so papers are added beside each other.
type Paper struct {
	// Name identifies the paper in errors.
	Name string
	// Families maps a spec's family to the executor of one run.
	Families map[string]RunFunc
	// Validate, if set, checks what the generic validation cannot about a
	// spec of one of the paper's families (its data set names, say).
	Validate func(s *Spec) error
	// Figures maps a figure name to the function drawing it from the
	// results (figure names are global across papers).
	Figures map[string]FigureFunc
	// Fitters maps a method's model name to an engine outside models'
	// compositions (RMGPC's EP, HTPC's Laplace), for the paper's families.
	Fitters map[string]Fitter
}

// Fitter trains a model that is not a models composition on a training
// set; the family scores it through Predict.
type Fitter func(ctx context.Context, train *datasets.Dataset, r Run) (Predictor, error)

// Predictor is a fitted model's class probabilities: n×C, row-major.
type Predictor interface {
	Predict(x []float64, n int) ([]float64, error)
}

// RunFunc executes one run of a family: build the split, train, score.
type RunFunc func(ctx context.Context, e *env, r Run) (*Result, error)

// FigureFunc draws one figure into the report directory.
type FigureFunc func(rp *reporter, name string) error

var (
	papersMu   sync.Mutex
	families   = map[string]RunFunc{}
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
	for f, run := range p.Families {
		families[f] = run
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
	papersMu.Lock()
	defer papersMu.Unlock()
	f, ok := families[name]
	return f, ok
}

func figureFunc(name string) (FigureFunc, bool) {
	papersMu.Lock()
	defer papersMu.Unlock()
	f, ok := figures[name]
	return f, ok
}

// executeRun dispatches a run to its family's executor.
func executeRun(ctx context.Context, e *env, r Run) (*Result, error) {
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
