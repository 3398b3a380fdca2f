package models

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpc-dev/gpc/datasets"
)

// curvedSet returns n rows of a binary problem with a curved boundary (the
// SVGP paper's banana in spirit): x ~ N(0, 1.5²I) in 2-D, label 1 when
// x₂ > sin(1.5·x₁), flipped with probability 0.1, so that no model is
// certain and the test NLL tells fits apart.
func curvedSet(n int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	ds := &datasets.Dataset{Name: "curved", N: n, D: 2, C: 2, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := range n {
		x1, x2 := 1.5*rng.NormFloat64(), 1.5*rng.NormFloat64()
		ds.X[2*i], ds.X[2*i+1] = x1, x2
		y := 0
		if x2 > math.Sin(1.5*x1) {
			y = 1
		}
		if rng.Float64() < 0.1 {
			y = 1 - y
		}
		ds.Y[i] = y
	}
	return ds
}

// fitNLL fits o on train and returns the test NLL, the fit's report and
// the time it took.
func fitNLL(t *testing.T, o Options, train, test *datasets.Dataset) (float64, *FitReport, time.Duration) {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := m.Fit(context.Background(), train, FitConfig{Warnings: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	p, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Score(p, test.Y, test.C).NLL, m.FitReport(), took
}

// TestDefaultTrainingConverges: the zero training options (gpc train with
// no training flags) of the SVGP paper's binary models reach, on held-out
// rows, the NLL of a fit run to a hundred times tighter a tolerance with
// five times the cap, and report that they converged.
func TestDefaultTrainingConverges(t *testing.T) {
	skipSequentialUnderRace(t)
	if testing.Short() {
		t.Skip("fits to convergence")
	}
	train, test := curvedSet(200, 1), curvedSet(1000, 2)
	for _, c := range []struct {
		model    string
		inducing int
	}{{"svgp-kl", 0}, {"svgp", 20}} {
		t.Run(c.model, func(t *testing.T) {
			o := Options{Model: c.model}
			o.Posterior.Inducing = c.inducing
			nll, rep, took := fitNLL(t, o, train, test)
			ref := o
			ref.Train = TrainOptions{Tolerance: DefaultLBFGSTol / 100, Epochs: 5000}
			refNLL, refRep, refTook := fitNLL(t, ref, train, test)
			t.Logf("%s: default %.5f (%s, %v); converged reference %.5f (%s, %v)", c.model, nll, rep, took.Round(time.Millisecond), refNLL, refRep, refTook.Round(time.Millisecond))
			if rep == nil || !rep.Converged || rep.Optimizer != "lbfgs" {
				t.Errorf("default fit: %v, want a converged L-BFGS fit", rep)
			}
			if !refRep.Converged {
				t.Errorf("reference fit did not converge: %v", refRep)
			}
			if math.Abs(nll-refNLL) > 0.01*refNLL {
				t.Errorf("default test NLL %.5f, converged %.5f: more than 1%% apart", nll, refNLL)
			}
		})
	}
}

// TestUnconvergedFitSaysSo: a fit stopped at its cap while still improving
// warns in one line naming the cap and the rise, and the saved model keeps
// the report (a model file without one still loads).
func TestUnconvergedFitSaysSo(t *testing.T) {
	skipSequentialUnderRace(t)
	train := curvedSet(100, 3)
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"adam", Options{Model: "svgp-kl", Train: TrainOptions{Optimizer: "adam", Epochs: 5}}, "stopped at the 5-epoch cap with the ELBO still rising"},
		{"lbfgs", Options{Model: "svgp", Posterior: PosteriorOptions{Inducing: 10}, Train: TrainOptions{Epochs: 3}}, "stopped at the 3-iteration cap with the ELBO still rising"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.o)
			if err != nil {
				t.Fatal(err)
			}
			var warn bytes.Buffer
			if err := m.Fit(context.Background(), train, FitConfig{Warnings: &warn}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[0], "raise the cap") {
				t.Fatalf("warnings %q, want one line with %q", warn.String(), c.want)
			}
			r := m.FitReport()
			if r.Converged || r.Reason != "cap" || !(r.Rise > 0) || !(r.RelRise > r.Tolerance) {
				t.Fatalf("report %+v, want unconverged at the cap and rising", r)
			}
			path := filepath.Join(t.TempDir(), "m.json")
			if err := m.Save(path); err != nil {
				t.Fatal(err)
			}
			back, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := back.FitReport(); got == nil || *got != *r {
				t.Fatalf("loaded report %+v, want %+v", got, r)
			}
		})
	}
}

// TestLBFGSFitProgress: a full-batch fit writes L-BFGS progress lines
// (iteration, the ELBO, time) and a last line saying why it stopped.
func TestLBFGSFitProgress(t *testing.T) {
	m, err := New(Options{Model: "svgp", Posterior: PosteriorOptions{Inducing: 10}, Train: TrainOptions{Epochs: 20}})
	if err != nil {
		t.Fatal(err)
	}
	var prog bytes.Buffer
	if err := m.Fit(context.Background(), curvedSet(100, 4), FitConfig{Progress: &prog, Warnings: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	out := prog.String()
	if !strings.HasPrefix(out, "L-BFGS iteration 1/20  elbo ") || !strings.Contains(out, "\nL-BFGS stopped after ") {
		t.Fatalf("progress %q, want iteration lines and a last line", out)
	}
	// Throttled: a fit of a fraction of a second prints the first and
	// the last line only.
	if n := strings.Count(out, "\n"); n > 2+int(m.FitReport().Iterations/100) {
		t.Errorf("%d progress lines for a short fit: %q", n, out)
	}
}

// TestZeroOptionsStandardize: the zero options standardise the inputs (as
// gpc train does), NoStandardize turns it off, and a file that did not
// standardise loads as one that did not.
func TestZeroOptionsStandardize(t *testing.T) {
	skipSequentialUnderRace(t)
	ds := curvedSet(60, 5)
	for _, no := range []bool{false, true} {
		o := Options{Model: "mgp", Posterior: PosteriorOptions{Inducing: 5}, Train: TrainOptions{Epochs: 2}}
		o.Inputs.NoStandardize = no
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if m.Opts.Inputs.Standardize == no {
			t.Fatalf("NoStandardize %v: Standardize %v", no, m.Opts.Inputs.Standardize)
		}
		if err := m.Fit(context.Background(), ds, FitConfig{Warnings: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.json")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if back.Opts.Inputs.Standardize != !no || back.Opts.Inputs.NoStandardize != no {
			t.Fatalf("NoStandardize %v: loaded %+v", no, back.Opts.Inputs)
		}
	}
	o := Options{Model: "mgp"}
	o.Inputs.Standardize, o.Inputs.NoStandardize = true, true
	if _, err := New(o); err == nil {
		t.Fatal("Standardize and NoStandardize together accepted")
	}
}
