package mcmc

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// gaussian is a Gaussian likelihood y = f + ε, ε ~ N(0, noise), for tests:
// its posterior is known exactly. It keeps its real-valued targets itself
// (Targets ignores the labels, which only size the data set).
type gaussian struct {
	y     []float64
	noise float64
}

func (l gaussian) Latent(int) int          { return 1 }
func (l gaussian) Params() []*layers.Param { return nil }
func (l gaussian) Targets(labels []int, _ int) ([]float64, int) {
	return append([]float64(nil), l.y[:len(labels)]...), 1
}

// ExpectedLogLik is −½log 2πσ² − ((y − μ)² + v)/(2σ²).
func (l gaussian) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	d := e.Do(G.Sub(y, mu))
	q := e.Do(G.Add(e.Do(G.Square(d)), v))
	out := e.Do(G.Add(e.Do(G.HadamardProd(q, G.NewConstant(-0.5/l.noise))), G.NewConstant(-0.5*math.Log(2*math.Pi*l.noise))))
	return e.Do(graph.Reshape(out, []int{mu.Shape()[0]})), e.Err
}

// Predict is unused by these tests (two equal columns).
func (l gaussian) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	h := e.Do(G.HadamardProd(e.Do(G.Add(mu, e.Do(G.Neg(mu)))), G.NewConstant(1.0)))
	h = e.Do(G.Add(h, G.NewConstant(0.5)))
	c := e.Do(graph.Column(h, 0))
	return e.Do(graph.Stack(c, c)), e.Err
}

// kv returns engine settings from key, value pairs.
func kv(pairs ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		out[Name+"."+pairs[i]] = pairs[i+1]
	}
	return out
}

// priorCov returns the model's prior covariance of f at the training
// inputs, K + (σ₀² + jitter)I, as the engine factorises it.
func priorCov(t *testing.T, m *models.Model) *mat.SymDense {
	tg, err := newTarget(m, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	if err := tg.factor(); err != nil {
		t.Fatal(err)
	}
	n := tg.n
	L := mat.NewDense(n, n, tg.chol[0])
	var K mat.Dense
	K.Mul(L, L.T())
	S := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			S.SetSym(i, j, K.At(i, j))
		}
	}
	return S
}

// On a Gaussian likelihood the sampler's posterior means and variances of
// f match the exact posterior: over independent seeds the estimates'
// average differs from the truth by no more than Monte Carlo error (a
// z-test on each of the points, |z| < 4).
func TestGaussianPosteriorZTest(t *testing.T) {
	t.Run("prior", func(t *testing.T) { gaussianZTest(t) })
	// Ellipses around an inexact Gaussian (svi stopped early): the
	// target, and so the posterior, are unchanged.
	t.Run("fit", func(t *testing.T) { gaussianZTest(t, "proposal", "fit", "fit", "svi") })
}

