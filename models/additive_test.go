package models

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/solvers"
)

// twoClass makes CheckGradients build a two-class problem for a likelihood
// that serves any number of classes, so that the binary (closed-form) path
// of gpc1–gpc3 is checked as well as the multi-class one.
type twoClass struct{ likelihoods.Likelihood }

func (twoClass) Classes() int { return 2 }

func TestGPCAdditivePresets(t *testing.T) {
	names := PresetNames()
	for i, k := range AdditivePresets {
		p, ok := LookupPreset(k)
		if !ok {
			t.Fatalf("preset %s not registered (have %v)", k, names)
		}
		if p.Inputs != "observed" || p.Posterior != "sparse" || p.Inference != "svi" || p.ZInit != "kmeans" || !slices.Equal(p.Likelihoods, []string{k}) {
			t.Errorf("%s: parts %+v", k, p)
		}
		if i > 0 && slices.Index(names, k) < slices.Index(names, AdditivePresets[i-1]) {
			t.Errorf("presets listed out of the paper's order: %v", names)
		}
	}
}

// Every part of the additive-noise models against finite differences: the
// four presets with three classes and (gpc1–gpc3's closed form) two, first
// and second order; and the Appendix D composition (shared Z, the RBF and
// Matérn+RBF kernel factories, fixed δ).
func TestGPCAdditiveGradients(t *testing.T) {
	skipFiniteDifferencesUnderRace(t)
	type tc struct {
		name string
		o    Options
	}
	var cases []tc
	for _, k := range AdditivePresets {
		cases = append(cases, tc{k + "/C=3", Options{Model: k}})
		l, err := likelihoods.New(k, likelihoods.Config{})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Model: k}
		o.Likelihood.Custom = twoClass{l}
		cases = append(cases, tc{k + "/C=2", o})
	}
	d := AppendixD(Options{Model: "gpc2"})
	cases = append(cases, tc{"gpc2/appendixD", d})
	d3 := AppendixD(Options{Model: "gpc3", Likelihood: LikelihoodOptions{Delta: 0.05, FixDelta: true}})
	d3.Kernel.Name, d3.Kernel.Factory = AdditiveMaternRBF, nil
	cases = append(cases, tc{"gpc3/matern+rbf/fixed-delta", d3})
	dsm := AppendixD(Options{Model: "gpcsm"})
	dsm.Posterior.Whitened = true
	cases = append(cases, tc{"gpcsm/appendixD/whitened", dsm})
	for _, c := range cases {
		for order := 1; order <= 2; order++ {
			t.Run(fmt.Sprintf("%s/order%d", c.name, order), func(t *testing.T) {
				rep, err := CheckGradients(c.o, order, 3)
				if err != nil {
					t.Fatal(err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					t.Errorf("%s", rep.Worst())
				}
				if c.o.Likelihood.FixDelta {
					for _, p := range rep.Params {
						if p.Name == "likelihood/logit-delta" {
							t.Errorf("fixed δ is among the checked (trainable) parameters")
						}
					}
				}
			})
		}
	}
}

// additiveBlobs returns n points of c well-separated Gaussian clusters in d
// dimensions (class k centred at 3·e_{k mod d}, sign alternating).
func additiveBlobs(n, d, c int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	ds := &datasets.Dataset{Name: "blobs", N: n, D: d, C: c, X: make([]float64, n*d), Y: make([]int, n)}
	for i := range n {
		y := i % c
		ds.Y[i] = y
		for j := range d {
			ds.X[i*d+j] = 0.7 * rng.NormFloat64()
		}
		sign := 1.0
		if (y/d)%2 == 1 {
			sign = -1
		}
		ds.X[i*d+y%d] += 3 * sign
	}
	return ds
}

func smallAppendixD(model string, lik LikelihoodOptions) Options {
	o := AppendixD(Options{Model: model, Likelihood: lik})
	o.Posterior.Inducing, o.Train.Batch, o.Train.Epochs, o.Train.Seed = 15, 64, 60, 1
	return o
}

