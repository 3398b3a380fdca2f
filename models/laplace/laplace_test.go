package laplace_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
	_ "github.com/gpc-dev/gpc/models/laplace"
)

// gaussLik is a Gaussian "likelihood" on the ±1 labels, y | f ~ N(f, σ²),
// with σ² learned: under it the Laplace approximation is exact, so the
// engine must reproduce GP regression's closed forms.
type gaussLik struct{ noise *layers.Param }

func newGaussLik(v float64) *gaussLik {
	return &gaussLik{noise: layers.NewParam("gauss/noise", tensor.ScalarShape(), v, layers.Exp)}
}

func (l *gaussLik) Latent(int) int          { return 1 }
func (l *gaussLik) Classes() int            { return 2 }
func (l *gaussLik) Params() []*layers.Param { return []*layers.Param{l.noise} }
func (l *gaussLik) Targets(labels []int, _ int) ([]float64, int) {
	y := make([]float64, len(labels))
	for i, v := range labels {
		y[i] = 2*float64(v) - 1
	}
	return y, 1
}

// ExpectedLogLik: −½ log(2πσ²) − ((y − μ)² + ν)/(2σ²).
func (l *gaussLik) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	s2 := e.Do(s.Node(l.noise))
	m := e.Do(likelihoods.Column(mu, 0))
	vv := e.Do(likelihoods.Column(v, 0))
	yy := e.Do(likelihoods.Column(y, 0))
	d := e.Do(G.Sub(yy, m))
	q := e.Do(G.Add(e.Do(G.HadamardProd(d, d)), vv))
	a := e.Do(G.HadamardProd(q, e.Do(G.Div(G.NewConstant(-0.5), s2))))
	c := e.Do(G.HadamardProd(G.NewConstant(-0.5), e.Do(G.Log(e.Do(G.HadamardProd(s2, G.NewConstant(2*math.Pi)))))))
	return e.Do(G.Add(a, c)), e.Err
}

func (l *gaussLik) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	p1 := e.Do(graph.NormCDF(e.Do(likelihoods.Column(mu, 0))))
	p0 := e.Do(G.Sub(G.NewConstant(1.0), p1))
	return e.Do(likelihoods.Columns(p0, p1)), e.Err
}

// fixedIsoKernel is an isotropic SE kernel with unit amplitude held fixed
// and no white noise, so that K is known outside the model.
func fixedIsoKernel(ell float64, fixed bool) models.KernelFactory {
	return func(name string, d int, _ models.KernelInit) kernels.Kernel {
		k := kernels.NewSEIsotropic(name, d, ell, 1, 0)
		k.Variance.Fixed = true
		k.Lengthscale.Fixed = fixed
		return k
	}
}

func blobs(n, d int, seed uint64, sep float64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	x := make([]float64, n*d)
	y := make([]int, n)
	for i := range n {
		y[i] = i % 2
		for j := range d {
			x[i*d+j] = rng.NormFloat64()
			if j == 0 {
				x[i*d+j] += sep * (2*float64(y[i]) - 1)
			}
		}
	}
	return &datasets.Dataset{X: x, Y: y, N: n, D: d, C: 2}
}

func seIso(x []float64, n, d int, ell, jitter float64) *mat.SymDense {
	k := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			var s float64
			for t := range d {
				u := x[i*d+t] - x[j*d+t]
				s += u * u
			}
			v := math.Exp(-0.5 * s / ell)
			if i == j {
				v += jitter
			}
			k.SetSym(i, j, v)
		}
	}
	return k
}

// logMarginal is log N(y | 0, K + σ²I).
func logMarginal(k *mat.SymDense, y []float64, s2 float64) float64 {
	n := len(y)
	a := mat.NewSymDense(n, nil)
	a.CopySym(k)
	for i := range n {
		a.SetSym(i, i, a.At(i, i)+s2)
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return math.NaN()
	}
	var al mat.VecDense
	if err := ch.SolveVecTo(&al, mat.NewVecDense(n, y)); err != nil {
		return math.NaN()
	}
	return -0.5*mat.Dot(mat.NewVecDense(n, y), &al) - 0.5*ch.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi)
}

