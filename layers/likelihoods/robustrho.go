package likelihoods

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/integrate/quad"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// RobustMaxRho is the robust multi-class likelihood of Hernández-Lobato et
// al. (2011): y = argmax_k f_k unless the row's outlier indicator z_i = 1,
// in which case y is uniform over the C classes,
//
//	p(y | f) = (1 − ρ)·Θ(f_y > max_{k≠y} f_k) + ρ/C,  z_i ~ Bernoulli(ρ), ρ ~ Beta(a0, b0),
//
// with the paper's Beta(1, 9) prior by default. With Outliers false it is
// the ρ ≡ 0 limit, Θ(f_y > max_{k≠y} f_k) (the robust paper's SMGPC, whose
// latent noise per class is a kernel setting, not the likelihood's).
//
// Under expectation propagation (models/ep.MultiTilted) the step factorises
// into the C−1 sites Θ(f_y − f_k), each touching the pair (f_y, f_k) and,
// with outliers, a Bernoulli on z_i; ρ keeps its Beta posterior, and
// prediction uses its mean (SetOutlierRate). Under SVI (ExpectedLogLik) it
// is robustmax-beta: a hit has probability 1 − ε and a miss ε/(C−1), the
// same p(y | f) with ε = ρ(C−1)/C, ε a MAP point under the Beta prior; the
// ρ ≡ 0 limit has no finite expected log-likelihood there.
type RobustMaxRho struct {
	*Additive
	// Outliers gives rows indicators z_i; false is the ρ ≡ 0 limit.
	Outliers bool
}

// NewRobustMaxRho returns the likelihood with the Beta(a0, b0) prior on ρ
// (zeros: Beta(1, 9)) and quadrature points for prediction.
func NewRobustMaxRho(outliers bool, prior [2]float64, points int) *RobustMaxRho {
	if !(prior[0] > 0 && prior[1] > 0) {
		prior = [2]float64{1, 9}
	}
	a := NewAdditive("likelihood", StepNoise, prior[0]/(prior[0]+prior[1]))
	a.Points, a.Multi, a.Prior = points, true, prior
	if !outliers {
		// Θ alone: the predictive's hit and miss weights are 1 and 0 to
		// double precision (logit −745 is the smallest positive double).
		a.Delta.Data[0], a.Delta.Fixed = -745, true
	}
	return &RobustMaxRho{Additive: a, Outliers: outliers}
}

// ExpectedLogLik implements Likelihood (robustmax-beta's with outliers).
func (l *RobustMaxRho) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	if !l.Outliers {
		return nil, errors.New("likelihoods: the argmax likelihood (ρ ≡ 0) has no finite expected log-likelihood under a Gaussian q(f); fit it by expectation propagation (--inference ep) or use robustmax-rho")
	}
	return l.Additive.ExpectedLogLik(s, mu, v, y)
}

// LogPrior implements Prior (none in the ρ ≡ 0 limit).
func (l *RobustMaxRho) LogPrior(s *layers.Scope) (*G.Node, error) {
	if !l.Outliers {
		return nil, nil
	}
	return l.Additive.LogPrior(s)
}

// SiteLatents implements ep.MultiTilted: the sites Θ(f_y − f_k), k ≠ y,
// each on (f_k, f_y).
func (l *RobustMaxRho) SiteLatents(y, classes int) [][]int {
	out := make([][]int, 0, classes-1)
	for k := 0; k < classes; k++ {
		if k != y {
			out = append(out, []int{k, y})
		}
	}
	return out
}

// OutlierPrior implements ep.MultiTilted.
func (l *RobustMaxRho) OutlierPrior() (a0, b0 float64, ok bool) {
	if !l.Outliers {
		return 0, 0, false
	}
	return l.Prior[0], l.Prior[1], true
}