func gaussianZTest(t *testing.T, extra ...string) {
	const n, noise, seeds = 12, 0.3, 24
	rng := rand.New(rand.NewPCG(3, 3))
	ds := &datasets.Dataset{Name: "gauss", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
	y := make([]float64, n)
	for i := range ds.X {
		ds.X[i] = 4 * (rng.Float64() - 0.5)
		y[i] = math.Sin(2*ds.X[i]) + math.Sqrt(noise)*rng.NormFloat64()
		ds.Y[i] = i % 2
	}
	means := make([][]float64, seeds)
	vars := make([][]float64, seeds)
	var exactMean, exactVar []float64
	for s := 0; s < seeds; s++ {
		m, err := models.New(models.Options{Inputs: models.InputOptions{NoStandardize: true}, Likelihood: models.LikelihoodOptions{Custom: gaussian{y: y, noise: noise}},
			Posterior: models.PosteriorOptions{Family: "full"}, Inference: Name,
			Train:    models.TrainOptions{Seed: uint64(100 + s), Optimizer: "lbfgs", Epochs: 5},
			Settings: kv(append([]string{"chains", "2", "samples", "1500", "warmup", "200"}, extra...)...)})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
			t.Fatal(err)
		}
		if exactMean == nil {
			// Exact: mean K(K+σ²I)⁻¹y, covariance K − K(K+σ²I)⁻¹K.
			K := priorCov(t, m)
			A := mat.NewSymDense(n, nil)
			A.CopySym(K)
			for i := 0; i < n; i++ {
				A.SetSym(i, i, A.At(i, i)+noise)
			}
			var ch mat.Cholesky
			if !ch.Factorize(A) {
				t.Fatal("K + σ²I not positive definite")
			}
			var KiK mat.Dense
			if err := ch.SolveTo(&KiK, K); err != nil {
				t.Fatal(err)
			}
			var v mat.VecDense
			if err := ch.SolveVecTo(&v, mat.NewVecDense(n, y)); err != nil {
				t.Fatal(err)
			}
			var mu mat.VecDense
			mu.MulVec(K, &v)
			var KK mat.Dense
			KK.Mul(K, &KiK)
			for i := 0; i < n; i++ {
				exactMean = append(exactMean, mu.AtVec(i))
				exactVar = append(exactVar, K.At(i, i)-KK.At(i, i))
			}
		}
		st := StateOf(m)
		fs := latentDraws(t, m, st)
		means[s], vars[s] = make([]float64, n), make([]float64, n)
		for i := 0; i < n; i++ {
			var a, b float64
			for _, f := range fs {
				a += f[i]
			}
			a /= float64(len(fs))
			for _, f := range fs {
				b += (f[i] - a) * (f[i] - a)
			}
			means[s][i], vars[s][i] = a, b/float64(len(fs)-1)
		}
	}
	worst := 0.0
	for i := 0; i < n; i++ {
		for _, q := range []struct {
			name  string
			est   [][]float64
			exact float64
		}{{"mean", means, exactMean[i]}, {"variance", vars, exactVar[i]}} {
			var xs []float64
			for s := range q.est {
				xs = append(xs, q.est[s][i])
			}
			mu, v := meanVar(xs)
			z := (mu - q.exact) / math.Sqrt(v/float64(seeds))
			worst = math.Max(worst, math.Abs(z))
			if math.Abs(z) > 4 {
				t.Errorf("f_%d %s: sampled %.5f, exact %.5f, z = %.2f", i, q.name, mu, q.exact, z)
			}
		}
	}
	t.Logf("largest |z| over %d means and %d variances (%d seeds): %.2f", n, n, seeds, worst)
}

