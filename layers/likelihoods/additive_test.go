package likelihoods

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

var additiveNoises = []struct {
	name string
	a    float64
}{{"gpc1", StepNoise}, {"gpc2", ProbitNoise}, {"gpc3", LogitNoise}}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// noisyCDF is Pr(f + ε > 0) for ε ~ N(0, a), the step function when a = 0.
func noisyCDF(f, a float64) float64 {
	if a == 0 {
		if f > 0 {
			return 1
		}
		return 0
	}
	return normCDF(f / math.Sqrt(a))
}

// gaussIntegral is E[h(f)] for f ~ N(m, v) by 400-point Gauss–Legendre on
// m ± 14σ, split at 0 where h jumps (a = 0).
func gaussIntegral(m, v float64, split bool, h func(f float64) float64) float64 {
	sd := math.Sqrt(v)
	g := func(f float64) float64 {
		return math.Exp(-(f-m)*(f-m)/(2*v)) / math.Sqrt(2*math.Pi*v) * h(f)
	}
	lo, hi := m-14*sd, m+14*sd
	if split && lo < 0 && hi > 0 {
		return quad.Fixed(g, lo, 0, 400, nil, 0) + quad.Fixed(g, 0, hi, 400, nil, 0)
	}
	return quad.Fixed(g, lo, hi, 400, nil, 0)
}

// The closed forms (8) and (9) against their definitions: E_f E_ε[log p(y|g)]
// and E_f[p(y=1|f)] integrated numerically over f with the noise integrated
// exactly, p(y=1) against draws of the generative model (labels flipped
// with probability δ), and the bound (8) ≤ E_f[log p(y|f)] (Jensen; equal
// for a = 0, where g = f).
func TestGPCBinaryAgainstIntegral(t *testing.T) {
	const n, delta, draws = 8, 0.05, 200000
	for _, nz := range additiveNoises {
		t.Run(nz.name, func(t *testing.T) {
			l := NewAdditive("lik", nz.a, delta)
			f := newFixture(l, n, 2, 11)
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
			rng := rand.New(rand.NewPCG(12, uint64(nz.a*1000)))
			for i := 0; i < n; i++ {
				m, v, y := f.muP.Data[i], f.vP.Value(i), ys[i]
				want := gaussIntegral(m, v, nz.a == 0, func(fv float64) float64 {
					p := noisyCDF(y*fv, nz.a)
					return math.Log(1-delta)*p + math.Log(delta)*(1-p)
				})
				if d := math.Abs(out[0][i] - want); d > 1e-10 {
					t.Errorf("point %d: E log p(y|g) = %.12g, integral %.12g (diff %.2g)", i, out[0][i], want, d)
				}
				marg := gaussIntegral(m, v, nz.a == 0, func(fv float64) float64 {
					return math.Log((1-2*delta)*noisyCDF(y*fv, nz.a) + delta)
				})
				if out[0][i] > marg+1e-10 || (nz.a == 0 && math.Abs(out[0][i]-marg) > 1e-10) {
					t.Errorf("point %d: bound %.12g against E_f log p(y|f) = %.12g", i, out[0][i], marg)
				}
				p1 := gaussIntegral(m, v, nz.a == 0, func(fv float64) float64 {
					return (1-2*delta)*noisyCDF(fv, nz.a) + delta
				})
				if d := math.Abs(out[1][2*i+1] - p1); d > 1e-10 {
					t.Errorf("point %d: p(y=1) = %.12g, integral %.12g", i, out[1][2*i+1], p1)
				}
				if d := math.Abs(out[1][2*i] + out[1][2*i+1] - 1); d > 1e-15 {
					t.Errorf("point %d: probabilities sum to 1%+.2g", i, d)
				}
				var ones float64
				for s := 0; s < draws; s++ {
					g := m + math.Sqrt(v)*rng.NormFloat64() + math.Sqrt(nz.a)*rng.NormFloat64()
					if (g > 0) != (rng.Float64() < delta) {
						ones++
					}
				}
				ones /= draws
				if se := math.Sqrt(ones * (1 - ones) / draws); math.Abs(out[1][2*i+1]-ones) > 4*se {
					t.Errorf("point %d: p(y=1) = %v, generative Monte Carlo %v ± %v", i, out[1][2*i+1], ones, se)
				}
			}
		})
	}
}

