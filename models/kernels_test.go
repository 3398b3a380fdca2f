package models

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// The model-level gradient check through composite kernels: every
// trainable parameter of the sum's and product's parts and the composite's
// one white noise, first and second order, in the plain model and in
// NIMGP_FO, which differentiates ∂μ/∂x through the kernel. The composite's
// σ₀² starts at e⁻²⁰, so K_ZZ has little but the jitter on its diagonal:
// at 1e-3 its condition number lifts the finite differences' round-off to
// 1e-5 relative (the error falls as 1/jitter: 3e-7 at 1e-2, 3e-9 at 0.1,
// with the same analytic gradient), so these checks run at jitter 0.1.
func TestCompositeKernelELBOGradients(t *testing.T) {
	skipFiniteDifferencesUnderRace(t)
	for _, model := range []string{"mgp", "nimgp-fo"} {
		for _, expr := range []string{"matern52+linear", "se*linear", "(se-iso+linear)*poly(2)"} {
			for order := 1; order <= 2; order++ {
				t.Run(model+"/"+expr+"/order"+string(rune('0'+order)), func(t *testing.T) {
					o := Options{Model: model, Kernel: KernelOptions{Name: expr}}
					o.Posterior.Jitter = 0.1
					rep, err := CheckGradients(o, order, 3)
					if err != nil {
						t.Fatal(err)
					}
					if !(rep.MaxRelErr <= 1e-6) {
						t.Errorf("%s", rep.Worst())
					}
				})
			}
		}
	}
}

// trainSmall fits o on a small data set and returns the model and a test set.
func trainSmall(t *testing.T, o Options) (*Model, []float64, int) {
	t.Helper()
	train := syntheticSet(120, 3, 3, 4)
	test := syntheticSet(30, 3, 3, 5)
	o.Posterior.Inducing = 10
	o.Train = TrainOptions{Epochs: 2, Batch: 40, Seed: 3}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	return m, test.X, test.N
}

// samePredictions requires two models to predict x bit for bit alike.
func samePredictions(t *testing.T, a, b *Model, x []float64, n int) {
	t.Helper()
	pa, err := a.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pa {
		if math.Float64bits(pa[i]) != math.Float64bits(pb[i]) {
			t.Fatalf("prediction %d: %v before saving, %v after loading", i, pa[i], pb[i])
		}
	}
}

// Composite kernels are saved as their expression and rebuilt by Load.
func TestCompositeKernelSaveLoad(t *testing.T) {
	for _, expr := range []string{"matern52+linear", "se*linear", "(se-iso + linear)*poly(2)", "matern32-iso"} {
		t.Run(expr, func(t *testing.T) {
			m, x, n := trainSmall(t, Options{Kernel: KernelOptions{Name: expr}})
			path := filepath.Join(t.TempDir(), "m.json")
			if err := m.Save(path); err != nil {
				t.Fatal(err)
			}
			l, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if l.Opts.Kernel.Name != expr {
				t.Errorf("loaded kernel %q, want %q", l.Opts.Kernel.Name, expr)
			}
			samePredictions(t, m, l, x, n)
		})
	}
}

// A model with a user's factory reloads when Load is given the factory,
// and without it Load says what is missing rather than failing on a
// parameter name.
func TestFactoryKernelLoad(t *testing.T) {
	factory := func(name string, d int, init KernelInit) kernels.Kernel {
		return kernels.Sum{kernels.NewSE(name+"/a", d, init.Lengthscale, init.Variance, init.Noise), kernels.NewLinear(name+"/b", d, 2)}
	}
	m, x, n := trainSmall(t, Options{Kernel: KernelOptions{Factory: factory}})
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path, &Options{Kernel: KernelOptions{Factory: factory}})
	if err != nil {
		t.Fatal(err)
	}
	samePredictions(t, m, l, x, n)
	_, err = Load(path, nil)
	if err == nil || !(strings.Contains(err.Error(), "Factory") || strings.Contains(err.Error(), "is not a parameter of this model")) || !strings.Contains(err.Error(), "lengthscales") {
		t.Errorf("Load without the factory: %v", err)
	}
}

// A kernel registered by the program (here under a name of this test)
// reloads by name; a program that has not registered it gets an error
// naming it.
func TestRegisteredKernelSaveLoad(t *testing.T) {
	const name = "models-test-rbf-plus-bias"
	if err := kernels.Register(name, func(c kernels.Config) (kernels.Kernel, error) {
		k, err := kernels.Build("se+linear", c)
		return k, err
	}); err != nil {
		t.Fatal(err)
	}
	m, x, n := trainSmall(t, Options{Kernel: KernelOptions{Name: name + "*se-iso"}})
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	samePredictions(t, m, l, x, n)
	// The same file in a program without the kernel: rename it in the file.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, bytes.ReplaceAll(b, []byte(name), []byte("not-registered-here")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(other, nil)
	if err == nil || !strings.Contains(err.Error(), `"not-registered-here"`) || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("Load of a file with an unregistered kernel: %v", err)
	}
}

// Invalid kernel expressions are refused by New, naming the position.
func TestKernelExpressionValidation(t *testing.T) {
	for _, c := range []struct{ expr, says string }{
		{"se+", "position 4"},
		{"rbf", `unknown kernel "rbf"`},
		{"poly(0)", "poly(0)"},
		{"se(1)", "se takes no arguments"},
	} {
		_, err := New(Options{Kernel: KernelOptions{Name: c.expr}})
		var ee *kernels.ExprError
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("New with kernel %q: %v, want %q", c.expr, err, c.says)
		}
		if strings.Contains(c.says, "position") && !errors.As(err, &ee) {
			t.Errorf("kernel %q: the error does not wrap the parser's", c.expr)
		}
	}
	// The jitter is the kernel's own: a product with a polynomial factor
	// takes the larger, stationary one.
	for expr, want := range map[string]float64{"poly": 1e-10, "poly(3)": 1e-10, "se": 1e-3, "poly*se": 1e-3, "linear": 1e-3} {
		m, err := New(Options{Kernel: KernelOptions{Name: expr}})
		if err != nil {
			t.Fatal(err)
		}
		if m.Opts.Posterior.Jitter != want {
			t.Errorf("kernel %s: jitter %g, want %g", expr, m.Opts.Posterior.Jitter, want)
		}
	}
}
