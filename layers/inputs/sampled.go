package inputs

import (
	"errors"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/local"
)

// Sampled trains on inputs redrawn at every step, x = x̃ + √V·ε with the
// given variances V (the "MGP (sampling)" baseline of the noisy-input
// paper, whose minibatches are drawn from N(x̃_i, V)), and predicts at the
// observed test inputs. The variances must be given: learning them through
// the draw alone would only shrink them to zero.
type Sampled struct {
	Config
	noise *Noise
}

// Name implements Model.
func (*Sampled) Name() string { return "sampled" }

// Init implements Model.
func (m *Sampled) Init(d, c int, train *datasets.Dataset, seed uint64) error {
	if m.Config.Noise.Learn {
		return errors.New("inputs: the sampled input model needs given input-noise variances, not learned ones")
	}
	return m.noise.init(d, train)
}

// Params implements Model: none are trained.
func (m *Sampled) Params() []*layers.Param { return nil }

// Locals implements Model.
func (*Sampled) Locals() []*local.Param { return nil }

// Noise implements Model.
func (m *Sampled) Noise() *Noise { return m.noise }

// ParamGroups implements Model.
func (*Sampled) ParamGroups() map[string]int { return nil }

// Train implements Model.
func (m *Sampled) Train(b Batch, f Conditional) (mu, v, extra *G.Node, err error) {
	d := b.X().Shape()[1]
	eps := b.Normals("eps", d)
	noise, _, err := m.noise.args(b, false)
	if err != nil {
		return nil, nil, nil, err
	}
	x, err := graph.Map(reparam, b.X(), noise, eps)
	if err != nil {
		return nil, nil, nil, err
	}
	mu, v, err = f.Marginals(x)
	return mu, v, nil, err
}

// Predict implements Model: at the observed inputs.
func (*Sampled) Predict(t Test, f Conditional) (mu, v *G.Node, err error) {
	return f.Marginals(t.X())
}

// SampledMC is Sampled that also predicts as it trains: p(y | x̃*) is
// averaged over TestSamples draws x* ~ N(x̃*, V), the posterior of the
// noiseless input under a uniform prior (the reading of the noisy-input
// paper's "MGP (sampling)" baseline in which the sampling extends to the
// test inputs; the paper does not say how that baseline predicts).
type SampledMC struct {
	Sampled
}

// Name implements Model.
func (*SampledMC) Name() string { return "sampled-mc" }

// Samples implements Sampler.
func (m *SampledMC) Samples() int { return m.TestSamples }

// SetSamples implements Sampler.
func (m *SampledMC) SetSamples(n int) { m.TestSamples = n }

// TestPosterior implements Sampler: N(x̃, V), the uniform prior's
// posterior.
func (*SampledMC) TestPosterior(xt, v, mean, sd []float64) {
	for k := range xt {
		mean[k], sd[k] = xt[k], math.Sqrt(max(v[k], 0))
	}
}
