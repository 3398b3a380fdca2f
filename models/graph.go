package models

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/variational"
)

// feed is a data input of a compiled graph: a node whose value's backing
// array is rewritten in place before each run (the graph's shapes are fixed).
type feed struct {
	node *G.Node
	data []float64
}

func newFeed(g *G.ExprGraph, name string, shape ...int) feed {
	data := make([]float64, tensor.Shape(shape).TotalSize())
	return feed{graph.Input(g, name, shape, data), data}
}

// trainGraph is the negative ELBO of one batch of B rows, compiled once.
type trainGraph struct {
	m      *Model
	g      *G.ExprGraph
	s      *layers.Scope
	b      *variational.Built
	B      int
	x      feed // x̃ rows, B×D
	y      feed // likelihood targets, B×width
	onehot feed // one-hot labels, B×C (NIMGP_NN's encoder input)
	w      feed // per-row weights N/|B| (0 for padding), B
	v      feed // given input-noise variances, B×D (nil node when learned or unused)
	eps    feed // standard normal draws for x = μ + σ·ε, B×D
	qMean  feed // NIMGP: q(x_i) rows of the batch
	qLogV  feed
	cost   *G.Node
	// params and grads are aligned: the trainable parameters and ∂cost/∂param.
	params []*layers.Param
	grads  G.Nodes
	// qGrads are ∂cost/∂ of the batch's q(x_i) rows (NIMGP).
	qGrads G.Nodes
	prog   *graph.Program
}

// noiseArgs returns V and log V for the fused input terms: the given
// B×D variances fed per batch and their logarithm, or the learned
// per-dimension variances and their raw parameter (log V) as D-vectors,
// which graph.RowReduce treats as rows shared by the batch (no broadcast
// node, no logarithm per element).
func (t *trainGraph) noiseArgs(given feed) (v, logV *G.Node, err error) {
	if t.m.logNoise == nil {
		logV, err = G.Log(given.node)
		return given.node, logV, err
	}
	if v, err = t.s.Node(t.m.logNoise); err != nil {
		return nil, nil, err
	}
	logV, err = t.s.Raw(t.m.logNoise)
	return v, logV, err
}

func (m *Model) buildTrain(B int) (*trainGraph, error) {
	t := &trainGraph{m: m, g: G.NewGraph(), B: B}
	t.s = layers.NewScope(t.g)
	_, width := m.lik.Targets(make([]int, 1), m.C)
	t.x = newFeed(t.g, "x", B, m.D)
	t.y = newFeed(t.g, "y", B, width)
	t.w = newFeed(t.g, "w", B)
	e := &graph.Chain{}
	b, err := m.post.Build(t.s)
	if err != nil {
		return nil, err
	}
	t.b = b
	var x, extra *G.Node // where f is evaluated; per-row extra ELBO terms
	var mu, v *G.Node
	switch m.Opts.Kind {
	case MGP:
		x = t.x.node
	case NIMGP, NIMGPNN:
		if x, extra, err = t.latentInputs(); err != nil {
			return nil, err
		}
	case NIMGPFO:
		if mu, v, err = t.firstOrderMarginals(); err != nil {
			return nil, err
		}
	}
	if mu == nil {
		if mu, v, err = b.Marginals(x); err != nil {
			return nil, err
		}
	}
	ell, err := m.lik.ExpectedLogLik(t.s, mu, v, t.y.node)
	if err != nil {
		return nil, err
	}
	if extra != nil {
		ell = e.Do(G.Add(ell, extra))
	}
	data := e.Do(G.Sum(e.Do(G.HadamardProd(ell, t.w.node))))
	t.cost = e.Do(G.Sub(b.KL, data)) // −ELBO
	if e.Err != nil {
		return nil, e.Err
	}
	var wrt G.Nodes
	t.params, wrt = t.s.Trainable()
	if m.Opts.Kind == NIMGP {
		wrt = append(wrt, t.qMean.node, t.qLogV.node)
	}
	grads, err := graph.Grad(t.cost, wrt...)
	if err != nil {
		return nil, fmt.Errorf("models: differentiating the ELBO: %w", err)
	}
	t.grads = grads[:len(t.params)]
	t.qGrads = grads[len(t.params):]
	if t.prog, err = graph.Compile(t.g, append(G.Nodes{t.cost}, grads...)...); err != nil {
		return nil, err
	}
	return t, nil
}

// load fills the batch's inputs from the training set.
func (t *trainGraph) load(train *trainingData, idx []int, weight []float64, normals *normalStream) {
	m, D := t.m, t.m.D
	w := len(train.targets) / train.n
	for r, i := range idx {
		copy(t.x.data[r*D:(r+1)*D], train.x[i*D:(i+1)*D])
		copy(t.y.data[r*w:(r+1)*w], train.targets[i*w:(i+1)*w])
		t.w.data[r] = weight[r]
		if t.v.node != nil {
			copy(t.v.data[r*D:(r+1)*D], m.trainNoise[i*D:(i+1)*D])
		}
		if t.onehot.node != nil {
			for c := 0; c < m.C; c++ {
				t.onehot.data[r*m.C+c] = 0
			}
			t.onehot.data[r*m.C+train.y[i]] = 1
		}
		if t.qMean.node != nil {
			copy(t.qMean.data[r*D:(r+1)*D], m.qxMean[i*D:(i+1)*D])
			copy(t.qLogV.data[r*D:(r+1)*D], m.qxLogVar[i*D:(i+1)*D])
		}
	}
	if t.eps.node != nil {
		normals.Fill(t.eps.data)
	}
}

