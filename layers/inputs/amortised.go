package inputs

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/local"
	"github.com/gpc-dev/gpc/layers/mlp"
)

// Amortised is the latent-input model with q(x_i) computed by two MLPs of
// (x̃_i, one-hot y_i) (NIMGP_NN). The networks are not used at test time,
// where y* is unknown; predictions sample p(x* | x̃*) as Latent's do.
type Amortised struct {
	Config
	noise *Noise
	enc   *mlp.Encoder
}

// Name implements Model.
func (*Amortised) Name() string { return "amortised" }

// Init implements Model: the encoder's initialisation depends only on the
// sizes and the seed.
func (a *Amortised) Init(d, c int, train *datasets.Dataset, seed uint64) error {
	if err := a.noise.init(d, train); err != nil {
		return err
	}
	enc, err := mlp.NewEncoder("enc", mlp.EncoderConfig{D: d, C: c, Hidden: a.Hidden, Residual: a.Residual, Seed: seed ^ 0x5eed})
	a.enc = enc
	return err
}

// Params implements Model: the noise and both networks.
func (a *Amortised) Params() []*layers.Param {
	return append(a.noise.Params(), a.Encoder().Params()...)
}

// Encoder returns the two networks.
func (a *Amortised) Encoder() *mlp.Encoder { return a.enc }

// Locals implements Model: none (q(x_i) is amortised).
func (*Amortised) Locals() []*local.Param { return nil }

// Noise implements Model.
func (a *Amortised) Noise() *Noise { return a.noise }

// ParamGroups implements Model.
func (a *Amortised) ParamGroups() map[string]int {
	return map[string]int{"noise": countParams(a.noise.Params()...), "nn": countParams(a.enc.Params()...)}
}

// Train implements Model.
func (a *Amortised) Train(b Batch, f Conditional) (mu, v, extra *G.Node, err error) {
	c := a.enc.C
	onehot := b.Rows("onehot", c, func(ds *datasets.Dataset, i int, dst []float64) {
		for k := range dst {
			dst[k] = 0
		}
		dst[ds.Y[i]] = 1
	})
	m, logv, err := a.enc.Apply(b.Scope(), b.X(), onehot)
	if err != nil {
		return nil, nil, nil, err
	}
	return sampleLatent(b, f, a.noise, a.PriorVar, m, logv)
}

// Predict implements Model: the test graph is fed draws of x*.
func (a *Amortised) Predict(t Test, f Conditional) (mu, v *G.Node, err error) {
	return f.Marginals(t.X())
}

// Perturb implements Perturber: network weights of scale 0.15.
func (a *Amortised) Perturb(rng *rand.Rand) {
	for _, p := range a.enc.Params() {
		for i := range p.Data {
			p.Data[i] = 0.15 * rng.NormFloat64()
		}
	}
}

// SetSamples implements Sampler.
func (a *Amortised) SetSamples(n int) { a.TestSamples = n }

// Samples implements Sampler.
func (a *Amortised) Samples() int { return a.TestSamples }

// TestPosterior implements Sampler.
func (a *Amortised) TestPosterior(xt, v, mean, sd []float64) {
	testPosterior(a.PriorVar, xt, v, mean, sd)
}