// SetOutlierRate makes prediction use the outlier rate rho (EP's posterior
// mean of ρ) for classes classes: ε = ρ(C−1)/C.
func (l *RobustMaxRho) SetOutlierRate(rho float64, classes int) {
	if !l.Outliers {
		return
	}
	eps := rho * float64(classes-1) / float64(classes)
	eps = math.Min(math.Max(eps, 1e-300), 1-1e-16)
	l.Delta.Data[0] = logit(eps)
}

// MultiTiltedMoments implements ep.MultiTilted for the site
// Θ(f_y − f_k)^(1−z) O^z with O = C^(−1/(C−1)) (so that the C−1 sites of an
// outlier multiply to 1/C), m and v the cavities of (f_k, f_y) (§2.4 step
// 2). With α = (m_y − m_k)/s, s = √(v_y + v_k), w the tilted weight of the
// step term and r = wφ(α)/Φ(α): β = r/s and c = r(r + α)/s², where
// r + α = w(λ(α) + α) + (1−w)α avoids the cancellation of λ(α) + α in the
// lower tail (λ the inverse Mills ratio).
func (l *RobustMaxRho) MultiTiltedMoments(classes int, m, v []float64, logitZ float64, grad, curv []float64) (logZ, logitSite float64) {
	mk, vk, my, vy := m[0], v[0], m[1], v[1]
	logO := -math.Log(float64(classes)) / float64(classes-1)
	s := math.Sqrt(vy + vk)
	a := (my - mk) / s
	// log Φ(α), λ(α) and λ(α) + α from one evaluation, the last without
	// the cancellation of λ(α) + α in the lower tail.
	lphi, lam, lamGap := graph.LogNormCDFInvMillsValue(a)
	logitSite = logO - lphi
	w, omw := 1.0, 0.0
	if l.Outliers && !math.IsInf(logitZ, -1) {
		l1, l0 := logSigmoid(-logitZ)+lphi, logSigmoid(logitZ)+logO
		logZ = logAddExp(l1, l0)
		w, omw = math.Exp(l1-logZ), math.Exp(l0-logZ)
	} else {
		logZ = lphi
	}
	r := w * lam
	gap := w*lamGap + omw*a
	beta := r / s
	c := r * gap / (s * s)
	grad[0], grad[1] = -beta, beta
	curv[0], curv[1] = c, c
	return logZ, logitSite
}

// logSigmoid is log σ(x) = −log(1 + e^−x), stable in both tails.
func logSigmoid(x float64) float64 {
	if x >= 0 {
		return -math.Log1p(math.Exp(-x))
	}
	return x - math.Log1p(math.Exp(x))
}

func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

func init() {
	for name, f := range map[string]Factory{
		// The robust paper's likelihood, ρ under Beta(1, 9) (DeltaPrior
		// overrides it): EP keeps ρ's Beta posterior and the outlier
		// posteriors P(z_i = 1 | y, X).
		"robustmax-rho": func(c Config) Likelihood { return NewRobustMaxRho(true, c.DeltaPrior, c.Points) },
		// Its ρ ≡ 0 limit, the step Θ(f_y > max_{k≠y} f_k).
		"argmax": func(c Config) Likelihood { return NewRobustMaxRho(false, c.DeltaPrior, c.Points) },
	} {
		if err := Register(name, f); err != nil {
			panic(err)
		}
	}
}

