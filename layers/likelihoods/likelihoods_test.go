package likelihoods

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// marginals returns typical n×c means (N(0,1)) and variances: a per-point
// level in [0.2, 1.5] times a per-class factor in [0.7, 1.4], so that the
// classes' variances at a point differ at most twofold, as they do for
// latent functions with similar kernels.
func marginals(rng *rand.Rand, n, c int) (mu, v []float64) {
	return spreadMarginals(rng, n, c, 2)
}

// spreadMarginals lets the classes' variances at a point differ up to ratio-fold.
func spreadMarginals(rng *rand.Rand, n, c int, ratio float64) (mu, v []float64) {
	mu, v = make([]float64, n*c), make([]float64, n*c)
	for i := 0; i < n; i++ {
		base := 0.2 + 1.3*rng.Float64()
		for j := 0; j < c; j++ {
			mu[i*c+j] = rng.NormFloat64()
			v[i*c+j] = base * math.Exp((rng.Float64()-0.5)*math.Log(ratio))
		}
	}
	return
}

type fixture struct {
	g        *G.ExprGraph
	s        *layers.Scope
	mu, v, y *G.Node
	muP, vP  *layers.Param
	labels   []int
}

func newFixture(lik Likelihood, n, c int, seed uint64) *fixture {
	rng := rand.New(rand.NewPCG(seed, 1))
	l := lik.Latent(c)
	mu, v := marginals(rng, n, l)
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(c)
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	muP := layers.NewParam("mu", tensor.Shape{n, l}, 0, layers.Identity)
	copy(muP.Data, mu)
	vP := layers.NewParam("logv", tensor.Shape{n, l}, 1, layers.Exp)
	for i := range v {
		vP.Set(i, v[i])
	}
	yd, w := lik.Targets(labels, c)
	y := constant(g, "y", tensor.Shape{n, w}, yd)
	muN, _ := s.Node(muP)
	vN, _ := s.Node(vP)
	return &fixture{g: g, s: s, mu: muN, v: vN, y: y, muP: muP, vP: vP, labels: labels}
}

func eval(t *testing.T, g *G.ExprGraph, ns ...*G.Node) [][]float64 {
	t.Helper()
	p, err := graph.Compile(g, ns...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(ns))
	for i, n := range ns {
		out[i], _ = p.Float64s(n)
	}
	return out
}

func TestRobustMaxQuadratureConverges(t *testing.T) {
	for _, flip := range []Flip{FlipOther, FlipUniform} {
		f := newFixture(NewRobustMax(), 100, 4, 1)
		lo := &RobustMax{Epsilon: 1e-3, Points: 20, Flip: flip}
		hi := &RobustMax{Epsilon: 1e-3, Points: 200, Flip: flip}
		e20, _ := lo.ExpectedLogLik(f.s, f.mu, f.v, f.y)
		e200, _ := hi.ExpectedLogLik(f.s, f.mu, f.v, f.y)
		out := eval(t, f.g, e20, e200)
		for i := range out[0] {
			if d := math.Abs(out[0][i] - out[1][i]); d > 1e-6 {
				t.Errorf("flip %d point %d: 20 nodes %v, 200 nodes %v (diff %.2g)", flip, i, out[0][i], out[1][i], d)
			}
		}
	}
}

// robustLogLik is log p(y|f) evaluated exactly for one draw f.
func robustLogLik(l *RobustMax, f []float64, y int) float64 {
	arg := 0
	for c := range f {
		if f[c] > f[arg] {
			arg = c
		}
	}
	hit, miss := l.logs(len(f))
	if arg == y {
		return hit
	}
	return miss
}