// argmaxSample returns the class with the largest g = f + ε for one draw.
func argmaxSample(rng *rand.Rand, mu, v []float64, a float64) int {
	best, arg := math.Inf(-1), 0
	for c := range mu {
		g := mu[c] + math.Sqrt(v[c])*rng.NormFloat64() + math.Sqrt(a)*rng.NormFloat64()
		if g > best {
			best, arg = g, c
		}
	}
	return arg
}

// The multi-class S_i, E[log p(y|g)] (18) and the predictive (19) against
// draws of f and the additive noise.
func TestGPCMultiClassAgainstMonteCarlo(t *testing.T) {
	const n, c, delta, draws = 8, 4, 0.05, 200000
	for _, nz := range additiveNoises {
		t.Run(nz.name, func(t *testing.T) {
			l := NewAdditive("lik", nz.a, delta)
			f := newFixture(l, n, c, 13)
			S, err := l.argmaxProb(f.s, f.mu, f.v, f.y, -1)
			if err != nil {
				t.Fatal(err)
			}
			ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
			if err != nil {
				t.Fatal(err)
			}
			pred, err := l.Predict(f.s, f.mu, f.v)
			if err != nil {
				t.Fatal(err)
			}
			out := eval(t, f.g, S, ell, pred)
			hit, miss := math.Log(1-delta), math.Log(delta/(c-1))
			rng := rand.New(rand.NewPCG(14, uint64(nz.a*1000)))
			v := make([]float64, c)
			for i := 0; i < n; i++ {
				for j := range v {
					v[j] = f.vP.Value(i*c + j)
				}
				counts := make([]float64, c)
				for s := 0; s < draws; s++ {
					counts[argmaxSample(rng, f.muP.Data[i*c:(i+1)*c], v, nz.a)]++
				}
				sMC := counts[f.labels[i]] / draws
				se := math.Sqrt(sMC * (1 - sMC) / draws)
				if math.Abs(out[0][i]-sMC) > 4*se+1e-6 {
					t.Errorf("point %d: S = %v, Monte Carlo %v ± %v", i, out[0][i], sMC, se)
				}
				// log p(y|g) takes two values, so its MC error is (hit − miss)·se.
				if ellMC := miss + sMC*(hit-miss); math.Abs(out[1][i]-ellMC) > 4*se*(hit-miss)+1e-6 {
					t.Errorf("point %d: E log p = %v, Monte Carlo %v", i, out[1][i], ellMC)
				}
				for j := 0; j < c; j++ {
					pj := counts[j] / draws
					want := (1-delta)*pj + delta/(c-1)*(1-pj)
					pse := (1 - delta - delta/(c-1)) * math.Sqrt(pj*(1-pj)/draws)
					if math.Abs(out[2][i*c+j]-want) > 4*pse+1e-6 {
						t.Errorf("point %d class %d: predicted %v, Monte Carlo %v ± %v", i, j, out[2][i*c+j], want, pse)
					}
				}
			}
		})
	}
}

// The C quadratures of S_ij (probability that class j's g is largest) sum
// to one only to the rule's accuracy; Predict's rows are normalised and
// must sum to one to rounding.
func TestGPCMultiClassRowsSumToOne(t *testing.T) {
	const n, c = 50, 5
	for _, nz := range additiveNoises {
		l := NewAdditive("lik", nz.a, 0.02)
		f := newFixture(l, n, c, 15)
		var nodes []*G.Node
		for j := 0; j < c; j++ {
			labels := make([]int, n)
			for i := range labels {
				labels[i] = j
			}
			y := constant(f.g, fmt.Sprintf("y%d", j), tensor.Shape{n, c}, oneHot(labels, c))
			S, err := l.argmaxProb(f.s, f.mu, f.v, y, -1)
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, S)
		}
		pred, err := l.Predict(f.s, f.mu, f.v)
		if err != nil {
			t.Fatal(err)
		}
		out := eval(t, f.g, append(nodes, pred)...)
		var worstS, worstP float64
		for i := 0; i < n; i++ {
			var sS, sP float64
			for j := 0; j < c; j++ {
				sS += out[j][i]
				sP += out[c][i*c+j]
			}
			worstS, worstP = max(worstS, math.Abs(sS-1)), max(worstP, math.Abs(sP-1))
		}
		t.Logf("%s: max |Σ_j S_ij − 1| = %.2g before normalising, max |row sum − 1| = %.2g after", nz.name, worstS, worstP)
		if worstS > 1e-6 {
			t.Errorf("%s: the quadratures of S_ij sum to one only within %.2g", nz.name, worstS)
		}
		if worstP > 1e-14 {
			t.Errorf("%s: predictive rows sum to one only within %.2g", nz.name, worstP)
		}
	}
}