// With a Gaussian likelihood the Laplace approximation is exact: the fitted
// evidence is GP regression's log marginal likelihood at the fitted
// parameters, which it maximises (its finite-difference gradient there is
// zero), and q(f) is the regression posterior N(K(K+σ²I)⁻¹y, K − K(K+σ²I)⁻¹K).
func TestGaussianLikelihoodIsExact(t *testing.T) {
	ds := blobs(30, 2, 1, 0.7)
	lik := newGaussLik(0.5)
	const jitter = 1e-6
	var loss float64
	m, err := models.New(models.Options{
		Kernel:     models.KernelOptions{Factory: fixedIsoKernel(1, false)},
		Likelihood: models.LikelihoodOptions{Custom: lik},
		Posterior:  models.PosteriorOptions{Family: "full", Jitter: jitter},
		Inputs:     models.InputOptions{NoStandardize: true}, // the closed form is in raw units
		Inference:  "laplace",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.FitConfig{Callback: func(e models.Epoch) error { loss = e.Loss; return nil }}
	if err := m.Fit(context.Background(), ds, cfg); err != nil {
		t.Fatal(err)
	}
	ell := m.Kernels()[0].(*kernels.SEIsotropic).Lengthscale.Value(0)
	s2 := lik.noise.Value(0)
	y, _ := lik.Targets(ds.Y, 2)
	k := seIso(ds.X, ds.N, ds.D, ell, jitter)
	want := logMarginal(k, y, s2)
	if d := math.Abs(-loss - want); d > 1e-8*math.Abs(want) {
		t.Errorf("Laplace evidence %.12g, closed form %.12g", -loss, want)
	}
	// A maximum in log ℓ and log σ².
	h := 1e-4
	dl := (logMarginal(seIso(ds.X, ds.N, ds.D, ell*math.Exp(h), jitter), y, s2) - logMarginal(seIso(ds.X, ds.N, ds.D, ell*math.Exp(-h), jitter), y, s2)) / (2 * h)
	ds2 := (logMarginal(k, y, s2*math.Exp(h)) - logMarginal(k, y, s2*math.Exp(-h))) / (2 * h)
	if math.Abs(dl) > 1e-3 || math.Abs(ds2) > 1e-3 {
		t.Errorf("closed-form gradient at the fitted point: ∂/∂log ℓ %g, ∂/∂log σ² %g (ℓ=%g σ²=%g)", dl, ds2, ell, s2)
	}
	// q(f) against the regression posterior.
	n := ds.N
	a := mat.NewSymDense(n, nil)
	a.CopySym(k)
	for i := range n {
		a.SetSym(i, i, a.At(i, i)+s2)
	}
	var ch mat.Cholesky
	ch.Factorize(a)
	var kinv mat.Dense
	if err := ch.SolveTo(&kinv, k); err != nil {
		t.Fatal(err)
	}
	var mean mat.VecDense
	mean.MulVec(kinv.T(), mat.NewVecDense(n, y))
	var cov mat.Dense
	cov.Mul(k, &kinv)
	post := m.Posterior()
	lraw := post.LRaw[0].Data
	lf := mat.NewDense(n, n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := lraw[i*n+j]
			if i == j {
				v = math.Exp(v)
			}
			lf.Set(i, j, v)
		}
	}
	var s mat.Dense
	s.Mul(lf, lf.T())
	var worstM, worstS float64
	for i := range n {
		worstM = math.Max(worstM, math.Abs(post.Mean[0].Data[i]-mean.AtVec(i)))
		for j := range n {
			worstS = math.Max(worstS, math.Abs(s.At(i, j)-(k.At(i, j)-cov.At(i, j))))
		}
	}
	if worstM > 1e-7 || worstS > 1e-7 {
		t.Errorf("q(f) against the regression posterior: mean off by %g, covariance by %g", worstM, worstS)
	}
}

// Binary probit at fixed hyper-parameters: the Laplace mean is shrunk
// towards zero relative to EP's (R&W §3.6–3.7, Figure 3.4's behaviour), with
// the same signs.
func TestProbitLaplaceShrinksRelativeToEP(t *testing.T) {
	ds := blobs(40, 2, 2, 1.2)
	fit := func(engine string) []float64 {
		m, err := models.New(models.Options{
			Kernel:     models.KernelOptions{Factory: fixedIsoKernel(2, true)},
			Likelihood: models.LikelihoodOptions{Name: "probit"},
			Posterior:  models.PosteriorOptions{Family: "full", Jitter: 1e-6},
			Inference:  engine,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
			t.Fatal(engine, err)
		}
		return append([]float64(nil), m.Posterior().Mean[0].Data...)
	}
	la, ep := fit("laplace"), fit("ep")
	var sl, se float64
	agree := 0
	for i := range la {
		sl += math.Abs(la[i])
		se += math.Abs(ep[i])
		if la[i]*ep[i] > 0 {
			agree++
		}
	}
	if !(sl < 0.95*se) {
		t.Errorf("Σ|m| Laplace %g, EP %g: Laplace should be shrunk towards zero", sl, se)
	}
	if agree < len(la)-1 {
		t.Errorf("signs agree on %d of %d rows", agree, len(la))
	}
}

// The evidence gradient against finite differences of the evidence, the
// mode re-found at each point: kernel parameters (HTPC's ℓ, an ARD SE's),
// the likelihood's (HTPC's b, the Gaussian's σ²), multi-class and binary.
func TestEvidenceGradient(t *testing.T) {
	cases := map[string]models.Options{
		"htpc":    {Model: "htpc"},
		"probit":  {Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "full"}, Inference: "laplace"},
		"softmax": {Likelihood: models.LikelihoodOptions{Name: "softmax"}, Posterior: models.PosteriorOptions{Family: "full"}, Inference: "laplace"},
		"gauss":   {Likelihood: models.LikelihoodOptions{Custom: newGaussLik(0.3)}, Posterior: models.PosteriorOptions{Family: "full"}, Inference: "laplace"},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			rep, err := models.CheckGradients(o, 1, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Params) == 0 || !(rep.MaxRelErr < 1e-5) {
				t.Errorf("%d parameters, worst %s", len(rep.Params), rep.Worst())
			}
			for _, p := range rep.Params {
				t.Logf("%s: rel err %.2g", p.Name, p.RelErr)
			}
		})
	}
}

