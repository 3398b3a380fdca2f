package likelihoods

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// softmaxCase is a small problem for the Monte Carlo softmax: n rows of c
// classes with sm draws each, means, variances, one-hot targets and draws
// as variable nodes.
type softmaxCase struct {
	g                *G.ExprGraph
	mu, v, y, eps    *G.Node
	muD, vD, yD, epD []float64
	labels           []int
}

func newSoftmaxCase(n, c, sm int, seed uint64) *softmaxCase {
	rng := rand.New(rand.NewPCG(seed, 3))
	k := &softmaxCase{g: G.NewGraph(), labels: make([]int, n)}
	k.muD, k.vD, k.epD = make([]float64, n*c), make([]float64, n*c), make([]float64, n*sm*c)
	for i := range k.muD {
		k.muD[i] = 1.5 * rng.NormFloat64()
		k.vD[i] = 0.05 + 2*rng.Float64()
	}
	for i := range k.epD {
		k.epD[i] = rng.NormFloat64()
	}
	for i := range k.labels {
		k.labels[i] = rng.IntN(c)
	}
	k.yD = oneHot(k.labels, c)
	mat := func(name string, cols int, d []float64) *G.Node {
		return G.NewMatrix(k.g, G.Float64, G.WithShape(n, cols), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(n, cols), tensor.WithBacking(append([]float64(nil), d...)))))
	}
	k.mu, k.v, k.y, k.eps = mat("mu", c, k.muD), mat("v", c, k.vD), mat("y", c, k.yD), mat("eps", sm*c, k.epD)
	return k
}

// The op is the sample mean of log softmax_y(μ + √ν ∘ ε_k) over the draws
// given (computed here term by term), and its graph form (second
// derivatives) gives the same numbers.
func TestMCSoftmaxIsTheSampleMean(t *testing.T) {
	const n, c, sm = 6, 4, 7
	k := newSoftmaxCase(n, c, sm, 1)
	l := &Softmax{Samples: sm}
	ell, err := l.ExpectedLogLikDraws(nil, k.mu, k.v, k.y, k.eps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := softmaxGraph([]*G.Node{k.mu, k.v, k.y, k.eps}, c, sm)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, k.g, ell, ref)
	f := make([]float64, c)
	for i := range n {
		want := 0.0
		for d := range sm {
			for j := range f {
				f[j] = k.muD[i*c+j] + math.Sqrt(k.vD[i*c+j])*k.epD[i*sm*c+d*c+j]
			}
			want += logSoftmax(f, k.labels[i]) / sm
		}
		if math.Abs(out[0][i]-want) > 1e-12*(1+math.Abs(want)) {
			t.Errorf("row %d: op %v, sample mean %v", i, out[0][i], want)
		}
		if math.Abs(out[1][i]-want) > 1e-12*(1+math.Abs(want)) {
			t.Errorf("row %d: graph form %v, sample mean %v", i, out[1][i], want)
		}
	}
}

// With two classes log softmax_y(f) = log σ(f_y − f_o), a one-dimensional
// expectation over d ~ N(μ_y − μ_o, ν_y + ν_o) that 400-point Gauss–Hermite
// computes to rounding: the estimate is within four of its own standard
// errors of it on every row (an unbiased estimator; a wrong scale of the
// draws, such as ν for √ν, is off by tens).
func TestMCSoftmaxUnbiasedTwoClasses(t *testing.T) {
	const n, c, sm = 8, 2, 20000
	k := newSoftmaxCase(n, c, sm, 2)
	ell, err := (&Softmax{Samples: sm}).ExpectedLogLikDraws(nil, k.mu, k.v, k.y, k.eps)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, k.g, ell)[0]
	tq, wq := Hermite(400)
	f := make([]float64, c)
	for i := range n {
		y := k.labels[i]
		o := 1 - y
		m := k.muD[i*c+y] - k.muD[i*c+o]
		s := math.Sqrt(k.vD[i*c+y] + k.vD[i*c+o])
		exact := 0.0
		for q := range tq {
			d := m + math.Sqrt2*s*tq[q]
			exact += wq[q] / math.SqrtPi * -math.Log1p(math.Exp(-d))
		}
		var sum, sum2 float64
		for d := range sm {
			for j := range f {
				f[j] = k.muD[i*c+j] + math.Sqrt(k.vD[i*c+j])*k.epD[i*sm*c+d*c+j]
			}
			ls := logSoftmax(f, y)
			sum, sum2 = sum+ls, sum2+ls*ls
		}
		_, se := meanSE(sum, sum2, sm)
		if math.Abs(out[i]-exact) > 4*se {
			t.Errorf("row %d: estimate %.5f, exact %.5f, standard error %.2g", i, out[i], exact, se)
		}
	}
}