// Multi-class GPC-I (a = 0) is robust-max with ε = δ, and so is
// robustmax-learned, for two classes as well.
func TestGPC1EqualsRobustMax(t *testing.T) {
	cases := []struct {
		name  string
		c     int
		delta float64
	}{{"gpc1", 3, 1e-3}, {"gpc1", 5, 0.02}, {"robustmax-learned", 2, 0.01}, {"robustmax-learned", 4, 1e-3}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/C%d", tc.name, tc.c), func(t *testing.T) {
			lik, err := New(tc.name, Config{Epsilon: tc.delta, Delta: tc.delta})
			if err != nil {
				t.Fatal(err)
			}
			rm := &RobustMax{Epsilon: tc.delta, Points: 20}
			if lik.Latent(tc.c) != tc.c {
				t.Fatalf("%d latent functions for %d classes", lik.Latent(tc.c), tc.c)
			}
			f := newFixture(lik, 40, tc.c, 16)
			var nodes []*G.Node
			for _, l := range []Likelihood{lik, rm} {
				ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
				if err != nil {
					t.Fatal(err)
				}
				pred, err := l.Predict(f.s, f.mu, f.v)
				if err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, ell, pred)
			}
			out := eval(t, f.g, nodes...)
			for k, what := range []string{"ExpectedLogLik", "Predict"} {
				for i := range out[k] {
					if d := math.Abs(out[k][i] - out[k+2][i]); d > 1e-8 {
						t.Errorf("%s element %d: %v, robust-max %v", what, i, out[k][i], out[k+2][i])
					}
				}
			}
		})
	}
}

// As δ → 0 the robust likelihoods become the plain ones (eq. 5): the
// predictive tends to Φ(μ/√(a+ν)) (for a = 1 the probit likelihood's) or to
// S_j, while the data term diverges as log δ·(1−P), P the probability of
// the observed label under the noiseless predictive: δ is what keeps the
// ELBO finite.
func TestGPCDeltaLimits(t *testing.T) {
	const n, delta = 10, 1e-12
	for _, nz := range additiveNoises {
		t.Run(nz.name+"/binary", func(t *testing.T) {
			l := NewAdditive("lik", nz.a, delta)
			f := newFixture(l, n, 2, 17)
			ell, _ := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
			pred, err := l.Predict(f.s, f.mu, f.v)
			if err != nil {
				t.Fatal(err)
			}
			probit, _ := NewProbit().Predict(f.s, f.mu, f.v)
			out := eval(t, f.g, ell, pred, probit)
			for i := 0; i < n; i++ {
				p1 := normCDF(f.muP.Data[i] / math.Sqrt(nz.a+f.vP.Value(i)))
				if d := math.Abs(out[1][2*i+1] - p1); d > 1e-11 {
					t.Errorf("point %d: p(y=1) = %v, Φ(μ/√(a+ν)) = %v", i, out[1][2*i+1], p1)
				}
				if d := math.Abs(out[1][2*i+1] - out[2][2*i+1]); nz.a == 1 && d > 1e-11 {
					t.Errorf("point %d: p(y=1) = %v, probit %v", i, out[1][2*i+1], out[2][2*i+1])
				}
				P := out[1][2*i+f.labels[i]]
				if d := math.Abs(out[0][i]/math.Log(delta) - (1 - P)); d > 1e-9 {
					t.Errorf("point %d: E log p / log δ = %v, 1 − P = %v", i, out[0][i]/math.Log(delta), 1-P)
				}
			}
		})
		t.Run(nz.name+"/multi", func(t *testing.T) {
			const c = 4
			l := NewAdditive("lik", nz.a, delta)
			f := newFixture(l, n, c, 18)
			ell, _ := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
			S, _ := l.argmaxProb(f.s, f.mu, f.v, f.y, -1)
			pred, err := l.Predict(f.s, f.mu, f.v)
			if err != nil {
				t.Fatal(err)
			}
			out := eval(t, f.g, ell, S, pred)
			for i := 0; i < n; i++ {
				if d := math.Abs(out[2][i*c+f.labels[i]] - out[1][i]); d > 1e-6 {
					t.Errorf("point %d: predicted %v for its label, S = %v", i, out[2][i*c+f.labels[i]], out[1][i])
				}
				want := 1 - out[1][i] // miss = log(δ/(C−1)), not log δ
				if d := math.Abs(out[0][i]/math.Log(delta/(c-1)) - want); d > 1e-9 {
					t.Errorf("point %d: E log p / log(δ/(C−1)) = %v, 1 − S = %v", i, out[0][i]/math.Log(delta/(c-1)), want)
				}
			}
		})
	}
}

