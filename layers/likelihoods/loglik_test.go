package likelihoods

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// logLikCost builds Σ_i w_i log p(y_i | f_i) for every registered
// likelihood at latent values f (n×L) that LogLik sees as data to
// differentiate: its fallback (ExpectedLogLik at zero variance) must give
// the exact log-likelihood's first and second derivatives, which the
// Laplace engine's Newton steps and evidence need.
func logLikCost(t *testing.T, name string, n, classes int, seed uint64) (cost, f *G.Node, lik Likelihood, fv, yv []float64, width int) {
	t.Helper()
	lik, err := New(name, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if cc, ok := lik.(ClassCounter); ok {
		classes = cc.Classes()
	}
	l := lik.Latent(classes)
	rng := rand.New(rand.NewPCG(seed, 7))
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(classes)
	}
	yv, width = lik.Targets(labels, classes)
	fv = make([]float64, n*l)
	for i := range fv {
		fv[i] = 1.5 * rng.NormFloat64()
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = 0.5 + rng.Float64()
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	f = graph.Input(g, "f", tensor.Shape{n, l}, fv)
	y := graph.Input(g, "y", tensor.Shape{n, width}, yv)
	wn := graph.Input(g, "w", tensor.Shape{n}, w)
	ll, err := LogLik(lik, s, f, y)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if ll.Dims() != 1 || ll.Shape()[0] != n {
		t.Fatalf("%s: LogLik shape %v", name, ll.Shape())
	}
	e := &graph.Chain{}
	cost = e.Do(G.Sum(e.Do(G.HadamardProd(ll, wn))))
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	return cost, f, lik, fv, yv, width
}

// stepLikelihoods are piecewise constant in f (robust-max and the
// additive step noise): their log p(y | f) has no informative derivative,
// and their closed forms at zero variance give NaN derivatives, which the
// Laplace engine reports as an error. Known limit, pinned here.
var stepLikelihoods = map[string]bool{"robustmax": true, "gpc1": true, "robustmax-learned": true, "robustmax-beta": true, "robustmax-rho": true, "argmax": true}

func TestLogLikDerivativesEveryLikelihood(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			if stepLikelihoods[name] {
				t.Skip("a step likelihood: no derivatives in f")
			}
			cost, f, _, _, _, _ := logLikCost(t, name, 5, 3, 1)
			r1, err := graph.CheckGrad(cost, G.Nodes{f}, graph.CheckOptions{Step: 1e-4, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			r2, err := graph.CheckGrad2(cost, G.Nodes{f}, graph.CheckOptions{Step: 1e-4, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			if !(r1.MaxRelErr < 1e-6) || !(r2.MaxRelErr < 1e-5) {
				t.Errorf("%s: relative errors: gradient %g, second order %g", name, r1.MaxRelErr, r2.MaxRelErr)
			}
		})
	}
}

// The values themselves: LogLik is log p(y | f), checked against direct
// formulas for the closed-form built-ins.
func TestLogLikValues(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	direct := map[string]func(f []float64, y []float64, l int) float64{
		"probit": func(f, y []float64, _ int) float64 {
			return math.Log(phi(y[0] * f[0]))
		},
		"logit": func(f, y []float64, _ int) float64 {
			return -math.Log1p(math.Exp(-y[0] * f[0]))
		},
		"softmax": func(f, y []float64, l int) float64 {
			var z, fy float64
			for j := range l {
				z += math.Exp(f[j])
				fy += y[j] * f[j]
			}
			return fy - math.Log(z)
		},
		"htpc": func(f, y []float64, l int) float64 {
			mx, k := math.Inf(-1), 0
			for j := range l {
				mx = math.Max(mx, tau(f[j]))
				if y[j] == 1 {
					k = j
				}
			}
			var z float64
			for j := range l {
				z += math.Exp(tau(f[j]) - mx)
			}
			return tau(f[k]) - mx - math.Log(z)
		},
	}
	for name, want := range direct {
		cost, f, lik, fv, yv, width := logLikCost(t, name, 4, 3, 3)
		_ = cost
		s := layers.NewScope(f.Graph())
		y := graph.Input(f.Graph(), fmt.Sprintf("y2-%s", name), tensor.Shape{4, width}, yv)
		ll, err := LogLik(lik, s, f, y)
		if err != nil {
			t.Fatal(err)
		}
		p, err := graph.Compile(f.Graph(), ll)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		got, _ := p.Float64s(ll)
		l := len(fv) / 4
		for i := range 4 {
			w := want(fv[i*l:(i+1)*l], yv[i*width:(i+1)*width], l)
			if d := math.Abs(got[i] - w); !(d < 1e-10*math.Max(1, math.Abs(w))) {
				t.Errorf("%s row %d: LogLik %v, direct %v", name, i, got[i], w)
			}
		}
		p.Close()
	}
}