// latentDraws returns f = chol(K)ν for every draw (one latent function).
func latentDraws(t *testing.T, m *models.Model, st *State) [][]float64 {
	tg, err := newTarget(m, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	if err := tg.factor(); err != nil {
		t.Fatal(err)
	}
	n := tg.n
	var out [][]float64
	for _, d := range st.Draws {
		out = append(out, lowerTimes(tg.chol[0], d, make([]float64, n), n))
	}
	return out
}

// probitToy is a 1-D binary data set.
func probitToy(n int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	ds := &datasets.Dataset{Name: "toy", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
	for i := 0; i < n; i++ {
		x := 6*rng.Float64() - 3
		ds.X[i] = x
		if rng.Float64() < 0.5*(1+math.Erf(2*math.Sin(x)/math.Sqrt2)) {
			ds.Y[i] = 1
		}
	}
	return ds
}

// On a 1-D probit problem small enough to integrate (two training points),
// the sampled predictive probabilities match numerical integration of
// ∫ Φ(f*) p(f* | y) df* to within Monte Carlo error.
func TestProbitPredictiveMatchesQuadrature(t *testing.T) {
	ds := &datasets.Dataset{Name: "two", N: 2, D: 1, C: 2, X: []float64{-0.5, 0.7}, Y: []int{1, 0}}
	m, err := models.New(models.Options{Inputs: models.InputOptions{NoStandardize: true}, Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "full"},
		Inference: Name, Settings: kv("chains", "4", "samples", envOr("PROBIT_SAMPLES", "5000"), "warmup", "200")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		t.Fatal(err)
	}
	xs := []float64{-2, -0.5, 0, 0.3, 1.5}
	got, err := m.Predict(xs, len(xs), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kernel values as the engine computes them.
	p, err := newPredictor(m, len(xs), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	copy(p.x, xs)
	if err := p.kScope.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := p.kProg.Run(); err != nil {
		t.Fatal(err)
	}
	kzz, _ := p.kProg.Float64s(p.kzz[0])
	kzx, _ := p.kProg.Float64s(p.kzx[0])
	kd, _ := p.kProg.Float64s(p.kd[0])
	K := mat.NewSymDense(2, append([]float64(nil), kzz...))
	var ch mat.Cholesky
	if !ch.Factorize(K) {
		t.Fatal("K not positive definite")
	}
	var L mat.TriDense
	ch.LTo(&L)
	ys := []float64{1, -1}
	gx, gw := make([]float64, 80), make([]float64, 80)
	quad.Hermite{}.FixedLocations(gx, gw, math.Inf(-1), math.Inf(1))
	Phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	for r, x := range xs {
		// a = K⁻¹ k*, c = k** − k*ᵀ K⁻¹ k*; f = Lν, ν ~ N(0, I) by
		// Gauss–Hermite in each coordinate (ν = √2 t).
		kx := mat.NewVecDense(2, []float64{kzx[r], kzx[len(xs)+r]})
		var a mat.VecDense
		if err := ch.SolveVecTo(&a, kx); err != nil {
			t.Fatal(err)
		}
		c := kd[r] - mat.Dot(kx, &a)
		var num, den float64
		for i := range gx {
			for j := range gx {
				n0, n1 := math.Sqrt2*gx[i], math.Sqrt2*gx[j]
				f0 := L.At(0, 0) * n0
				f1 := L.At(1, 0)*n0 + L.At(1, 1)*n1
				w := gw[i] * gw[j] * Phi(ys[0]*f0) * Phi(ys[1]*f1)
				den += w
				num += w * Phi((a.AtVec(0)*f0+a.AtVec(1)*f1)/math.Sqrt(1+c))
			}
		}
		exact := num / den
		// Monte Carlo standard error of the sampled value: the per-draw
		// predictive values' standard deviation over √(bulk ESS).
		st := StateOf(m)
		chains := make([][]float64, len(st.Counts))
		var all []float64
		k := 0
		for ci, cnt := range st.Counts {
			for _, d := range st.Draws[k : k+cnt] {
				f0 := L.At(0, 0) * d[0]
				f1 := L.At(1, 0)*d[0] + L.At(1, 1)*d[1]
				g := Phi((a.AtVec(0)*f0 + a.AtVec(1)*f1) / math.Sqrt(1+c))
				chains[ci] = append(chains[ci], g)
				all = append(all, g)
			}
			k += cnt
		}
		_, v := meanVar(all)
		se := math.Sqrt(v / BulkESS(chains))
		d := math.Abs(got[2*r+1] - exact)
		t.Logf("x* = %g: sampled p(y=1) %.4f, integrated %.4f, |Δ| %.4f = %.1f standard errors", x, got[2*r+1], exact, d, d/se)
		if d > 4*se+1e-4 {
			t.Errorf("x* = %g: |Δ| %.4f exceeds 4 standard errors (%.4f)", x, d, se)
		}
	}
}

// On the 1-D example (probit, 100 points, hyper-parameters fitted by EP)
// the chains converge: split-R̂ below 1.01 on every latent value.
func TestRHatOnExample(t *testing.T) {
	if testing.Short() {
		t.Skip("long chains")
	}
	ds := probitToy(100, 1)
	m, err := models.New(models.Options{Inputs: models.InputOptions{NoStandardize: true}, Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "full"},
		Inference: Name, Settings: kv("samples", "6000", "warmup", "500", "fit", "ep")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		t.Fatal(err)
	}
	d := StateOf(m).Diagnostics
	t.Logf("max split-R-hat %.4f, min bulk ESS %.0f of %d draws, R-hat(log-lik) %.4f, %.2f shrinks/step, %.3gs per effective sample",
		d.MaxRHat, d.MinESS, d.Draws, d.RHatLogLik, d.ShrinksPerStep, d.SecondsPerESS)
	if !(d.MaxRHat < 1.01) {
		t.Errorf("max split-R-hat %.4f ≥ 1.01", d.MaxRHat)
	}
}

func fitSmall(t *testing.T, ctx context.Context, o models.Options, ds *datasets.Dataset, fc models.FitConfig) (*models.Model, error) {
	t.Helper()
	m, err := models.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Fit(ctx, ds, fc)
}

func smallOpts(extra ...string) models.Options {
	return models.Options{Inputs: models.InputOptions{NoStandardize: true}, Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "full"},
		Inference: Name, Train: models.TrainOptions{Seed: 7}, Settings: kv(append([]string{"chains", "3", "samples", "60", "warmup", "20"}, extra...)...)}
}

// variant is the settings of a sampler variant: hyper-parameters "fixed"
// or "sample", or "fit": held at EP's, ellipses around EP's Gaussian.
func variant(v string) []string {
	if v == "fit" {
		return []string{"fit", "ep", "proposal", "fit"}
	}
	return []string{"hyper", v}
}

func sameDraws(a, b *State) bool {
	if len(a.Draws) != len(b.Draws) || len(a.Thetas) != len(b.Thetas) {
		return false
	}
	for i := range a.Draws {
		for j := range a.Draws[i] {
			if a.Draws[i][j] != b.Draws[i][j] {
				return false
			}
		}
	}
	for i := range a.Thetas {
		for j := range a.Thetas[i] {
			if a.Thetas[i][j] != b.Thetas[i][j] {
				return false
			}
		}
	}
	return true
}

// A fixed seed gives the same draws, whatever the goroutines' schedule;
// another seed other draws. Also with the hyper-parameters sampled.
func TestSameSeedSameDraws(t *testing.T) {
	ds := probitToy(40, 2)
	for _, hyper := range []string{"fixed", "sample", "fit"} {
		a, err := fitSmall(t, context.Background(), smallOpts(variant(hyper)...), ds, models.FitConfig{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := fitSmall(t, context.Background(), smallOpts(variant(hyper)...), ds, models.FitConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if !sameDraws(StateOf(a), StateOf(b)) {
			t.Errorf("%s: two fits with one seed drew differently", hyper)
		}
		o := smallOpts(variant(hyper)...)
		o.Train.Seed = 8
		c, err := fitSmall(t, context.Background(), o, ds, models.FitConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if sameDraws(StateOf(a), StateOf(c)) {
			t.Errorf("%s: two seeds drew the same", hyper)
		}
		if hyper == "sample" {
			th := StateOf(a).Thetas
			moved := false
			for _, x := range th {
				moved = moved || x[0] != th[0][0]
			}
			if !moved {
				t.Error("the sampled length-scale never moved")
			}
		}
	}
}

// cancelAfter is a progress writer that cancels after k lines.
type cancelAfter struct {
	mu     sync.Mutex
	k      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.k -= strings.Count(string(p), "\n")
	if w.k <= 0 {
		w.cancel()
	}
	return len(p), nil
}

// Cancelling ends the run at an iteration boundary and keeps the draws made
// so far: Fit returns the context's error, the model predicts from them.
func TestCancelKeepsDraws(t *testing.T) {
	ds := probitToy(40, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := fitSmall(t, ctx, smallOpts(), ds, models.FitConfig{Progress: &cancelAfter{k: 30, cancel: cancel}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fit returned %v, want context.Canceled", err)
	}
	st := StateOf(m)
	if st == nil || len(st.Draws) == 0 || len(st.Draws) >= 3*60 {
		t.Fatalf("kept %v draws, want some but not all", st)
	}
	p, err := m.Predict(ds.X[:3], 3, nil)
	if err != nil || len(p) != 6 {
		t.Fatalf("predicting from the kept draws: %v %v", p, err)
	}
	t.Logf("kept %d draws (counts %v)", len(st.Draws), st.Counts)
}

// A run interrupted and resumed from its checkpoint ends with the draws of
// an uninterrupted run; a checkpoint of another fit is refused.
func TestCheckpointResume(t *testing.T) {
	ds := probitToy(40, 2)
	for _, hyper := range []string{"fixed", "sample", "fit"} {
		full, err := fitSmall(t, context.Background(), smallOpts(variant(hyper)...), ds, models.FitConfig{})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "ck")
		ctx, cancel := context.WithCancel(context.Background())
		_, err = fitSmall(t, ctx, smallOpts(variant(hyper)...), ds, models.FitConfig{Progress: &cancelAfter{k: 10, cancel: cancel},
			Checkpoint: &models.Checkpoint{Path: path}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted fit: %v", err)
		}
		resumed, err := fitSmall(t, context.Background(), smallOpts(variant(hyper)...), ds, models.FitConfig{Checkpoint: &models.Checkpoint{Path: path}})
		if err != nil {
			t.Fatal(err)
		}
		if !sameDraws(StateOf(full), StateOf(resumed)) {
			t.Errorf("%s: the resumed run drew otherwise than the uninterrupted one", hyper)
		}
		o := smallOpts(variant(hyper)...)
		o.Train.Seed = 99
		if _, err := fitSmall(t, context.Background(), o, ds, models.FitConfig{Checkpoint: &models.Checkpoint{Path: path}}); err == nil || !strings.Contains(err.Error(), "another fit") {
			t.Errorf("%s: a checkpoint of another fit: %v", hyper, err)
		}
	}
}

// Save stores the draws; the loaded model predicts the same.
func TestSaveLoad(t *testing.T) {
	ds := probitToy(40, 2)
	m, err := fitSmall(t, context.Background(), smallOpts(), ds, models.FitConfig{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := models.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Predict(ds.X[:5], 5, nil)
	b, err := l.Predict(ds.X[:5], 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			t.Fatalf("loaded model predicts %v, fitted %v", b, a)
		}
	}
}

// Multi-class likelihoods work through the same code: three classes under
// robust-max and softmax, probabilities summing to one and fitting the
// training labels better than chance.
func TestMultiClass(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	n := 45
	ds := &datasets.Dataset{Name: "three", N: n, D: 1, C: 3, X: make([]float64, n), Y: make([]int, n)}
	for i := range ds.Y {
		ds.Y[i] = i % 3
		ds.X[i] = float64(ds.Y[i])*2 + 0.5*rng.NormFloat64()
	}
	for _, lik := range []string{"robustmax", "softmax"} {
		o := smallOpts()
		o.Likelihood.Name = lik
		m, err := fitSmall(t, context.Background(), o, ds, models.FitConfig{})
		if err != nil {
			t.Fatal(lik, err)
		}
		p, err := m.Predict(ds.X, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := models.Score(p, ds.Y, 3)
		t.Logf("%s: training error %.3f, NLL %.3f", lik, sc.Error, sc.NLL)
		if sc.Error > 0.3 {
			t.Errorf("%s: training error %.3f", lik, sc.Error)
		}
	}
}

// Engine settings are validated at models.New.
func TestSettingsRefused(t *testing.T) {
	for _, bad := range [][]string{{"chains", "0"}, {"hyper", "maybe"}, {"bogus", "1"}, {"fit", "mcmc"}, {"fit", "nosuch"}} {
		if _, err := models.New(smallOpts(bad...)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	o := smallOpts()
	o.Posterior.Family = "sparse"
	if _, err := models.New(o); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("sparse family: %v", err)
	}
}

// likelihoods.LogLik of the probit equals log Φ(y f) in closed form, as
// the sampler evaluates it.
func TestLogLikProbit(t *testing.T) {
	ds := probitToy(30, 4)
	m, err := models.New(smallOpts())
	if err != nil {
		t.Fatal(err)
	}
	m.Opts.Settings = nil
	// Initialise the model by a fit of one iteration's worth.
	m2, err := fitSmall(t, context.Background(), smallOpts("samples", "1", "warmup", "0", "chains", "1"), ds, models.FitConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_ = m
	y, w := m2.Likelihood().Targets(ds.Y, 2)
	tg, err := newTarget(m2, y, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	rng := rand.New(rand.NewPCG(1, 2))
	f := make([]float64, ds.N)
	for trial := 0; trial < 5; trial++ {
		var want float64
		for i := range f {
			f[i] = 3 * rng.NormFloat64()
			want += math.Log(0.5 * math.Erfc(-y[i]*f[i]/math.Sqrt2))
		}
		got, err := tg.logLik(f)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("LogLik %.12g, closed form %.12g", got, want)
		}
	}
}

var _ = io.Discard

// Every built-in likelihood's log p(y|f), as the sampler evaluates it
// (likelihoods.LogLik), is finite at random latent values and labels.
func TestLogLikFiniteOnBuiltins(t *testing.T) {
	for _, name := range likelihoods.Names() {
		c := 3
		l, err := likelihoods.New(name, likelihoods.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if cc, ok := l.(likelihoods.ClassCounter); ok {
			c = cc.Classes()
		}
		rng := rand.New(rand.NewPCG(1, 1))
		n := 20
		ds := &datasets.Dataset{Name: "r", N: n, D: 1, C: c, X: make([]float64, n), Y: make([]int, n)}
		for i := range ds.Y {
			ds.Y[i] = i % c
			ds.X[i] = rng.NormFloat64()
		}
		o := smallOpts("samples", "1", "warmup", "0", "chains", "1")
		o.Likelihood.Name = name
		m, err := models.New(o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = m
		if _, err = fitSmall(t, context.Background(), o, ds, models.FitConfig{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// envOr returns the environment variable's value, or def when unset (for
// longer runs by hand).
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// With the hyper-parameters sampled, their marginal posterior is right: on
// a Gaussian likelihood with only the kernel's log-amplitude θ free,
// p(θ | y) ∝ N(y; 0, e^θ C + c₀I + σ²I) N(θ; θ₀, sd²) is integrated on a
// grid, and the sampled mean and standard deviation of θ agree with it
// within Monte Carlo error (the mean by a z-test on the bulk ESS).
func TestSampledHyperMatchesGrid(t *testing.T) {
	const n, noise = 15, 0.2
	rng := rand.New(rand.NewPCG(9, 9))
	ds := &datasets.Dataset{Name: "gauss", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
	y := make([]float64, n)
	for i := range ds.X {
		ds.X[i] = 4 * (rng.Float64() - 0.5)
		y[i] = 1.5*math.Sin(2*ds.X[i]) + math.Sqrt(noise)*rng.NormFloat64()
		ds.Y[i] = i % 2
	}
	factory := func(name string, d int, init models.KernelInit) kernels.Kernel {
		k := kernels.NewSE(name, d, init.Lengthscale, init.Variance, init.Noise)
		k.Lengthscales.Fixed, k.WhiteNoise.Fixed = true, true
		return k
	}
	const sd = 1.5
	m, err := models.New(models.Options{Inputs: models.InputOptions{NoStandardize: true}, Likelihood: models.LikelihoodOptions{Custom: gaussian{y: y, noise: noise}},
		Kernel: models.KernelOptions{Factory: factory}, Posterior: models.PosteriorOptions{Family: "full"}, Inference: Name,
		Settings: kv("hyper", "sample", "hyper-sd", "1.5", "samples", envOr("HYPER_SAMPLES", "2500"), "warmup", "300")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		t.Fatal(err)
	}
	st := StateOf(m)
	if len(st.Point) != 1 || len(st.HyperParams) != 1 {
		t.Fatalf("sampled %v, want the amplitude alone", st.HyperParams)
	}
	theta0 := st.Point[0]
	// C from the prior covariance at the draws' mean θ (summarise left the
	// model there): K = e^θ C + c₀I.
	se := m.Kernels()[0].(*kernels.SE)
	c0 := m.Posterior().JitterParam.Data[0] + math.Exp(se.WhiteNoise.Data[0])
	thetaRef := se.Variance.Data[0]
	K := priorCov(t, m)
	C := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := K.At(i, j)
			if i == j {
				v -= c0
			}
			C.SetSym(i, j, v/math.Exp(thetaRef))
		}
	}
	logPost := func(th float64) float64 {
		A := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				v := math.Exp(th) * C.At(i, j)
				if i == j {
					v += c0 + noise
				}
				A.SetSym(i, j, v)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(A) {
			return math.Inf(-1)
		}
		var a mat.VecDense
		if err := ch.SolveVecTo(&a, mat.NewVecDense(n, y)); err != nil {
			return math.Inf(-1)
		}
		d := (th - theta0) / sd
		return -0.5*mat.Dot(mat.NewVecDense(n, y), &a) - 0.5*ch.LogDet() - 0.5*d*d
	}
	var z, m1, m2 float64
	lo, hi, steps := theta0-8*sd, theta0+8*sd, 4000
	h := (hi - lo) / float64(steps)
	ref := logPost(theta0)
	for k := 0; k <= steps; k++ {
		th := lo + float64(k)*h
		w := math.Exp(logPost(th) - ref)
		z += w
		m1 += w * th
		m2 += w * th * th
	}
	exactMean := m1 / z
	exactSD := math.Sqrt(m2/z - exactMean*exactMean)
	chains := make([][]float64, len(st.Counts))
	var all []float64
	k := 0
	for c, cnt := range st.Counts {
		for _, th := range st.Thetas[k : k+cnt] {
			chains[c] = append(chains[c], th[0])
			all = append(all, th[0])
		}
		k += cnt
	}
	mean, v := meanVar(all)
	ess := BulkESS(chains)
	zs := (mean - exactMean) / math.Sqrt(v/ess)
	t.Logf("log-amplitude: sampled mean %.4f sd %.4f (ESS %.0f, R-hat %.4f), grid mean %.4f sd %.4f, z = %.2f",
		mean, math.Sqrt(v), ess, RHat(chains), exactMean, exactSD, zs)
	if math.Abs(zs) > 4 {
		t.Errorf("sampled mean of θ %.4f against %.4f: z = %.2f", mean, exactMean, zs)
	}
	if r := math.Sqrt(v) / exactSD; r < 0.8 || r > 1.25 {
		t.Errorf("sampled sd of θ %.4f against %.4f", math.Sqrt(v), exactSD)
	}
}

// The chains start from (and, held, stay at) another fit's
// hyper-parameters: a saved model's (init-from) or an engine's (fit).
func TestHyperPointFromAnotherFit(t *testing.T) {
	ds := probitToy(40, 3)
	o := smallOpts()
	o.Inference, o.Settings = "ep", nil
	o.Train.Epochs = 30
	ep, err := fitSmall(t, context.Background(), o, ds, models.FitConfig{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ep.json")
	if err := ep.Save(path); err != nil {
		t.Fatal(err)
	}
	want := getTheta(func() []*layers.Param { ps, _ := hyperParams(ep); return ps }())
	for _, how := range [][]string{{"init-from", path}, {"fit", "ep"}} {
		o := smallOpts(how...)
		o.Train.Epochs = 30
		m, err := fitSmall(t, context.Background(), o, ds, models.FitConfig{})
		if err != nil {
			t.Fatal(how, err)
		}
		got := StateOf(m).Point
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				t.Errorf("%v: point %v, ep's %v", how, got, want)
				break
			}
		}
	}
}