// The presets train on binary and multi-class data through the models API
// (what gpc train and gpc predict call): better than chance by far,
// probability rows summing to one, δ learned by default and held with
// FixDelta.
func TestGPCAdditiveFitPredict(t *testing.T) {
	bin, binTest := additiveBlobs(200, 2, 2, 1), additiveBlobs(100, 2, 2, 2)
	multi, multiTest := additiveBlobs(240, 2, 3, 3), additiveBlobs(120, 2, 3, 4)
	for _, c := range []struct {
		model       string
		train, test *datasets.Dataset
		lik         LikelihoodOptions
	}{
		{"gpc1", bin, binTest, LikelihoodOptions{}},
		{"gpc2", bin, binTest, LikelihoodOptions{}},
		{"gpc3", bin, binTest, LikelihoodOptions{Delta: 0.02, FixDelta: true}},
		{"gpc1", multi, multiTest, LikelihoodOptions{}},
		{"gpc3", multi, multiTest, LikelihoodOptions{}},
		{"gpcsm", multi, multiTest, LikelihoodOptions{}},
	} {
		t.Run(fmt.Sprintf("%s/C=%d/fix=%v", c.model, c.train.C, c.lik.FixDelta), func(t *testing.T) {
			m, err := New(smallAppendixD(c.model, c.lik))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Fit(context.Background(), c.train, FitConfig{Warnings: io.Discard}); err != nil {
				t.Fatal(err)
			}
			wantLatent := c.train.C
			if c.train.C == 2 && c.model != "gpcsm" {
				wantLatent = 1
			}
			if got := m.Likelihood().Latent(c.train.C); got != wantLatent {
				t.Errorf("%d latent functions, want %d", got, wantLatent)
			}
			if z := m.InducingInputs(); !slices.Equal(z[0], z[len(z)-1]) || !m.post.SharedZ || m.post.Z[0] != m.post.Z[len(m.post.Z)-1] {
				t.Errorf("inducing inputs not shared by the %d latent functions", len(z))
			}
			p, err := m.Predict(c.test.X, c.test.N, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.test.N {
				var s float64
				for _, v := range p[i*c.test.C : (i+1)*c.test.C] {
					if !(v >= 0 && v <= 1) {
						t.Fatalf("row %d: probability %v", i, v)
					}
					s += v
				}
				if math.Abs(s-1) > 1e-9 {
					t.Fatalf("row %d sums to %v", i, s)
				}
			}
			sc := Score(p, c.test.Y, c.test.C)
			if sc.Error > 0.1 || sc.NLL > 0.4 {
				t.Errorf("error %.3f, nll %.3f on well-separated clusters", sc.Error, sc.NLL)
			}
			if a, ok := m.Likelihood().(*likelihoods.Additive); ok {
				delta := a.DeltaValue()
				switch {
				case c.lik.FixDelta && math.Abs(delta-c.lik.Delta) > 1e-15:
					t.Errorf("fixed δ moved from %g to %g", c.lik.Delta, delta)
				case !c.lik.FixDelta && math.Abs(delta-1e-3) < 1e-6:
					t.Errorf("learned δ stayed at its initial %g", delta)
				}
				t.Logf("error %.3f, nll %.3f, δ = %.4g", sc.Error, sc.NLL, delta)
			}
		})
	}
}

// A binary gpc2 model with a fixed δ saves and loads (gpc predict's path)
// with identical predictions and its δ setting.
func TestGPCAdditiveSaveLoadBinary(t *testing.T) {
	train, test := additiveBlobs(120, 3, 2, 5), additiveBlobs(40, 3, 2, 6)
	m, err := New(smallAppendixD("gpc2", LikelihoodOptions{Delta: 0.01, FixDelta: true}))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	l := saveLoad(t, m, test)
	if l.Name() != "gpc2" || l.Opts.Likelihood.Delta != 0.01 || !l.Opts.Likelihood.FixDelta {
		t.Errorf("loaded %s with likelihood options %+v", l.Name(), l.Opts.Likelihood)
	}
}

// A shared kernel is one set of hyper-parameters for every class: at the
// same values the bound equals that of a kernel per class (which start
// equal), the kernel's parameters count once, and a fitted model saves and
// loads with identical predictions.
func TestSharedKernel(t *testing.T) {
	train, test := additiveBlobs(120, 3, 3, 5), additiveBlobs(30, 3, 3, 6)
	loss := map[bool]float64{}
	groups := map[bool]int{}
	for _, shared := range []bool{false, true} {
		o := smallAppendixD("gpc1", LikelihoodOptions{})
		o.Kernel.Shared = shared
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		st, err := m.NewStepper(train)
		if err != nil {
			t.Fatal(err)
		}
		batches, err := solvers.EpochBatches(train.N, 64, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if loss[shared], err = st.Step(batches[0]); err != nil {
			t.Fatal(err)
		}
		groups[shared] = m.ParamCount()["kernel"]
	}
	if d := math.Abs(loss[true] - loss[false]); d > 1e-9*math.Abs(loss[false]) {
		t.Errorf("first loss %.12g shared, %.12g per class", loss[true], loss[false])
	}
	if groups[false] != 3*groups[true] || groups[true] == 0 {
		t.Errorf("kernel parameters: %d shared, %d per class (want a third)", groups[true], groups[false])
	}
	o := smallAppendixD("gpc1", LikelihoodOptions{})
	if !o.Kernel.Shared {
		t.Fatal("AppendixD does not share the kernel")
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if l := saveLoad(t, m, test); !l.Opts.Kernel.Shared {
		t.Error("the loaded model lost Kernel.Shared")
	}
}

// AppendixD fills the paper's settings and its kernel starts at ℓ = 0.1·√d
// (0.01·d squared), σ² = 5.
func TestGPCAdditiveAppendixD(t *testing.T) {
	o := AppendixD(Options{Model: "gpc1"})
	p, tr := o.Posterior, o.Train
	if p.Inducing != 300 || p.ZInit != "kmeans" || !p.SharedZ || p.Jitter != 1e-6 || tr.Batch != 1024 || tr.LR != 0.01 || tr.Optimizer != "adam" || o.Kernel.Name != "se" || o.Kernel.Factory == nil {
		t.Fatalf("AppendixD gave %+v", o)
	}
	// Explicit settings win.
	if q := AppendixD(Options{Posterior: PosteriorOptions{Inducing: 7}, Train: TrainOptions{Batch: 9, LR: 0.1}, Kernel: KernelOptions{Name: "poly"}}); q.Posterior.Inducing != 7 || q.Train.Batch != 9 || q.Train.LR != 0.1 || q.Kernel.Factory != nil {
		t.Errorf("AppendixD overrode explicit settings: %+v", q)
	}
	const d = 16
	x := make([]float64, 5*d)
	for i := range x {
		x[i] = float64(i%5) - 2
	}
	data := kernels.NewData(x, 5, d, rand.New(rand.NewPCG(1, 1)))
	for _, c := range []struct {
		f    func() kernels.Kernel
		want map[string]float64
	}{
		{func() kernels.Kernel {
			return AdditiveKernel("k", d, KernelInit{Lengthscale: 3, Variance: math.E, Noise: math.Exp(-20)})
		}, map[string]float64{"k/lengthscales": 0.01 * d, "k/variance": 5, "k/white": math.Exp(-20)}},
		{func() kernels.Kernel {
			k, err := kernels.Build(AdditiveMaternRBF, kernels.Config{Name: "k", D: d, Data: data})
			if err != nil {
				t.Fatal(err)
			}
			return k
		}, map[string]float64{"k/m52/lengthscales": 0.01 * d, "k/m52/variance": 5, "k/rbf/lengthscales": d, "k/rbf/variance": 5, "k/rbf/white": math.Exp(-20)}},
	} {
		k := c.f()
		got := map[string]float64{}
		for _, p := range k.Params() {
			got[p.Name] = p.Value(0)
			if p.Name == "k/lengthscales" || p.Name == "k/m52/lengthscales" {
				if n := len(p.Data); n != d {
					t.Errorf("%s has %d entries, want %d (ARD)", p.Name, n, d)
				}
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("parameters %v, want %v", got, c.want)
		}
		for name, v := range c.want {
			if math.Abs(got[name]-v) > 1e-12*v {
				t.Errorf("%s = %v, want %v", name, got[name], v)
			}
		}
	}
	// The factory reaches the model: a fitted SE kernel started there.
	m, err := New(AppendixD(Options{Model: "gpc2"}))
	if err != nil {
		t.Fatal(err)
	}
	m.Opts.Posterior.Inducing = 5
	if err := m.initialize(additiveBlobs(50, d, 2, 9), io.Discard); err != nil {
		t.Fatal(err)
	}
	if se, ok := m.kernels[0].(*kernels.SE); !ok || math.Abs(se.Lengthscales.Value(0)-0.01*d) > 1e-12 || math.Abs(se.Variance.Value(0)-5) > 1e-12 {
		t.Errorf("model kernel %T %+v", m.kernels[0], m.kernels[0])
	}
}

func TestGPCAdditiveEpochs(t *testing.T) {
	for _, c := range []struct{ steps, n, batch, want int }{
		{10000, 6660, 1024, 1429}, // 7 steps per epoch
		{10000, 1024, 1024, 10000},
		{10000, 500, 1024, 10000}, // full batch
		{100, 1000, 10, 1},
		{1, 0, 10, 1},
	} {
		if got := EpochsFor(c.steps, c.n, c.batch); got != c.want {
			t.Errorf("EpochsFor(%d, %d, %d) = %d, want %d", c.steps, c.n, c.batch, got, c.want)
		}
	}
	if AppendixDEpochs(6660, 1024) != 1429 {
		t.Errorf("AppendixDEpochs(6660, 1024) = %d", AppendixDEpochs(6660, 1024))
	}
}

// oldAdditiveMaternRBF is the KernelFactory Table V's kernel was before it
// was registered, verbatim.
func oldAdditiveMaternRBF(name string, d int, init KernelInit) kernels.Kernel {
	m, err := kernels.NewMatern(name+"/m52", 2.5, d, 0.01*float64(d), AppendixDVariance, 0)
	if err != nil {
		panic(err)
	}
	return kernels.Sum{m, kernels.NewSE(name+"/rbf", d, float64(d), AppendixDVariance, init.Noise)}
}

// A model with Table V's kernel saves its name and reloads by it, with no
// factory given to Load, to identical predictions; and the registered
// kernel trains bit for bit as the factory it replaces did, so that the
// liu_uci results do not move.
func TestAdditiveMaternRBFReloads(t *testing.T) {
	o := AppendixD(Options{Model: "gpc2"})
	o.Kernel.Name, o.Kernel.Factory = AdditiveMaternRBF, nil
	m, x, n := trainSmall(t, o)
	want, err := m.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fresh", "table5.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("predictions after loading differ: %v, want %v", got[:3], want[:3])
	}
	old := AppendixD(Options{Model: "gpc2"})
	old.Kernel.Factory = oldAdditiveMaternRBF
	mo, _, _ := trainSmall(t, old)
	po, err := mo.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(po, want) {
		t.Fatalf("the registered kernel predicts %v, the factory it replaces %v", want[:3], po[:3])
	}
}