// Learned δ: the gradient of Σ_i E log p with respect to logit δ is
// Σ_i (1 − δ − P_i), so the optimum is the digest's eq. (27),
// δ* = 1 − mean P_i, for both forms; below it the gradient is positive,
// above negative.
func TestGPCOptimalDelta(t *testing.T) {
	for _, c := range []int{2, 4} {
		for _, nz := range additiveNoises {
			t.Run(fmt.Sprintf("%s/C%d", nz.name, c), func(t *testing.T) {
				l := NewAdditive("lik", nz.a, 0.1)
				f := newFixture(l, 30, c, 19)
				// Means that favour the labels, as after training, put δ*
				// well inside (0, 1); the fixture's random labels give ~0.7.
				for i, y := range f.labels {
					if c == 2 {
						f.muP.Data[i] += 1.5 * float64(2*y-1)
					} else {
						f.muP.Data[i*c+y] += 1.5
					}
				}
				ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
				if err != nil {
					t.Fatal(err)
				}
				var P *G.Node
				if c == 2 {
					P, err = l.binaryProb(f.mu, f.v, f.y)
				} else {
					P, err = l.argmaxProb(f.s, f.mu, f.v, f.y, -1)
				}
				if err != nil {
					t.Fatal(err)
				}
				cost, _ := G.Sum(ell)
				x, _ := f.s.Raw(l.Delta)
				grad, err := graph.Grad(cost, x)
				if err != nil {
					t.Fatal(err)
				}
				run := func(delta float64) (g, meanP float64) {
					l.Delta.Data[0] = logit(delta)
					if err := f.s.Sync(); err != nil {
						t.Fatal(err)
					}
					out := eval(t, f.g, grad[0], P)
					for _, p := range out[1] {
						meanP += p / float64(len(out[1]))
					}
					return out[0][0], meanP
				}
				_, meanP := run(0.1)
				opt := 1 - meanP
				g0, _ := run(opt)
				gLo, _ := run(opt / 2)
				gHi, _ := run((1 + opt) / 2)
				t.Logf("δ* = %.4g; gradient %.2g at δ*, %.3g at δ*/2, %.3g at (1+δ*)/2", opt, g0, gLo, gHi)
				if math.Abs(g0) > 1e-10 || !(gLo > 0) || !(gHi < 0) {
					t.Errorf("δ* = 1 − mean P = %v is not the optimum: gradients %v, %v, %v", opt, gLo, g0, gHi)
				}
			})
		}
	}
}

// logSoftmax is log softmax_y(f).
func logSoftmax(f []float64, y int) float64 {
	m := slices.Max(f)
	var s float64
	for _, v := range f {
		s += math.Exp(v - m)
	}
	return f[y] - m - math.Log(s)
}

