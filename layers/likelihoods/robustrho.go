package likelihoods

import (
	"errors"
	"math"

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
	lphi := graph.LogNormCDFValue(a)
	logitSite = logO - lphi
	w, omw := 1.0, 0.0
	if l.Outliers && !math.IsInf(logitZ, -1) {
		l1, l0 := logSigmoid(-logitZ)+lphi, logSigmoid(logitZ)+logO
		logZ = logAddExp(l1, l0)
		w, omw = math.Exp(l1-logZ), math.Exp(l0-logZ)
	} else {
		logZ = lphi
	}
	r := w * graph.InvMillsValue(a)
	gap := w*millsGap(a) + omw*a
	beta := r / s
	c := r * gap / (s * s)
	grad[0], grad[1] = -beta, beta
	curv[0], curv[1] = c, c
	return logZ, logitSite
}

// millsGap is λ(x) + x > 0 for the inverse Mills ratio λ = φ/Φ; in the
// lower tail it is the continued fraction 1/(t + 2/(t + 3/(t + …))),
// t = −x, instead of a difference of two nearly equal numbers.
func millsGap(x float64) float64 {
	if x > -4 {
		return x + graph.InvMillsValue(x)
	}
	t := -x
	g := t
	for k := 60; k >= 2; k-- {
		g = t + float64(k)/g
	}
	return 1 / g
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