func TestRobustMaxAgainstMonteCarlo(t *testing.T) {
	const n, c, draws = 8, 3, 200000
	l := &RobustMax{Epsilon: 0.05, Points: 20} // a large ε makes the MC error visible
	f := newFixture(l, n, c, 2)
	ell, _ := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
	pred, _ := l.Predict(f.s, f.mu, f.v)
	out := eval(t, f.g, ell, pred)
	rng := rand.New(rand.NewPCG(9, 9))
	fs := make([]float64, c)
	for i := 0; i < n; i++ {
		var sum, sum2 float64
		counts := make([]float64, c)
		for s := 0; s < draws; s++ {
			for j := 0; j < c; j++ {
				fs[j] = f.muP.Data[i*c+j] + math.Sqrt(f.vP.Value(i*c+j))*rng.NormFloat64()
			}
			ll := robustLogLik(l, fs, f.labels[i])
			sum += ll
			sum2 += ll * ll
			for j := 0; j < c; j++ {
				counts[j] += math.Exp(robustLogLik(l, fs, j))
			}
		}
		mean := sum / draws
		se := math.Sqrt((sum2/draws - mean*mean) / draws)
		if math.Abs(out[0][i]-mean) > 4*se+1e-9 {
			t.Errorf("point %d: quadrature %v, Monte Carlo %v ± %v", i, out[0][i], mean, se)
		}
		for j := 0; j < c; j++ {
			p := counts[j] / draws
			pse := math.Sqrt(p * (1 - p) / draws)
			if math.Abs(out[1][i*c+j]-p) > 4*pse+1e-9 {
				t.Errorf("point %d class %d: predicted %v, Monte Carlo %v ± %v", i, j, out[1][i*c+j], p, pse)
			}
		}
	}
}

// Predict normalises its rows, so their sums say nothing about accuracy.
// The probabilities P_ij that f_j is the largest, recovered from the
// expected log-likelihood of each label (E log p = P·log hit + (1−P)·log
// miss, exact), are computed by separate quadratures: they must sum to one
// to the quadrature's accuracy, and Predict's rows must be a·P + b with no
// more than that correction.
func TestRobustMaxQuadratureSumsToOne(t *testing.T) {
	const n, c = 12, 4
	for _, l := range []*RobustMax{{Epsilon: 1e-3, Points: 20}, {Epsilon: 0.05, Points: 20, Flip: FlipUniform}} {
		f := newFixture(l, n, c, 7)
		nodes := []*G.Node{}
		for j := 0; j < c; j++ {
			labels := make([]int, n)
			for i := range labels {
				labels[i] = j
			}
			y := constant(f.g, fmt.Sprintf("y%d", j), tensor.Shape{n, c}, oneHot(labels, c))
			ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, y)
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, ell)
		}
		pred, err := l.Predict(f.s, f.mu, f.v)
		if err != nil {
			t.Fatal(err)
		}
		out := eval(t, f.g, append(nodes, pred)...)
		hit, miss := l.logs(c)
		a, b := l.probs(c)
		for i := 0; i < n; i++ {
			var sum float64
			P := make([]float64, c)
			for j := 0; j < c; j++ {
				P[j] = (out[j][i] - miss) / (hit - miss)
				sum += P[j]
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Errorf("flip %v point %d: Σ_j P(f_j largest) = %.9f by quadrature", l.Flip, i, sum)
			}
			for j := 0; j < c; j++ {
				if got, want := out[c][i*c+j], a*P[j]+b; math.Abs(got-want) > 1e-6 {
					t.Errorf("flip %v point %d class %d: predicted %v, a·P+b = %v", l.Flip, i, j, got, want)
				}
			}
		}
	}
}