// GPCsm's closed form (25) is a lower bound on E[log softmax_y(f)], and it
// is the augmented ELBO (24) at its optimum θ = 1 + P, which is checked
// against draws of f and the Gumbel noise: E[log p(y|f, ε)] − KL(q(ε)‖p(ε))
// with log p(y|f, ε) = −Σ_{c≠y} exp(f_c − f_y − ε) and KL = log θ + 1/θ − 1.
func TestSoftmaxBoundAgainstMonteCarlo(t *testing.T) {
	const n, c, draws = 8, 4, 200000
	l := NewGumbelSoftmax()
	f := newFixture(l, n, c, 20)
	ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, f.g, ell)[0]
	rng := rand.New(rand.NewPCG(21, 21))
	fs := make([]float64, c)
	for i := 0; i < n; i++ {
		y := f.labels[i]
		m, v := f.muP.Data[i*c:(i+1)*c], make([]float64, c)
		for j := range v {
			v[j] = f.vP.Value(i*c + j)
		}
		var P float64
		for j := range v {
			if j != y {
				P += math.Exp(v[y]/2 - m[y] + v[j]/2 + m[j])
			}
		}
		var ls, ls2 float64
		thetas := []float64{1 + P, 2 * (1 + P)}
		var elbo, elbo2 [2]float64
		for s := 0; s < draws; s++ {
			for j := range fs {
				fs[j] = m[j] + math.Sqrt(v[j])*rng.NormFloat64()
			}
			lsm := logSoftmax(fs, y)
			ls, ls2 = ls+lsm, ls2+lsm*lsm
			var r float64
			for j := range fs {
				if j != y {
					r += math.Exp(fs[j] - fs[y])
				}
			}
			gumbel := -math.Log(-math.Log(1 - rng.Float64())) // standard Gumbel
			for k, th := range thetas {
				e := -r*math.Exp(-(math.Log(th)+gumbel)) - (math.Log(th) + 1/th - 1)
				elbo[k], elbo2[k] = elbo[k]+e, elbo2[k]+e*e
			}
		}
		mean, se := meanSE(ls, ls2, draws)
		t.Logf("point %d: bound %.5f, E log softmax %.5f ± %.1g", i, out[i], mean, se)
		if out[i] > mean+4*se {
			t.Errorf("point %d: bound %v exceeds E log softmax %v ± %v", i, out[i], mean, se)
		}
		for k, th := range thetas {
			em, ese := meanSE(elbo[k], elbo2[k], draws)
			closed := -P/th - math.Log(th) - 1/th + 1 // eq. (24)
			if math.Abs(closed-em) > 4*ese {
				t.Errorf("point %d θ = %v: eq. (24) %v, Monte Carlo %v ± %v", i, th, closed, em, ese)
			}
			if k == 0 && math.Abs(closed-out[i]) > 1e-12 {
				t.Errorf("point %d: eq. (25) %v, eq. (24) at θ* %v", i, out[i], closed)
			}
			if k == 1 && !(closed < out[i]) {
				t.Errorf("point %d: θ = 2θ* gives %v ≥ the optimum %v", i, closed, out[i])
			}
		}
	}
}

func meanSE(sum, sum2 float64, n int) (mean, se float64) {
	mean = sum / float64(n)
	return mean, math.Sqrt((sum2/float64(n) - mean*mean) / float64(n))
}

// With vanishing variances the bound is exact, log softmax_y(μ), and the
// log-sum-exp form stays finite where 1 + P overflows.
func TestSoftmaxBoundLimits(t *testing.T) {
	const n, c = 6, 5
	l := NewGumbelSoftmax()
	f := newFixture(l, n, c, 22)
	for i := range f.vP.Data {
		f.vP.Set(i, 1e-14)
	}
	for j := 0; j < c; j++ { // row 0: a margin of 900, e^900 overflows
		f.muP.Data[j] = 0
	}
	f.muP.Data[(f.labels[0]+1)%c] = 900
	ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, f.g, ell)[0]
	for i := 0; i < n; i++ {
		want := logSoftmax(f.muP.Data[i*c:(i+1)*c], f.labels[i])
		if d := math.Abs(out[i] - want); !(d <= 1e-12*max(1, math.Abs(want))) {
			t.Errorf("point %d: bound %v, log softmax(μ) %v", i, out[i], want)
		}
	}
}

