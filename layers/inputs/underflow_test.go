package inputs

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/mlp"
)

// unflooredSample is the sample as it was built before the floor: q = e^ℓ
// straight from the log-variance.
func unflooredSample(mu, logv, eps *G.Node) (q, x *G.Node, err error) {
	if q, err = graph.Exp(logv); err != nil {
		return nil, nil, err
	}
	x, err = graph.Map(reparam, mu, q, eps)
	return q, x, err
}

type sampleFunc func(mu, logv, eps *G.Node) (q, x *G.Node, err error)

// sampleCost is the NIMGP_NN training objective's shape in miniature:
// a smooth function of the draw x (in place of the likelihood) plus the
// input terms, which take ℓ and q = e^ℓ separately as sampleLatent's do.
func sampleCost(t *testing.T, sample sampleFunc, xt, mu, logv, eps *G.Node) *G.Node {
	t.Helper()
	g := mu.Graph()
	d := mu.Shape()[1]
	q, x, err := sample(mu, logv, eps)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, mu.Shape().TotalSize())
	for k := range w {
		w[k] = 0.5 + 0.3*float64(k%4) - 0.2*float64(k%3)
	}
	wn := graph.Input(g, "costW", mu.Shape().Clone(), w)
	lik := must(G.Sum(must(G.HadamardProd(must(G.Tanh(x)), wn))))
	prec, logNoise := make([]float64, d), make([]float64, d)
	for k := range prec {
		v := 0.05 + 0.1*float64(k)
		prec[k], logNoise[k] = 1/v, math.Log(v)
	}
	pn := graph.Input(g, "precision", tensor.Shape{d}, prec)
	ln := graph.Input(g, "logNoise", tensor.Shape{d}, logNoise)
	terms, err := gaussianInputTerms(xt, mu, logv, q, pn, ln, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return must(G.Add(lik, must(G.Sum(terms))))
}

func must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(err)
	}
	return n
}

