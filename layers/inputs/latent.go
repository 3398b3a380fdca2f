package inputs

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/local"
)

// Latent treats the noiseless inputs x_i as latent variables with a free
// Gaussian q(x_i) = N(μ_i, diag e^{ℓ_i}) per training point (NIMGP): the
// ELBO evaluates f at one reparameterised draw per row and adds
// E_q log N(x̃_i | x_i, V_i) − KL(q(x_i) ‖ N(0, s·I)). The means and
// log-variances are local parameters (one row per training point), started
// at x̃_i with variance QXInitVar. Predictions average over draws of
// x* ~ p(x* | x̃*) (Sampler).
type Latent struct {
	Config
	noise       *Noise
	mean, logVr *local.Param
}

// Name implements Model.
func (*Latent) Name() string { return "latent" }

// Init implements Model.
func (l *Latent) Init(d, c int, train *datasets.Dataset, seed uint64) error {
	if err := l.noise.init(d, train); err != nil {
		return err
	}
	l.mean = local.New("qx/mean", d, func(ds *datasets.Dataset, i int, dst []float64) {
		copy(dst, ds.X[i*ds.D:(i+1)*ds.D])
	})
	lv := math.Log(l.QXInitVar)
	l.logVr = local.New("qx/logvar", d, func(_ *datasets.Dataset, _ int, dst []float64) {
		for k := range dst {
			dst[k] = lv
		}
	})
	if train != nil {
		l.mean.Reset(train)
		l.logVr.Reset(train)
	}
	return nil
}

// Params implements Model.
func (l *Latent) Params() []*layers.Param { return l.noise.Params() }

// Locals implements Model: the means and log-variances of q(x_i).
func (l *Latent) Locals() []*local.Param { return []*local.Param{l.mean, l.logVr} }

// Noise implements Model.
func (l *Latent) Noise() *Noise { return l.noise }

// ParamGroups implements Model.
func (l *Latent) ParamGroups() map[string]int {
	return map[string]int{"noise": countParams(l.noise.Params()...), "q(x)": (l.mean.Rows() + l.logVr.Rows()) * l.mean.Width}
}

// Train implements Model.
func (l *Latent) Train(b Batch, f Conditional) (mu, v, extra *G.Node, err error) {
	return sampleLatent(b, f, l.noise, l.PriorVar, b.Local(l.mean), b.Local(l.logVr))
}

// Predict implements Model: the test graph is fed draws of x*.
func (l *Latent) Predict(t Test, f Conditional) (mu, v *G.Node, err error) {
	return f.Marginals(t.X())
}

// Perturb implements Perturber: log-variances around −2.
func (l *Latent) Perturb(rng *rand.Rand) {
	lv := l.logVr.Values()
	for i := range lv {
		lv[i] = -2 + 0.5*rng.NormFloat64()
	}
}

// SetSamples implements Sampler.
func (l *Latent) SetSamples(n int) { l.TestSamples = n }

// Samples implements Sampler.
func (l *Latent) Samples() int { return l.TestSamples }

// TestPosterior implements Sampler.
func (l *Latent) TestPosterior(xt, v, mean, sd []float64) { testPosterior(l.PriorVar, xt, v, mean, sd) }

// testPosterior is p(x* | x̃*) = N(V*ˣ V*⁻¹ x̃*, V*ˣ) with V*ˣ = (V*⁻¹ + I/s)⁻¹
// under the prior N(0, s·I); without noise it is a point mass at x̃*.
func testPosterior(s float64, xt, v, mean, sd []float64) {
	for k := range xt {
		if !(v[k] > 0) {
			mean[k], sd[k] = xt[k], 0
			continue
		}
		vx := 1 / (1/v[k] + 1/s)
		mean[k] = vx * xt[k] / v[k]
		sd[k] = math.Sqrt(vx)
	}
}

// sampleLatent evaluates f at one draw x = μ + √q·ε of q(x) = N(μ, e^ℓ) per
// row and returns the per-row input terms; shared by the latent and the
// amortised models, which differ only in where μ and ℓ come from.
func sampleLatent(b Batch, f Conditional, n *Noise, s float64, mu, logv *G.Node) (fm, fv, extra *G.Node, err error) {
	d := mu.Shape()[1]
	eps := b.Normals("eps", d)
	precision, logNoise, err := n.precisionArgs(b)
	if err != nil {
		return nil, nil, nil, err
	}
	q, x, err := latentSample(mu, logv, eps)
	if err != nil {
		return nil, nil, nil, err
	}
	if extra, err = gaussianInputTerms(b.X(), mu, logv, q, precision, logNoise, s); err != nil {
		return nil, nil, nil, err
	}
	fm, fv, err = f.Marginals(x)
	return fm, fv, extra, err
}