func TestBinaryAndGaussianAgainstMonteCarlo(t *testing.T) {
	const n, draws = 6, 400000
	liks := map[string]Likelihood{"probit": NewProbit(), "logit": NewLogit(), "gaussian": NewGaussian("g", 0.3)}
	logp := map[string]func(y, f float64) float64{
		"probit":   func(y, f float64) float64 { return math.Log(0.5 * math.Erfc(-y*f/math.Sqrt2)) },
		"logit":    func(y, f float64) float64 { return -math.Log1p(math.Exp(-y * f)) },
		"gaussian": func(y, f float64) float64 { return -0.5*math.Log(2*math.Pi*0.3) - (y-f)*(y-f)/(2*0.3) },
	}
	for name, l := range liks {
		t.Run(name, func(t *testing.T) {
			f := newFixture(l, n, 2, 3)
			ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
			if err != nil {
				t.Fatal(err)
			}
			pred, err := l.Predict(f.s, f.mu, f.v)
			if err != nil {
				t.Fatal(err)
			}
			out := eval(t, f.g, ell, pred)
			ys, _ := l.Targets(f.labels, 2)
			rng := rand.New(rand.NewPCG(4, 4))
			for i := 0; i < n; i++ {
				var sum, sum2, p1 float64
				m, sd := f.muP.Data[i], math.Sqrt(f.vP.Value(i))
				for s := 0; s < draws; s++ {
					fv := m + sd*rng.NormFloat64()
					ll := logp[name](ys[i], fv)
					sum += ll
					sum2 += ll * ll
					p1 += math.Exp(logp[name](1, fv))
				}
				mean := sum / draws
				se := math.Sqrt((sum2/draws - mean*mean) / draws)
				if math.Abs(out[0][i]-mean) > 4*se {
					t.Errorf("point %d: E log p = %v, Monte Carlo %v ± %v", i, out[0][i], mean, se)
				}
				if name != "gaussian" {
					p1 /= draws
					if math.Abs(out[1][2*i+1]-p1) > 4*math.Sqrt(p1*(1-p1)/draws) {
						t.Errorf("point %d: p(y=1) = %v, Monte Carlo %v", i, out[1][2*i+1], p1)
					}
					if math.Abs(out[1][2*i]+out[1][2*i+1]-1) > 1e-12 {
						t.Errorf("point %d: probabilities do not sum to 1", i)
					}
				}
			}
		})
	}
}

