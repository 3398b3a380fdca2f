package tests

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/compare"
	_ "github.com/gpc-dev/gpc/models/mcmc"
)

// CLogLog is a binary likelihood a user writes as graph code outside the
// likelihoods package: p(y=1|f) = 1 − exp(−e^f), an asymmetric link. It uses
// likelihoods.Expect1D for E[log p(y|f)] by Gauss–Hermite quadrature.
type CLogLog struct{ Points int }

func (l CLogLog) Latent(int) int          { return 1 }
func (l CLogLog) Params() []*layers.Param { return nil }

// Targets stores the labels as 0/1.
func (l CLogLog) Targets(labels []int, classes int) ([]float64, int) {
	y := make([]float64, len(labels))
	for i, v := range labels {
		y[i] = float64(v)
	}
	return y, 1
}

// logs returns log p(y=1|f) = log(1 − exp(−e^f)) and log p(y=0|f) = −e^f.
func (l CLogLog) logs(f *G.Node) (l1, l0 *G.Node, err error) {
	e := &graph.Chain{}
	ef := e.Do(G.Exp(f))
	l0 = e.Do(G.Neg(ef))
	// log(1 − e^{−u}) = log(−expm1(−u)); written as log1p(−e^{−u}) it is accurate for u ≳ 1e-3.
	l1 = e.Do(G.Log1p(e.Do(G.Neg(e.Do(G.Exp(l0))))))
	return l1, l0, e.Err
}

func (l CLogLog) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	m, err := likelihoods.Column(mu, 0)
	if err != nil {
		return nil, err
	}
	vv, err := likelihoods.Column(v, 0)
	if err != nil {
		return nil, err
	}
	yv, err := likelihoods.Column(y, 0)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	e1 := e.Do(likelihoods.Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) { a, _, err := l.logs(f); return a, err }))
	e0 := e.Do(likelihoods.Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) { _, b, err := l.logs(f); return b, err }))
	// y·E log p(1|f) + (1−y)·E log p(0|f)
	out := e.Do(G.Add(e.Do(G.HadamardProd(yv, e1)), e.Do(G.HadamardProd(e.Do(G.Sub(G.NewConstant(1.0), yv)), e0))))
	return out, e.Err
}

func (l CLogLog) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	m, err := likelihoods.Column(mu, 0)
	if err != nil {
		return nil, err
	}
	vv, err := likelihoods.Column(v, 0)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	p0 := e.Do(likelihoods.Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) {
		_, b, err := l.logs(f)
		if err != nil {
			return nil, err
		}
		return G.Exp(b)
	}))
	p1 := e.Do(G.Sub(G.NewConstant(1.0), p0))
	return e.Do(likelihoods.Columns(p0, p1)), e.Err
}

var _ likelihoods.Likelihood = CLogLog{}

// The user's likelihood passes the model-level gradient check to second order.
func TestUserLikelihoodGradients(t *testing.T) {
	for _, k := range []string{"mgp", "nimgp-fo"} {
		for order := 1; order <= 2; order++ {
			rep, err := models.CheckGradients(models.Options{Model: k, Likelihood: models.LikelihoodOptions{Custom: CLogLog{Points: 20}}}, order, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !(rep.MaxRelErr <= 1e-6) {
				t.Errorf("%s order %d: %s", k, order, rep.Worst())
			}
		}
	}
}

// Data generated from the cloglog model itself is learned well: the test NLL
// comes close to that of the true latent function.
func TestUserLikelihoodTrains(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	gen := func(n int) (*datasets.Dataset, float64) {
		ds := &datasets.Dataset{Name: "cloglog", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
		var nll float64
		for i := 0; i < n; i++ {
			x := 6*rng.Float64() - 3
			f := 1.5 * math.Sin(1.5*x)
			p1 := 1 - math.Exp(-math.Exp(f))
			ds.X[i] = x
			if rng.Float64() < p1 {
				ds.Y[i] = 1
				nll -= math.Log(p1)
			} else {
				nll -= math.Log(1 - p1)
			}
		}
		return ds, nll / float64(n)
	}
	train, _ := gen(400)
	test, trueNLL := gen(400)
	m, err := models.New(models.Options{Model: "mgp", Likelihood: models.LikelihoodOptions{Custom: CLogLog{Points: 20}},
		Posterior: models.PosteriorOptions{Inducing: 20}, Train: models.TrainOptions{Epochs: 60, Batch: 100, LR: 0.02, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := models.Score(p, test.Y, 2)
	t.Logf("test NLL %.4f, true function's %.4f, error %.3f", sc.NLL, trueNLL, sc.Error)
	if sc.NLL > trueNLL+0.05 {
		t.Errorf("test NLL %.4f is not within 0.05 of the true function's %.4f", sc.NLL, trueNLL)
	}
}

// The user's likelihood runs unchanged under compare (what `gpc compare`
// does) beside the sampler: svi and mcmc fit it, ep refuses it in its row
// (it has no tilted moments) while the others still run, and the
// variational predictions come close to the sampled ones.
func TestUserLikelihoodCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	gen := func(n int) *datasets.Dataset {
		ds := &datasets.Dataset{Name: "cloglog", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
		for i := 0; i < n; i++ {
			x := 6*rng.Float64() - 3
			ds.X[i] = x
			if rng.Float64() < 1-math.Exp(-math.Exp(1.5*math.Sin(1.5*x))) {
				ds.Y[i] = 1
			}
		}
		return ds
	}
	base := models.Options{Likelihood: models.LikelihoodOptions{Custom: CLogLog{Points: 20}}, Posterior: models.PosteriorOptions{Family: "full"},
		Train:    models.TrainOptions{Epochs: 100, Optimizer: "lbfgs", Seed: 1},
		Settings: map[string]string{"mcmc.samples": "600", "mcmc.warmup": "200", "mcmc.fit": "svi"}}
	rep, err := compare.Run(context.Background(), compare.Config{Base: base, Engines: []string{"svi", "ep", "mcmc"}, Reference: "mcmc",
		Train: gen(80), Test: gen(100)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	t.Log("\n" + b.String())
	// EP integrates the user's likelihood by quadrature (it gives no
	// tilted moments of its own).
	if ep := rep.Row("ep"); ep == nil || ep.Skipped != "" || *ep.MeanAbsDP > 0.05 {
		t.Errorf("ep's row: skipped %q", ep.Skipped)
	}
	svi, mc := rep.Row("svi"), rep.Row("mcmc")
	if svi == nil || svi.Skipped != "" || mc == nil || mc.Skipped != "" {
		t.Fatalf("svi %+v, mcmc %+v", svi, mc)
	}
	if *svi.MeanAbsDP > 0.05 {
		t.Errorf("svi's predictions differ from the sampler's by %.4f on average", *svi.MeanAbsDP)
	}
	if r, ok := mc.Figure("max_rhat"); !ok || !(r < 1.2) {
		t.Errorf("sampler's max R-hat %v", r)
	}
}