// minLogVar is the least log-variance whose e^ℓ is positive: math.Exp's
// underflow bound, where e^ℓ is the least subnormal, 5e-324.
const minLogVar = -7.45133219101941108420e+02

// latentSample returns q = e^max(ℓ, minLogVar) and the draw x = μ + √q·ε.
// One exponential per element is shared by the sample and the ELBO terms.
// Without the floor an ℓ below minLogVar makes q exactly 0: the value stays
// finite (x = μ), but the sample's partial ε/(2√q) is infinite and the
// exponential's chain rule multiplies it by q = 0, so ℓ's gradient is NaN.
// NIMGP_NN's log-variance network reached such an ℓ in Table 7 at noise
// 0.5. Below the floor q no longer moves with ℓ, and the −½ℓ of the input
// terms (which take ℓ itself) pulls ℓ back up. At or above the floor the
// floor passes ℓ and its gradient unchanged (a product by 1), so values
// and gradients are those of e^ℓ bit for bit.
func latentSample(mu, logv, eps *G.Node) (q, x *G.Node, err error) {
	floored, err := graph.Map(logVarFloor, logv)
	if err != nil {
		return nil, nil, err
	}
	if q, err = graph.Exp(floored); err != nil {
		return nil, nil, err
	}
	if x, err = graph.Map(reparam, mu, q, eps); err != nil {
		return nil, nil, err
	}
	return q, x, nil
}

// logVarFloor is max(ℓ, minLogVar), with partial 1 at and above the floor
// and 0 below it; a NaN passes through.
var logVarFloor = &graph.ElemFunc{
	Name: "logVarFloor",
	F: func(x []float64) float64 {
		if x[0] < minLogVar {
			return minLogVar
		}
		return x[0]
	},
	DF: func(x, d []float64) {
		d[0] = 1
		if x[0] < minLogVar {
			d[0] = 0
		}
	},
	FB: func(a [][]float64, out []float64) {
		for e, l := range a[0][:len(out)] {
			if l < minLogVar {
				l = minLogVar
			}
			out[e] = l
		}
	},
	DFB: func(a [][]float64, _ int, out []float64) {
		for e, l := range a[0][:len(out)] {
			out[e] = 1
			if l < minLogVar {
				out[e] = 0
			}
		}
	},
	Stock: func(in G.Nodes) (*G.Node, error) {
		e := &graph.Chain{}
		lo := G.NewConstant(minLogVar)
		return e.Do(G.Add(e.Do(G.Rectify(e.Do(G.Sub(in[0], lo)))), lo)), e.Err
	},
}

// gaussianInputTerms returns, per row, E_q log N(x̃ | x, V) − KL(q(x) ‖ N(0, s·I))
// for q(x) = N(μ, diag e^ℓ), summed over dimensions:
//
//	Σ_d −½ log 2πV − ((μ−x̃)² + e^ℓ)/(2V) − [(μ² + e^ℓ)/(2s) − ½ − ½ℓ + ½ log s].
//
// q = e^ℓ, W = 1/V and log V come in as nodes (q is shared with the sample;
// log V of a learned noise is its raw parameter and W = e^(−log V) a
// D-vector), so the fused op (graph.RowReduce) evaluates no exponential,
// logarithm or division per element; a learned W and log V are D-vectors
// shared by every row. As seventeen stock nodes the terms cost NIMGP and
// NIMGP_NN 18 ms of an MNIST step; fused with the exponentials inside,
// 15 ms, two thirds of it in math.Exp; with V's divisions (seven an
// element over the value and three partials) 1.25 ms of a 27 ms step.
func gaussianInputTerms(xt, mu, logv, q, precision, logNoise *G.Node, s float64) (*G.Node, error) {
	e := &graph.Chain{}
	neg := e.Do(graph.RowReduce(inputTermsFunc(s), xt, mu, logv, q, precision, logNoise))
	return e.Do(G.Neg(neg)), e.Err
}

