package likelihoods

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// evalLogLik runs LogLik(l) on latent values f (n×L) and labels.
func evalLogLik(t *testing.T, l Likelihood, f []float64, n, L int, labels []int, classes int) []float64 {
	t.Helper()
	g := G.NewGraph()
	s := layers.NewScope(g)
	y, w := l.Targets(labels, classes)
	fn := graph.Input(g, "f", tensor.Shape{n, L}, f)
	yn := graph.Input(g, "y", tensor.Shape{n, w}, y)
	out, err := LogLik(l, s, fn, yn)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := graph.Compile(g, out)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := prog.Run(); err != nil {
		t.Fatal(err)
	}
	v, err := prog.Float64s(out)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float64(nil), v...)
}

// The built-ins' log p(y|f) at given latent values equals the closed form:
// log Φ(yf) and log σ(yf) for the Bernoulli links, the two values of the
// step for robust-max and GPC-I, binary and multi-class.
func TestPointwiseBuiltins(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 40
	labels2, labels3 := make([]int, n), make([]int, n)
	f1, f3 := make([]float64, n), make([]float64, 3*n)
	for i := 0; i < n; i++ {
		labels2[i], labels3[i] = rng.IntN(2), rng.IntN(3)
		f1[i] = 4 * rng.NormFloat64()
		for c := 0; c < 3; c++ {
			f3[i*3+c] = rng.NormFloat64()
		}
	}
	sign := func(y int) float64 { return 2*float64(y) - 1 }
	check := func(name string, got []float64, want func(i int) float64) {
		for i, g := range got {
			if w := want(i); math.Abs(g-w) > 1e-12*math.Max(1, math.Abs(w)) {
				t.Errorf("%s row %d: LogLik %.15g, closed form %.15g", name, i, g, w)
				return
			}
		}
	}
	pr, _ := New("probit", Config{})
	check("probit", evalLogLik(t, pr, f1, n, 1, labels2, 2), func(i int) float64 {
		return math.Log(0.5 * math.Erfc(-sign(labels2[i])*f1[i]/math.Sqrt2))
	})
	lg, _ := New("logit", Config{})
	check("logit", evalLogLik(t, lg, f1, n, 1, labels2, 2), func(i int) float64 {
		return -math.Log1p(math.Exp(-sign(labels2[i]) * f1[i]))
	})
	eps := 1e-3
	rm, _ := New("robustmax", Config{Epsilon: eps})
	check("robustmax", evalLogLik(t, rm, f3, n, 3, labels3, 3), func(i int) float64 {
		row := f3[i*3 : i*3+3]
		if row[labels3[i]] >= max(row[0], row[1], row[2]) {
			return math.Log(1 - eps)
		}
		return math.Log(eps / 2)
	})
	g1, _ := New("gpc1", Config{Delta: 0.01})
	check("gpc1 binary", evalLogLik(t, g1, f1, n, 1, labels2, 2), func(i int) float64 {
		if sign(labels2[i])*f1[i] > 0 {
			return math.Log(1 - 0.01)
		}
		return math.Log(0.01)
	})
	check("gpc1 three classes", evalLogLik(t, g1, f3, n, 3, labels3, 3), func(i int) float64 {
		row := f3[i*3 : i*3+3]
		if row[labels3[i]] >= max(row[0], row[1], row[2]) {
			return math.Log(1 - 0.01)
		}
		return math.Log(0.01 / 2)
	})
	sm, _ := New("gpcsm", Config{})
	check("gpcsm", evalLogLik(t, sm, f3, n, 3, labels3, 3), func(i int) float64 {
		row := f3[i*3 : i*3+3]
		return row[labels3[i]] - math.Log(math.Exp(row[0])+math.Exp(row[1])+math.Exp(row[2]))
	})
	so, _ := New("softmax", Config{})
	check("softmax", evalLogLik(t, so, f3, n, 3, labels3, 3), func(i int) float64 {
		row := f3[i*3 : i*3+3]
		return row[labels3[i]] - math.Log(math.Exp(row[0])+math.Exp(row[1])+math.Exp(row[2]))
	})
	g2, _ := New("gpc2", Config{Delta: 0.01})
	check("gpc2 binary", evalLogLik(t, g2, f1, n, 1, labels2, 2), func(i int) float64 {
		s := 0.5 * math.Erfc(-sign(labels2[i])*f1[i]/math.Sqrt2)
		return math.Log((1-0.01)*s + 0.01*(1-s))
	})
}