// A fitted HTPC saves, reloads and predicts the same probabilities.
func TestHTPCSaveLoad(t *testing.T) {
	ds := blobs(24, 2, 4, 1)
	ds.C = 3
	for i := range ds.Y {
		ds.Y[i] = i % 3
	}
	m, err := models.New(models.Options{Model: "htpc", Train: models.TrainOptions{Epochs: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err != nil {
		t.Fatal(err)
	}
	p1, err := m.Predict(ds.X, ds.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "htpc.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := models.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := m2.Predict(ds.X, ds.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("prediction %d: %v before saving, %v after loading", i, p1[i], p2[i])
		}
	}
	for i := range ds.N {
		var s float64
		for c := range 3 {
			s += p1[i*3+c]
		}
		if math.Abs(s-1) > 1e-12 {
			t.Errorf("row %d sums to %v", i, s)
		}
	}
}

// Cancelling the context stops a fit within a second or two.
func TestCancelStopsFit(t *testing.T) {
	ds := blobs(300, 3, 5, 0.3)
	ds.C = 3
	for i := range ds.Y {
		ds.Y[i] = i % 3
	}
	m, err := models.New(models.Options{Model: "htpc"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	t0 := time.Now()
	err = m.Fit(ctx, ds, models.FitConfig{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fit returned %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("Fit took %v to stop", d)
	}
}

// What the engine refuses, it refuses at New, naming why.
func TestSupports(t *testing.T) {
	_, err := models.New(models.Options{Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "sparse"}, Inference: "laplace"})
	if err == nil || !strings.Contains(err.Error(), "full posterior family") {
		t.Errorf("sparse family: %v", err)
	}
	_, err = models.New(models.Options{Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "full"}, Inputs: models.InputOptions{Model: "latent"}, Inference: "laplace"})
	if err == nil || !strings.Contains(err.Error(), "Passthrough") {
		t.Errorf("latent inputs: %v", err)
	}
	// A step likelihood has no derivatives: a clear error, not a NaN fit.
	ds := blobs(12, 2, 6, 1)
	m, err := models.New(models.Options{Likelihood: models.LikelihoodOptions{Name: "robustmax"}, Posterior: models.PosteriorOptions{Family: "full"}, Inference: "laplace"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{}); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("robustmax under laplace: %v", err)
	}
}

// The htpc likelihood is an ordinary part: under svi its Monte Carlo
// expected log-likelihood gives the ELBO a correct gradient (b included).
func TestHTPCLikelihoodUnderSVI(t *testing.T) {
	rep, err := models.CheckGradients(models.Options{Likelihood: models.LikelihoodOptions{Name: "htpc"}}, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.MaxRelErr < 1e-6) {
		t.Errorf("ELBO gradient: %s", rep.Worst())
	}
	found := false
	for _, p := range rep.Params {
		found = found || p.Name == "htpc/b"
	}
	if !found {
		t.Error("htpc/b was not among the checked parameters")
	}
}

// FitConfig.Trace sees every successful evaluation with q(f) installed,
// its loss the negative evidence, ending at the fit's.
func TestTrace(t *testing.T) {
	ds := blobs(20, 2, 7, 1)
	m, err := models.New(models.Options{Likelihood: models.LikelihoodOptions{Name: "logit"}, Posterior: models.PosteriorOptions{Family: "full"}, Inference: "laplace"})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	var final float64
	cfg := models.FitConfig{
		Trace: func(_ int, loss float64) error {
			if _, err := m.Predict(ds.X[:2], 1, nil); err != nil {
				return err
			}
			losses = append(losses, loss)
			return nil
		},
		Callback: func(e models.Epoch) error { final = e.Loss; return nil },
	}
	if err := m.Fit(context.Background(), ds, cfg); err != nil {
		t.Fatal(err)
	}
	best := math.Inf(1)
	for _, l := range losses {
		best = math.Min(best, l)
	}
	if len(losses) < 2 || math.Abs(best-final) > 1e-9*math.Abs(final) {
		t.Errorf("%d traced evaluations, best loss %v, final %v", len(losses), best, final)
	}
}