func TestLikelihoodGradients(t *testing.T) {
	liks := map[string]Likelihood{
		"robustmax": NewRobustMax(), "robustmax-uniform": &RobustMax{Epsilon: 0.01, Points: 20, Flip: FlipUniform},
		"probit": NewProbit(), "logit": NewLogit(), "gaussian": NewGaussian("g", 0.3),
	}
	for name, l := range liks {
		t.Run(name, func(t *testing.T) {
			for order := 1; order <= 2; order++ {
				f := newFixture(l, 5, 3, 5)
				ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
				if err != nil {
					t.Fatal(err)
				}
				cost, _ := G.Sum(ell)
				_, params := f.s.Trainable()
				for _, p := range l.Params() {
					n, _ := f.s.Raw(p)
					params = append(params, n)
				}
				check := graph.CheckGrad
				if order == 2 {
					check = graph.CheckGrad2
				}
				rep, err := check(cost, params, graph.CheckOptions{Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					t.Errorf("order %d: %s", order, rep.Worst())
				}
			}
		})
	}
}

func TestPredictSumsToOne(t *testing.T) {
	f := newFixture(NewRobustMax(), 50, 5, 6)
	p, _ := NewRobustMax().Predict(f.s, f.mu, f.v)
	out := eval(t, f.g, p)[0]
	for i := 0; i < 50; i++ {
		var s float64
		for j := 0; j < 5; j++ {
			s += out[i*5+j]
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("row %d sums to %v", i, s)
		}
	}
}

// Where the classes' variances differ sevenfold, the rule centred on f_y (the
// original code's) is far from converged at 20 points; the adaptive rule is
// at least ten times closer to the 200-point value.
func TestAdaptiveBeatsPlainQuadrature(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	n, c := 200, 5
	mu, v := spreadMarginals(rng, n, c, 7.5)
	f := newFixture(NewRobustMax(), n, c, 8)
	copy(f.muP.Data, mu)
	for i := range v {
		f.vP.Set(i, v[i])
	}
	ref := &RobustMax{Epsilon: 1e-3, Points: 200}
	ad := &RobustMax{Epsilon: 1e-3, Points: 20}
	pl := &RobustMax{Epsilon: 1e-3, Points: 20, Plain: true}
	var ns []*G.Node
	for _, l := range []*RobustMax{ref, ad, pl} {
		e, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
		if err != nil {
			t.Fatal(err)
		}
		ns = append(ns, e)
	}
	out := eval(t, f.g, ns...)
	var worstAd, worstPl, meanAd, meanPl float64
	for i := 0; i < n; i++ {
		ea, ep := math.Abs(out[1][i]-out[0][i]), math.Abs(out[2][i]-out[0][i])
		worstAd, worstPl = math.Max(worstAd, ea), math.Max(worstPl, ep)
		meanAd, meanPl = meanAd+ea/float64(n), meanPl+ep/float64(n)
	}
	t.Logf("error at 20 points: adaptive mean %.2g worst %.2g; plain mean %.2g worst %.2g", meanAd, worstAd, meanPl, worstPl)
	if !(meanAd*10 < meanPl && worstAd*2 < worstPl) {
		t.Errorf("adaptive rule is not clearly better than the plain one")
	}
}

// Predict's fused rows compute what predictGraph builds from graph ops, in
// the same order of operations: the two agree to rounding for 2 to 10
// classes, both rules, both flips, and marginals whose variances differ a
// thousandfold within a row and whose means sit far apart (wrong classes
// deep in Φ's lower tail, where the continued fraction takes over).
func TestRobustMaxPredictMatchesGraph(t *testing.T) {
	rules := []*RobustMax{
		NewRobustMax(),
		{Epsilon: 0.05, Points: 20, Flip: FlipUniform},
		{Epsilon: 1e-3, Points: 30, Plain: true},
		{Epsilon: 1e-3, Points: 12, Newton: 4},
	}
	for _, c := range []int{2, 3, 5, 10} {
		for r, l := range rules {
			const n = 60
			f := newFixture(l, n, c, uint64(10+c))
			rng := rand.New(rand.NewPCG(uint64(c), uint64(r)))
			mu, v := spreadMarginals(rng, n, c, 1000)
			for i := range mu {
				mu[i] *= 1 + 6*rng.Float64()
			}
			copy(f.muP.Data, mu)
			for i := range v {
				f.vP.Set(i, v[i])
			}
			fused, err := l.Predict(f.s, f.mu, f.v)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := l.predictGraph(f.s, f.mu, f.v)
			if err != nil {
				t.Fatal(err)
			}
			out := eval(t, f.g, fused, ref)
			worst := 0.0
			for i := range out[1] {
				d := math.Abs(out[0][i]-out[1][i]) / out[1][i]
				if !(d <= 1e-12) {
					t.Errorf("C=%d rule %d entry %d: fused %v, graph %v", c, r, i, out[0][i], out[1][i])
				}
				worst = max(worst, d)
			}
			t.Logf("C=%d rule %d: largest relative difference %.2g", c, r, worst)
		}
	}
}

// A gradient through the fused predictive is refused with its name, not
// taken as zero.
func TestRobustMaxPredictHasNoGradient(t *testing.T) {
	l := NewRobustMax()
	f := newFixture(l, 5, 3, 1)
	p, err := l.Predict(f.s, f.mu, f.v)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := G.Sum(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = graph.Grad(cost, f.mu)
	if err == nil || !strings.Contains(err.Error(), "robustmax") || !strings.Contains(err.Error(), "no gradient") {
		t.Fatalf("gradient through Predict: err = %v, want a refusal naming the robust-max rows", err)
	}
}

// predictGraph is Predict built from differentiable graph ops (argmaxProb
// for each class, own ≥ 0): the reference that Predict's fused rows are
// tested against.
func (l *RobustMax) predictGraph(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	_, c, err := l.check(mu, v)
	if err != nil {
		return nil, err
	}
	a, b := l.probs(c)
	cols := make([]*G.Node, c)
	for j := 0; j < c; j++ {
		p, err := l.argmaxProb(s, mu, v, nil, j)
		if err != nil {
			return nil, err
		}
		if p, err = G.HadamardProd(p, G.NewConstant(a)); err != nil {
			return nil, err
		}
		if cols[j], err = G.Add(p, G.NewConstant(b)); err != nil {
			return nil, err
		}
	}
	p, err := Columns(cols...)
	if err != nil {
		return nil, err
	}
	return normalizeRows(p)
}