// With vanishing variances every draw is the mean: the estimate is
// log softmax_y(μ) exactly, whatever the draws.
func TestMCSoftmaxZeroVarianceLimit(t *testing.T) {
	const n, c, sm = 5, 3, 4
	k := newSoftmaxCase(n, c, sm, 3)
	for i := range k.vD {
		k.vD[i] = 1e-300
	}
	if err := G.Let(k.v, tensor.New(tensor.WithShape(n, c), tensor.WithBacking(k.vD))); err != nil {
		t.Fatal(err)
	}
	ell, err := (&Softmax{Samples: sm}).ExpectedLogLikDraws(nil, k.mu, k.v, k.y, k.eps)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, k.g, ell)[0]
	for i := range n {
		want := logSoftmax(k.muD[i*c:(i+1)*c], k.labels[i])
		if math.Abs(out[i]-want) > 1e-14 {
			t.Errorf("row %d: %v, log softmax(μ) %v", i, out[i], want)
		}
	}
}

// Finite differences at orders 1 and 2 with respect to every argument: the
// means, the variances, the targets (as weights) and the draws.
func TestMCSoftmaxGradients(t *testing.T) {
	for order := 1; order <= 2; order++ {
		k := newSoftmaxCase(5, 3, 3, 4)
		ell, err := (&Softmax{Samples: 3}).ExpectedLogLikDraws(nil, k.mu, k.v, k.y, k.eps)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := G.Sum(ell)
		if err != nil {
			t.Fatal(err)
		}
		check := graph.CheckGrad
		if order == 2 {
			check = graph.CheckGrad2
		}
		rep, err := check(cost, G.Nodes{k.mu, k.v, k.y, k.eps}, graph.CheckOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !(rep.MaxRelErr <= 1e-6) {
			t.Errorf("order %d: %s", order, rep.Worst())
		}
	}
}

// ExpectedLogLik on its own fixed draws is the same function of μ and ν at
// every evaluation, and its draws are a property of the seed.
func TestMCSoftmaxFixedDraws(t *testing.T) {
	l, err := New("softmax", Config{Samples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if l.(*Softmax).Samples != 50 {
		t.Fatalf("Config.Samples not applied: %+v", l)
	}
	f := newFixture(l, 6, 3, 5)
	a, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
	if err != nil {
		t.Fatal(err)
	}
	first := eval(t, f.g, a)[0]
	again := eval(t, f.g, a)[0]
	other := &Softmax{Samples: 50, Seed: 2}
	b, err := other.ExpectedLogLik(f.s, f.mu, f.v, f.y)
	if err != nil {
		t.Fatal(err)
	}
	seed2 := eval(t, f.g, b)[0]
	differ := false
	for i := range first {
		if first[i] != again[i] {
			t.Errorf("row %d: %v then %v", i, first[i], again[i])
		}
		differ = differ || first[i] != seed2[i]
	}
	if !differ {
		t.Error("seeds 1 and 2 gave the same estimate on every row")
	}
	if _, err := New("softmax", Config{Samples: -1}); err == nil {
		t.Error("negative Samples accepted")
	}
}

// GPCsm's closed form is Jensen's lower bound on the same expectation the
// Monte Carlo softmax estimates.
func TestMCSoftmaxAboveGumbelBound(t *testing.T) {
	const sm = 4000
	l := &Softmax{Samples: sm, Seed: 3}
	f := newFixture(l, 8, 4, 6)
	est, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := NewGumbelSoftmax().ExpectedLogLik(f.s, f.mu, f.v, f.y)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, f.g, est, bound)
	for i := range out[0] {
		if !(out[1][i] < out[0][i]) {
			t.Errorf("row %d: bound %v not below the estimate %v", i, out[1][i], out[0][i])
		}
	}
}
