package likelihoods

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// Bernoulli is a binary likelihood p(y=1|f) = σ(f) for a link σ; labels 0/1
// are encoded as y = ∓1 so that p(y|f) = σ(y·f) for symmetric links.
type Bernoulli struct {
	// Link is "probit" (σ = Φ) or "logit" (σ = logistic).
	Link string
	// Points is the number of Gauss–Hermite nodes for E[log σ(y f)].
	Points int
}

// NewProbit returns the probit likelihood with 20 quadrature points.
func NewProbit() *Bernoulli { return &Bernoulli{Link: "probit", Points: 20} }

// NewLogit returns the logit likelihood with 20 quadrature points.
func NewLogit() *Bernoulli { return &Bernoulli{Link: "logit", Points: 20} }

// Latent implements Likelihood: one latent function.
func (l *Bernoulli) Latent(classes int) int { return 1 }

// Classes implements ClassCounter: binary.
func (l *Bernoulli) Classes() int { return 2 }

// Params implements Likelihood.
func (l *Bernoulli) Params() []*layers.Param { return nil }

// Targets implements Likelihood: label 1 → +1, label 0 → −1.
func (l *Bernoulli) Targets(labels []int, classes int) ([]float64, int) {
	y := make([]float64, len(labels))
	for i, v := range labels {
		y[i] = 2*float64(v) - 1
	}
	return y, 1
}

// logLink returns log σ(z) elementwise.
func (l *Bernoulli) logLink(z *G.Node) (*G.Node, error) {
	switch l.Link {
	case "probit":
		return graph.LogNormCDF(z)
	case "logit": // log σ(z) = −softplus(−z)
		nz, err := G.Neg(z)
		if err != nil {
			return nil, err
		}
		sp, err := G.Softplus(nz)
		if err != nil {
			return nil, err
		}
		return G.Neg(sp)
	}
	return nil, fmt.Errorf("likelihoods: unknown link %q (want probit or logit)", l.Link)
}

func single(mu, v *G.Node) (m, s *G.Node, err error) {
	ms := mu.Shape()
	if len(ms) != 2 || ms[1] != 1 {
		return nil, nil, fmt.Errorf("likelihoods: binary likelihood wants n×1 marginals, got %v", ms)
	}
	if m, err = Column(mu, 0); err != nil {
		return nil, nil, err
	}
	s, err = Column(v, 0)
	return m, s, err
}

// ExpectedLogLik implements Likelihood.
func (l *Bernoulli) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	m, vv, err := single(mu, v)
	if err != nil {
		return nil, err
	}
	yv, err := Column(y, 0)
	if err != nil {
		return nil, err
	}
	n := m.Shape()[0]
	return Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) {
		yb, err := graph.BroadcastTo(yv, tensor.Shape{n, l.Points}, []int{1})
		if err != nil {
			return nil, err
		}
		z, err := G.HadamardProd(f, yb)
		if err != nil {
			return nil, err
		}
		return l.logLink(z)
	})
}

// Predict implements Likelihood: columns p(y=0), p(y=1). The probit case is
// closed form, Φ(μ/√(1+v)); the logit case uses quadrature.
func (l *Bernoulli) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	m, vv, err := single(mu, v)
	if err != nil {
		return nil, err
	}
	var p1 *G.Node
	if l.Link == "probit" {
		den, err := G.Add(vv, G.NewConstant(1.0))
		if err != nil {
			return nil, err
		}
		if den, err = G.Sqrt(den); err != nil {
			return nil, err
		}
		z, err := G.HadamardDiv(m, den)
		if err != nil {
			return nil, err
		}
		if p1, err = graph.NormCDF(z); err != nil {
			return nil, err
		}
	} else {
		p1, err = Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) {
			lp, err := l.logLink(f)
			if err != nil {
				return nil, err
			}
			return G.Exp(lp)
		})
		if err != nil {
			return nil, err
		}
	}
	p0, err := G.Sub(G.NewConstant(1.0), p1)
	if err != nil {
		return nil, err
	}
	return Columns(p0, p1)
}

// Gaussian is p(y|f) = N(y | f, σ²), for regression and for tests against the
// exact GP marginal likelihood. Targets are the labels' numeric values; use
// GaussianTargets for real-valued targets.
type Gaussian struct {
	Variance *layers.Param
}

// NewGaussian returns a Gaussian likelihood with noise variance v (trainable).
func NewGaussian(name string, v float64) *Gaussian {
	return &Gaussian{layers.NewParam(name+"/variance", tensor.ScalarShape(), v, layers.Exp)}
}

// Latent implements Likelihood.
func (l *Gaussian) Latent(classes int) int { return 1 }

// Classes implements ClassCounter: binary (targets ±1).
func (l *Gaussian) Classes() int { return 2 }

// Params implements Likelihood.
func (l *Gaussian) Params() []*layers.Param { return []*layers.Param{l.Variance} }