func gradValues(t *testing.T, cost *G.Node, wrt ...*G.Node) [][]float64 {
	t.Helper()
	grads, err := graph.Grad(cost, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := graph.Compile(cost.Graph(), append(G.Nodes{cost}, grads...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(grads))
	for i, gn := range grads {
		v, err := p.Float64s(gn)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = append([]float64(nil), v...)
	}
	return out
}

// An encoder whose log-variance network outputs ℓ ≈ −800 (below e^ℓ's
// underflow at −745.13) reproduces Table 7's failure at noise 0.5 in
// miniature: the objective stays finite, but without the floor the
// gradient of the log-variance weights is NaN (ε/(2√q) = ∞ times q = 0).
// With the floor every gradient is finite.
func TestEncoderLogVarUnderflow(t *testing.T) {
	const n, d, c = 4, 3, 2
	for _, tc := range []struct {
		name    string
		sample  sampleFunc
		wantNaN bool
	}{{"unfloored", unflooredSample, true}, {"latentSample", latentSample, false}} {
		enc, err := mlp.NewEncoder("enc", mlp.EncoderConfig{D: d, C: c, Hidden: []int{5}, Residual: true, LogVarBias: -800, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		g := G.NewGraph()
		s := layers.NewScope(g)
		rng := rand.New(rand.NewPCG(1, 2))
		xd, yd, ed := make([]float64, n*d), make([]float64, n*c), make([]float64, n*d)
		for k := range xd {
			xd[k], ed[k] = rng.NormFloat64(), rng.NormFloat64()
		}
		for i := 0; i < n; i++ {
			yd[i*c+i%c] = 1
		}
		xt := graph.Input(g, "xt", tensor.Shape{n, d}, xd)
		y := graph.Input(g, "y", tensor.Shape{n, c}, yd)
		eps := graph.Input(g, "eps", tensor.Shape{n, d}, ed)
		mean, logv, err := enc.Apply(s, xt, y)
		if err != nil {
			t.Fatal(err)
		}
		cost := sampleCost(t, tc.sample, xt, mean, logv, eps)
		ps, nodes := s.Trainable()
		grads := gradValues(t, cost, nodes...)
		var bad []string
		for i, gv := range grads {
			for _, v := range gv {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					bad = append(bad, ps[i].Name)
					break
				}
			}
		}
		switch {
		case tc.wantNaN && (len(bad) == 0 || bad[0] != "enc/logvar/W0"):
			t.Errorf("%s: non-finite gradients of %v, want enc/logvar/W0 first: the case does not reproduce the underflow", tc.name, bad)
		case !tc.wantNaN && len(bad) > 0:
			t.Errorf("%s: gradients of %v are not finite", tc.name, bad)
		}
	}
}

// The floored sample's first and second derivatives agree with central
// finite differences of the objective, at log-variances in the usual range and below the floor
// (where q no longer moves with ℓ and only the input terms' −½ℓ does).
func TestLatentSampleGradient(t *testing.T) {
	const n, d = 3, 4
	rng := rand.New(rand.NewPCG(3, 4))
	above := false // every ℓ above the floor
	build := func() (*G.Node, G.Nodes) {
		g := G.NewGraph()
		s := layers.NewScope(g)
		mk := func(name string, f func(k int) float64) *G.Node {
			p := layers.NewParam(name, tensor.Shape{n, d}, 0, layers.Identity)
			for k := range p.Data {
				p.Data[k] = f(k)
			}
			node, err := s.Raw(p)
			if err != nil {
				t.Fatal(err)
			}
			return node
		}
		r := rand.New(rand.NewPCG(5, 6))
		mu := mk("mu", func(int) float64 { return r.NormFloat64() })
		lv := mk("logv", func(k int) float64 {
			if k%3 == 2 && !above {
				return -800 - float64(k)
			}
			return -2 + r.NormFloat64()
		})
		xt := graph.Input(g, "xt", tensor.Shape{n, d}, randn(rng, n*d))
		eps := graph.Input(g, "eps", tensor.Shape{n, d}, randn(rng, n*d))
		return sampleCost(t, latentSample, xt, mu, lv, eps), G.Nodes{mu, lv}
	}
	cost, params := build()
	rep, err := graph.CheckGrad(cost, params, graph.CheckOptions{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.MaxRelErr <= 1e-6) {
		t.Errorf("worst %s", rep.Worst())
	}
	// Second order too, through the floor's Stock form, above the floor
	// only: below it the second derivative of √q (q^(−3/2)/4 at q =
	// 5e-324) is infinite and the Stock graphs multiply it by the floor's
	// 0. Training takes first derivatives only; second order is a check.
	above = true
	cost, params = build()
	if rep, err = graph.CheckGrad2(cost, params, graph.CheckOptions{Seed: 12}); err != nil {
		t.Fatal(err)
	}
	if !(rep.MaxRelErr <= 1e-6) {
		t.Errorf("second order: worst %s", rep.Worst())
	}
	above = false
	// Below the floor ℓ's partial is the input terms' ½ (the objective
	// adds minus their −½ℓ) and nothing else.
	cost, params = build()
	g := gradValues(t, cost, params[1])[0]
	for k, v := range g {
		if k%3 == 2 && v != 0.5 {
			t.Errorf("∂/∂ℓ[%d] = %v below the floor, want 0.5", k, v)
		}
	}
}

// At and above the floor the floored sample is the unfloored one bit for
// bit, in value and gradient, so fits that never reach the floor are
// unchanged.
func TestLatentSampleUnchangedAboveFloor(t *testing.T) {
	const n, d = 5, 6
	rng := rand.New(rand.NewPCG(8, 9))
	mud, xd, ed, ld := randn(rng, n*d), randn(rng, n*d), randn(rng, n*d), make([]float64, n*d)
	for k := range ld {
		switch k % 5 {
		case 0:
			ld[k] = minLogVar
		case 1:
			ld[k] = -740 + rng.Float64()
		default:
			ld[k] = -10 + 3*rng.NormFloat64()
		}
	}
	var got [2][][]float64
	var cost [2]float64
	for i, f := range []sampleFunc{unflooredSample, latentSample} {
		g := G.NewGraph()
		mu := graph.Input(g, "mu", tensor.Shape{n, d}, mud)
		lv := graph.Input(g, "logv", tensor.Shape{n, d}, ld)
		xt := graph.Input(g, "xt", tensor.Shape{n, d}, xd)
		eps := graph.Input(g, "eps", tensor.Shape{n, d}, ed)
		c := sampleCost(t, f, xt, mu, lv, eps)
		got[i] = gradValues(t, c, mu, lv)
		p, err := graph.Compile(g, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		if cost[i], err = p.Scalar(c); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	if cost[0] != cost[1] {
		t.Errorf("objective %v with the floor, %v without", cost[1], cost[0])
	}
	for a := range got[0] {
		for k := range got[0][a] {
			if got[0][a][k] != got[1][a][k] {
				t.Fatalf("gradient %d[%d]: %v with the floor, %v without", a, k, got[1][a][k], got[0][a][k])
			}
		}
	}
}

func randn(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}