// run evaluates the cost and its gradients.
func (t *trainGraph) run() (float64, error) {
	if err := t.s.Sync(); err != nil {
		return 0, err
	}
	if err := t.prog.Run(); err != nil {
		return 0, err
	}
	return t.prog.Scalar(t.cost)
}

// trainingData is a training set prepared for batching.
type trainingData struct {
	n, d    int
	x       []float64
	y       []int
	targets []float64
}

// gaussianInputTerms returns, per row, E_q log N(x̃ | x, V) − KL(q(x) ‖ N(0, s·I))
// for q(x) = N(μ, diag e^ℓ), summed over dimensions:
//
//	Σ_d −½ log 2πV − ((μ−x̃)² + e^ℓ)/(2V) − [(μ² + e^ℓ)/(2s) − ½ − ½ℓ + ½ log s].
//
// q = e^ℓ and log V come in as nodes (q is shared with the sample; log V of
// a learned noise is its raw parameter), so the fused op (graph.RowReduce)
// evaluates no exponential or logarithm per element; a learned V and log V
// are D-vectors shared by every row. As seventeen stock
// nodes the terms cost NIMGP and NIMGP_NN 18 ms of an MNIST step; fused
// with the exponentials inside, 15 ms, two thirds of it in math.Exp.
func gaussianInputTerms(xt, mu, logv, q, noise, logNoise *G.Node, s float64) (*G.Node, error) {
	e := &graph.Chain{}
	neg := e.Do(graph.RowReduce(inputTermsFunc(s), xt, mu, logv, q, noise, logNoise))
	return e.Do(G.Neg(neg)), e.Err
}

// inputTermsFunc is minus the summand of gaussianInputTerms as a function
// of (x̃, μ, ℓ, q = e^ℓ, V, log V); q and log V are separate arguments, and
// the chain rule through them is the graph's.
func inputTermsFunc(s float64) *graph.ElemFunc {
	halfLog2Pi, c := 0.5*math.Log(2*math.Pi), 0.5*math.Log(s)-0.5
	return &graph.ElemFunc{
		Name:   fmt.Sprintf("gaussianInputTerms(s=%g)", s),
		Cost:   4, // divisions
		Linear: map[int]float64{2: -0.5, 5: 0.5},
		F: func(x []float64) float64 {
			xt, mu, lv, q, v, logv := x[0], x[1], x[2], x[3], x[4], x[5]
			r := mu - xt
			return (r*r+q)/(2*v) + 0.5*logv + halfLog2Pi + (mu*mu+q)/(2*s) - 0.5*lv + c
		},
		DF: func(x, d []float64) {
			xt, mu, q, v := x[0], x[1], x[3], x[4]
			r, iv := mu-xt, 1/v
			d[0] = -r * iv
			d[1] = r*iv + mu/s
			d[2] = -0.5
			d[3] = 0.5*iv + 1/(2*s)
			d[4] = -(r*r + q) * iv * iv / 2
			d[5] = 0.5
		},
		FB: func(a [][]float64, out []float64) {
			xt, mu, lv, q, v, logv := a[0][:len(out)], a[1][:len(out)], a[2][:len(out)], a[3][:len(out)], a[4][:len(out)], a[5][:len(out)]
			for e := range out {
				r := mu[e] - xt[e]
				out[e] = (r*r+q[e])/(2*v[e]) + 0.5*logv[e] + halfLog2Pi + (mu[e]*mu[e]+q[e])/(2*s) - 0.5*lv[e] + c
			}
		},
		DFB: func(a [][]float64, k int, out []float64) {
			xt, mu, q, v := a[0][:len(out)], a[1][:len(out)], a[3][:len(out)], a[4][:len(out)]
			switch k {
			case 0:
				for e := range out {
					out[e] = (xt[e] - mu[e]) / v[e]
				}
			case 1:
				for e := range out {
					out[e] = (mu[e]-xt[e])/v[e] + mu[e]/s
				}
			case 2:
				for e := range out {
					out[e] = -0.5
				}
			case 3:
				for e := range out {
					out[e] = 0.5/v[e] + 1/(2*s)
				}
			case 4:
				for e := range out {
					r := mu[e] - xt[e]
					out[e] = -(r*r + q[e]) / (2 * v[e] * v[e])
				}
			case 5:
				for e := range out {
					out[e] = 0.5
				}
			}
		},
		Stock: func(in G.Nodes) (*G.Node, error) {
			xt, mu, logv, q, noise, logNoise := in[0], in[1], in[2], in[3], in[4], in[5]
			e := &graph.Chain{}
			r := e.Do(G.Square(e.Do(G.Sub(mu, xt))))
			lik := e.Do(G.HadamardDiv(e.Do(G.Add(r, q)), e.Do(G.HadamardProd(noise, G.NewConstant(2.0)))))
			lik = e.Do(G.Add(lik, e.Do(G.HadamardProd(logNoise, G.NewConstant(0.5)))))
			kl := e.Do(G.HadamardProd(e.Do(G.Add(e.Do(G.Square(mu)), q)), G.NewConstant(1/(2*s))))
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