// Targets implements Likelihood.
func (l *Gaussian) Targets(labels []int, classes int) ([]float64, int) {
	y := make([]float64, len(labels))
	for i, v := range labels {
		y[i] = float64(v)
	}
	return y, 1
}

// ExpectedLogLik implements Likelihood in closed form:
// −½ log 2πσ² − ((y−μ)² + v)/(2σ²).
func (l *Gaussian) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	m, vv, err := single(mu, v)
	if err != nil {
		return nil, err
	}
	yv, err := Column(y, 0)
	if err != nil {
		return nil, err
	}
	s2, err := s.Node(l.Variance)
	if err != nil {
		return nil, err
	}
	r, err := G.Sub(yv, m)
	if err != nil {
		return nil, err
	}
	if r, err = G.Square(r); err != nil {
		return nil, err
	}
	if r, err = G.Add(r, vv); err != nil {
		return nil, err
	}
	twoS2, err := G.HadamardProd(s2, G.NewConstant(2.0))
	if err != nil {
		return nil, err
	}
	if r, err = G.HadamardDiv(r, twoS2); err != nil {
		return nil, err
	}
	logNorm, err := G.HadamardProd(s2, G.NewConstant(2*math.Pi))
	if err != nil {
		return nil, err
	}
	if logNorm, err = G.Log(logNorm); err != nil {
		return nil, err
	}
	if logNorm, err = G.HadamardProd(logNorm, G.NewConstant(-0.5)); err != nil {
		return nil, err
	}
	return G.Sub(logNorm, r)
}

// Predict implements Likelihood: for a Gaussian it returns the predictive mean
// and variance of y as two columns, not class probabilities.
func (l *Gaussian) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	m, vv, err := single(mu, v)
	if err != nil {
		return nil, err
	}
	s2, err := s.Node(l.Variance)
	if err != nil {
		return nil, err
	}
	pv, err := G.Add(vv, s2)
	if err != nil {
		return nil, err
	}
	return Columns(m, pv)
}

// UnitProbit implements UnitProbit: the probit link is the step of f plus
// unit Gaussian noise; the logit link is not.
func (l *Bernoulli) UnitProbit() bool { return l.Link == "probit" }

// TiltedMoments implements ep.Tilted for the probit link in closed form
// (R&W eq. 3.58): with z = y·m/√(1+v), Z = Φ(z), the tilted mean is
// m + y·v·λ/√(1+v) and its variance v − v²·λ(z+λ)/(1+v), λ = φ(z)/Φ(z). For
// the logit link it integrates by 64-point Gauss–Hermite quadrature.
func (l *Bernoulli) TiltedMoments(y, m, v float64) (logZ, mean, variance float64) {
	if l.Link == "probit" {
		s := math.Sqrt(1 + v)
		z := y * m / s
		lam := graph.InvMillsValue(z)
		return graph.LogNormCDFValue(z), m + y*v*lam/s, v - v*v*lam*(z+lam)/(1+v)
	}
	// Gauss–Hermite on the prior, then again centred and scaled on the
	// tilted distribution that first pass estimates (importance weights
	// N(f | m, v)/N(f | μ₁, v₁)): for a wide prior the tilted density sits in
	// a corner of the prior's nodes, and one pass is only good to 1e-5.
	t, w := Hermite(64)
	logSig := func(f float64) float64 { return -softplus(-y * f) }
	var z0, z1, z2 float64
	sd := math.Sqrt(2 * v)
	for k := range t {
		f := m + sd*t[k]
		p := w[k] / math.SqrtPi * math.Exp(logSig(f))
		z0 += p
		z1 += p * f
		z2 += p * f * f
	}
	m1 := z1 / z0
	v1 := z2/z0 - m1*m1
	if !(v1 > 0) || math.IsInf(v1, 0) {
		return math.Log(z0), m1, v1
	}
	z0, z1, z2 = 0, 0, 0
	sd1 := math.Sqrt(2 * v1)
	for k := range t {
		f := m1 + sd1*t[k]
		// log N(f | m, v) − log N(f | m1, v1) + log σ(yf), with the node's
		// own Gaussian factor exp(−t²) folded into w.
		lr := -0.5*math.Log(v/v1) - (f-m)*(f-m)/(2*v) + t[k]*t[k] + logSig(f)
		p := w[k] / math.SqrtPi * math.Exp(lr)
		z0 += p
		z1 += p * f
		z2 += p * f * f
	}
	mean = z1 / z0
	return math.Log(z0), mean, z2/z0 - mean*mean
}

// softplus is log(1 + eˣ) without overflow.
func softplus(x float64) float64 {
	if x > 30 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// TiltedMoments implements ep.Tilted in closed form: Z = N(y | m, v + σ²)
// and the Gaussian posterior of f.
func (l *Gaussian) TiltedMoments(y, m, v float64) (logZ, mean, variance float64) {
	s2 := l.Variance.Value(0)
	t := v + s2
	return -0.5*math.Log(2*math.Pi*t) - (y-m)*(y-m)/(2*t), m + v*(y-m)/t, v - v*v/t
}