// Predict implements Likelihood: P(y⋆ = k) = ρ/C + (1 − ρ) P(f_k is the
// largest) for independent Gaussian marginals, each probability a 1-D
// integral ∫ N(u | m_k, v_k) ∏_{k'≠k} Φ((u − m_{k'})/√v_{k'}) du by
// Gauss–Hermite quadrature in u with 96 nodes, or, where the classes'
// variances differ by more than a factor 4, a composite Gauss–Legendre rule
// (argmaxRule). The robust paper's SMGPC fits latent noises ϑ_k² that
// differ by orders of magnitude between classes, where a rule on f_k's
// scale alone misses the step-like Φ factors of a narrow latent; rows sum
// to one within ~1e-9 without renormalisation. ρ is read when the op runs,
// so it follows SetOutlierRate. The node has no gradient (SVI's objective
// is ExpectedLogLik).
func (l *RobustMaxRho) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	if mu.Dims() != 2 || v.Dims() != 2 {
		return nil, fmt.Errorf("likelihoods.RobustMaxRho: marginals %v and %v", mu.Shape(), v.Shape())
	}
	c := mu.Shape()[1]
	if c < 2 {
		return nil, fmt.Errorf("likelihoods.RobustMaxRho: %d latent functions", c)
	}
	rule := newArgmaxRule(96)
	return graph.Rows(&graph.RowFunc{
		Name: fmt.Sprintf("robustmax-rho(%p,C=%d)", l, c),
		Out:  c,
		Cost: float64(c*c*96) * 20,
		F: func(in [][]float64, out, _ []float64) {
			rho := 0.0
			if l.Outliers {
				rho = math.Min(1, l.DeltaValue()*float64(c)/float64(c-1))
			}
			for k := range out {
				out[k] = rho/float64(c) + (1-rho)*rule.prob(k, in[0], in[1])
			}
		},
	}, mu, v)
}

// argmaxRule holds the predictive's quadrature rules: Gauss–Hermite for
// ∫ e^{−t²} f(t) dt (weights divided by √π) and 20-node Gauss–Legendre on
// [−1, 1] for the composite rule.
type argmaxRule struct{ t, w, lx, lw []float64 }

func newArgmaxRule(n int) argmaxRule {
	r := argmaxRule{lx: make([]float64, 20), lw: make([]float64, 20)}
	t, w := Hermite(n)
	r.t, r.w = t, make([]float64, n)
	for i := range w {
		r.w[i] = w[i] / math.SqrtPi
	}
	quad.Legendre{}.FixedLocations(r.lx, r.lw, -1, 1)
	return r
}

// argmaxRatio is the largest ratio of latent variances handed to
// Gauss–Hermite: with 96 nodes the rows' sums drift from one by ~1e-9 at a
// ratio of 5 but ~2e-4 at 30.
const argmaxRatio = 4

// prob is the probability that f_k is the largest of independent N(m, v)
// latents: Gauss–Hermite in u = m_k + √(2v_k)·t when the variances are
// comparable, otherwise a composite Gauss–Legendre rule whose panels break
// at every latent's mean ± 1, 2, 4, 8 standard deviations, so that each
// step-like Φ and the Gaussian are resolved on their own scales.
func (r argmaxRule) prob(k int, m, v []float64) float64 {
	vmin, vmax := v[0], v[0]
	for _, x := range v {
		vmin, vmax = math.Min(vmin, x), math.Max(vmax, x)
	}
	others := func(u float64) float64 {
		var lp float64
		for kk := range m {
			if kk != k {
				lp += graph.LogNormCDFValue((u - m[kk]) / math.Sqrt(v[kk]))
			}
		}
		return math.Exp(lp)
	}
	sk := math.Sqrt(v[k])
	if vmax <= argmaxRatio*vmin {
		var total float64
		for j, t := range r.t {
			total += r.w[j] * others(m[k]+math.Sqrt2*sk*t)
		}
		return total
	}
	lo, hi := m[k]-10*sk, m[k]+10*sk
	bps := []float64{lo, hi}
	for kk := range m {
		s := math.Sqrt(v[kk])
		for _, o := range []float64{-8, -4, -2, -1, 0, 1, 2, 4, 8} {
			if b := m[kk] + o*s; b > lo && b < hi {
				bps = append(bps, b)
			}
		}
	}
	slices.Sort(bps)
	var total float64
	for i := 1; i < len(bps); i++ {
		a, b := bps[i-1], bps[i]
		if !(b > a) {
			continue
		}
		c, h := (a+b)/2, (b-a)/2
		for j, x := range r.lx {
			u := c + h*x
			z := (u - m[k]) / sk
			total += r.lw[j] * h * math.Exp(-z*z/2) / (sk * math.Sqrt(2*math.Pi)) * others(u)
		}
	}
	return total
}