// The predictive against independent draws: with 200 000 prediction draws
// within the two estimates' joint error, and with the default 1000 within
// that estimate's error; rows sum to one.
func TestSoftmaxPredictAgainstMonteCarlo(t *testing.T) {
	const n, c, draws = 8, 4, 200000
	for _, k := range []int{draws, 0} {
		l := &GumbelSoftmax{Draws: k, Seed: 1}
		f := newFixture(l, n, c, 23)
		pred, err := l.Predict(f.s, f.mu, f.v)
		if err != nil {
			t.Fatal(err)
		}
		out := eval(t, f.g, pred)[0]
		rng := rand.New(rand.NewPCG(24, 24))
		fs := make([]float64, c)
		for i := 0; i < n; i++ {
			var sum, sum2 [c]float64
			for s := 0; s < draws; s++ {
				for j := range fs {
					fs[j] = f.muP.Data[i*c+j] + math.Sqrt(f.vP.Value(i*c+j))*rng.NormFloat64()
				}
				for j := range fs {
					p := math.Exp(logSoftmax(fs, j))
					sum[j], sum2[j] = sum[j]+p, sum2[j]+p*p
				}
			}
			var rowSum float64
			for j := 0; j < c; j++ {
				rowSum += out[i*c+j]
				mean, se := meanSE(sum[j], sum2[j], draws)
				sd := se * math.Sqrt(draws)
				tol := 4 * math.Sqrt(se*se+sd*sd/float64(l.draws()))
				if math.Abs(out[i*c+j]-mean) > tol {
					t.Errorf("%d draws, point %d class %d: predicted %v, Monte Carlo %v (tolerance %.2g)", l.draws(), i, j, out[i*c+j], mean, tol)
				}
			}
			if math.Abs(rowSum-1) > 1e-12 { // rounding in a sum of up to 200 000 terms
				t.Errorf("%d draws, point %d: row sums to 1%+.2g", l.draws(), i, rowSum-1)
			}
		}
	}
}