// inputTermsFunc is minus the summand of gaussianInputTerms as a function
// of (x̃, μ, ℓ, q = e^ℓ, W = 1/V, log V); q, W and log V are separate
// arguments, and the chain rule through them is the graph's.
func inputTermsFunc(s float64) *graph.ElemFunc {
	halfLog2Pi, c := 0.5*math.Log(2*math.Pi), 0.5*math.Log(s)-0.5
	invS, halfInvS := 1/s, 0.5/s
	return &graph.ElemFunc{
		Name:   fmt.Sprintf("gaussianInputTerms(s=%g)", s),
		Linear: map[int]float64{2: -0.5, 5: 0.5},
		F: func(x []float64) float64 {
			xt, mu, lv, q, w, logv := x[0], x[1], x[2], x[3], x[4], x[5]
			r := mu - xt
			return 0.5*(r*r+q)*w + 0.5*logv + halfLog2Pi + (mu*mu+q)*halfInvS - 0.5*lv + c
		},
		DF: func(x, d []float64) {
			xt, mu, q, w := x[0], x[1], x[3], x[4]
			r := mu - xt
			d[0] = -r * w
			d[1] = r*w + mu*invS
			d[2] = -0.5
			d[3] = 0.5*w + halfInvS
			d[4] = 0.5 * (r*r + q)
			d[5] = 0.5
		},
		FB: func(a [][]float64, out []float64) {
			xt, mu, lv, q, w, logv := a[0][:len(out)], a[1][:len(out)], a[2][:len(out)], a[3][:len(out)], a[4][:len(out)], a[5][:len(out)]
			for e := range out {
				r := mu[e] - xt[e]
				out[e] = 0.5*(r*r+q[e])*w[e] + 0.5*logv[e] + halfLog2Pi + (mu[e]*mu[e]+q[e])*halfInvS - 0.5*lv[e] + c
			}
		},
		DFB: func(a [][]float64, k int, out []float64) {
			xt, mu, q, w := a[0][:len(out)], a[1][:len(out)], a[3][:len(out)], a[4][:len(out)]
			switch k {
			case 0:
				for e := range out {
					out[e] = (xt[e] - mu[e]) * w[e]
				}
			case 1:
				for e := range out {
					out[e] = (mu[e]-xt[e])*w[e] + mu[e]*invS
				}
			case 2:
				for e := range out {
					out[e] = -0.5
				}
			case 3:
				for e := range out {
					out[e] = 0.5*w[e] + halfInvS
				}
			case 4:
				for e := range out {
					r := mu[e] - xt[e]
					out[e] = 0.5 * (r*r + q[e])
				}
			case 5:
				for e := range out {
					out[e] = 0.5
				}
			}
		},
		Stock: func(in G.Nodes) (*G.Node, error) {
			xt, mu, logv, q, w, logNoise := in[0], in[1], in[2], in[3], in[4], in[5]
			e := &graph.Chain{}
			r := e.Do(G.Square(e.Do(G.Sub(mu, xt))))
			lik := e.Do(G.HadamardProd(e.Do(G.HadamardProd(e.Do(G.Add(r, q)), w)), G.NewConstant(0.5)))
			lik = e.Do(G.Add(lik, e.Do(G.HadamardProd(logNoise, G.NewConstant(0.5)))))
			kl := e.Do(G.HadamardProd(e.Do(G.Add(e.Do(G.Square(mu)), q)), G.NewConstant(halfInvS)))
			kl = e.Do(G.Sub(kl, e.Do(G.HadamardProd(logv, G.NewConstant(0.5)))))
			kl = e.Do(G.Add(kl, G.NewConstant(c+halfLog2Pi)))
			return e.Do(G.Add(lik, kl)), e.Err
		},
	}
}

// reparam is x = μ + √q·ε, the reparameterised sample of q(x) = N(μ, q),
// fused; a square root is one instruction where an exponential is a series.
var reparam = &graph.ElemFunc{
	Name:   "reparam",
	Linear: map[int]float64{0: 1},
	F:      func(x []float64) float64 { return x[0] + math.Sqrt(x[1])*x[2] },
	DF: func(x, d []float64) {
		sd := math.Sqrt(x[1])
		d[0], d[1], d[2] = 1, 0.5*x[2]/sd, sd
	},
	FB: func(a [][]float64, out []float64) {
		mu, q, eps := a[0][:len(out)], a[1][:len(out)], a[2][:len(out)]
		for e := range out {
			out[e] = mu[e] + math.Sqrt(q[e])*eps[e]
		}
	},
	DFB: func(a [][]float64, k int, out []float64) {
		q, eps := a[1][:len(out)], a[2][:len(out)]
		switch k {
		case 0:
			for e := range out {
				out[e] = 1
			}
		case 1:
			for e := range out {
				out[e] = 0.5 * eps[e] / math.Sqrt(q[e])
			}
		case 2:
			for e := range out {
				out[e] = math.Sqrt(q[e])
			}
		}
	},
	Stock: func(in G.Nodes) (*G.Node, error) {
		e := &graph.Chain{}
		sd := e.Do(G.Sqrt(in[1]))
		return e.Do(G.Add(in[0], e.Do(G.HadamardProd(sd, in[2])))), e.Err
	},
}