// Gradients of the data terms with respect to the marginals and logit δ,
// to first and second order.
func TestAdditiveGradients(t *testing.T) {
	type tc struct {
		name string
		c    int
	}
	var cases []tc
	for _, nz := range additiveNoises {
		cases = append(cases, tc{nz.name, 2}, tc{nz.name, 3})
	}
	cases = append(cases, tc{"robustmax-learned", 2}, tc{"robustmax-learned", 3}, tc{"gpcsm", 3}, tc{"gpcsm", 2})
	for _, k := range cases {
		t.Run(fmt.Sprintf("%s/C%d", k.name, k.c), func(t *testing.T) {
			for order := 1; order <= 2; order++ {
				l, err := New(k.name, Config{Epsilon: 0.05, Delta: 0.05})
				if err != nil {
					t.Fatal(err)
				}
				f := newFixture(l, 5, k.c, 25)
				ell, err := l.ExpectedLogLik(f.s, f.mu, f.v, f.y)
				if err != nil {
					t.Fatal(err)
				}
				cost, _ := G.Sum(ell)
				ps, params := f.s.Trainable()
				if want := 2 + len(l.Params()); len(ps) != want {
					t.Fatalf("%d trainable parameters, want %d (μ, log ν and the likelihood's)", len(ps), want)
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

func TestAdditiveConfig(t *testing.T) {
	for _, name := range []string{"gpc1", "gpc2", "gpc3", "gpcsm", "robustmax-learned"} {
		if !slices.Contains(Names(), name) {
			t.Errorf("%s is not registered", name)
		}
		l, err := New(name, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := l.(ClassCounter); ok {
			t.Errorf("%s claims a fixed number of classes", name)
		}
	}
	for i, nz := range additiveNoises {
		l, err := New(nz.name, Config{})
		if err != nil {
			t.Fatal(err)
		}
		a := l.(*Additive)
		if a.A != nz.a || a.Points != 20 || a.Delta.Fixed || math.Abs(a.DeltaValue()-1e-3) > 1e-15 {
			t.Errorf("%s defaults: a = %v, %d points, fixed %v, δ = %v", nz.name, a.A, a.Points, a.Delta.Fixed, a.DeltaValue())
		}
		if a.Latent(2) != 1 || a.Latent(7) != 7 {
			t.Errorf("%s: %d latent functions for 2 classes, %d for 7", nz.name, a.Latent(2), a.Latent(7))
		}
		l, err = New(nz.name, Config{Delta: 0.01 * float64(i+1), FixDelta: true, Points: 30})
		if err != nil {
			t.Fatal(err)
		}
		a = l.(*Additive)
		if !a.Delta.Fixed || math.Abs(a.DeltaValue()-0.01*float64(i+1)) > 1e-15 || a.Points != 30 {
			t.Errorf("%s: fixed %v, δ = %v, %d points", nz.name, a.Delta.Fixed, a.DeltaValue(), a.Points)
		}
		f := newFixture(a, 4, 3, 26)
		if _, err := a.ExpectedLogLik(f.s, f.mu, f.v, f.y); err != nil {
			t.Fatal(err)
		}
		if ps, _ := f.s.Trainable(); len(ps) != 2 {
			t.Errorf("%s: a fixed δ is trained (%d trainable parameters)", nz.name, len(ps))
		}
	}
	rl, _ := New("robustmax-learned", Config{Epsilon: 0.02, Delta: 0.3})
	if a := rl.(*Additive); a.A != 0 || !a.Multi || a.Latent(2) != 2 || math.Abs(a.DeltaValue()-0.02) > 1e-15 {
		t.Errorf("robustmax-learned: a = %v, multi %v, %d latent for 2 classes, ε = %v", a.A, a.Multi, a.Latent(2), a.DeltaValue())
	}
	for _, d := range []float64{-0.1, 0.5, 0.7} {
		if _, err := New("gpc2", Config{Delta: d}); err == nil {
			t.Errorf("δ = %v accepted", d)
		}
	}
}

// robustmax-beta's prior is the Beta(1, 9) log density of ε up to its
// normaliser, with correct first and second derivatives; a fixed ε and a
// likelihood without a prior contribute nothing.
func TestBetaPriorOnEpsilon(t *testing.T) {
	l, err := New("robustmax-beta", Config{Epsilon: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	a := l.(*Additive)
	for _, eps := range []float64{1e-3, 0.05, 0.3} {
		a.Delta.Data[0] = logit(eps)
		g := G.NewGraph()
		s := layers.NewScope(g)
		lp, err := a.LogPrior(s)
		if err != nil || lp == nil {
			t.Fatalf("LogPrior: %v, %v", lp, err)
		}
		prog, err := graph.Compile(g, lp)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := prog.Run(); err != nil {
			t.Fatal(err)
		}
		got, _ := prog.Scalar(lp)
		if want := 8 * math.Log1p(-eps); math.Abs(got-want) > 1e-12 {
			t.Fatalf("ε %g: log prior %g, want %g", eps, got, want)
		}
		for order := 1; order <= 2; order++ {
			check := graph.CheckGrad
			if order == 2 {
				check = graph.CheckGrad2
			}
			x, _ := s.Raw(a.Delta)
			rep, err := check(lp, G.Nodes{x}, graph.CheckOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !(rep.MaxRelErr <= 1e-6) {
				t.Errorf("ε %g, order %d: %s", eps, order, rep.Worst())
			}
		}
	}
	a.Delta.Fixed = true
	if lp, err := a.LogPrior(layers.NewScope(G.NewGraph())); lp != nil || err != nil {
		t.Fatalf("fixed ε: %v, %v", lp, err)
	}
	plain, _ := New("robustmax-learned", Config{})
	if lp, _ := plain.(*Additive).LogPrior(layers.NewScope(G.NewGraph())); lp != nil {
		t.Fatal("robustmax-learned has a prior")
	}
}

// Asking for class j of every row (own = j, as prediction does) forms the
// quadrature over the other C − 1 classes only, as a product of Φ; it must
// give the numbers of one-hot targets of class j (whose own column's log Φ
// is multiplied by zero) to rounding, 1e-13 relative, for the adaptive and
// the plain rule and for j first, inside and last. Dropping the wrong
// column moves them by far more.
func TestArgmaxProbOwnClassEqualsOneHot(t *testing.T) {
	for _, c := range []int{2, 3, 5} {
		for _, plain := range []bool{false, true} {
			const n = 40
			l := &RobustMax{Epsilon: 1e-3, Points: 20, Plain: plain}
			f := newFixture(l, n, c, 27)
			var own, hot []*G.Node
			for j := 0; j < c; j++ {
				labels := make([]int, n)
				for i := range labels {
					labels[i] = j
				}
				y := constant(f.g, fmt.Sprintf("y%d", j), tensor.Shape{n, c}, oneHot(labels, c))
				a, err := l.argmaxProb(f.s, f.mu, f.v, nil, j)
				if err != nil {
					t.Fatal(err)
				}
				b, err := l.argmaxProb(f.s, f.mu, f.v, y, -1)
				if err != nil {
					t.Fatal(err)
				}
				own, hot = append(own, a), append(hot, b)
			}
			out := eval(t, f.g, append(own, hot...)...)
			for j := 0; j < c; j++ {
				for i := 0; i < n; i++ {
					if a, b := out[j][i], out[c+j][i]; math.Abs(a-b) > 1e-13*math.Abs(b) || math.IsNaN(a) {
						t.Fatalf("C = %d, plain %v, class %d, row %d: own-class %v, one-hot %v", c, plain, j, i, a, b)
					}
				}
			}
		}
	}
}
