package models

import (
	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
)

// latentInputs builds NIMGP's and NIMGP_NN's inputs: one reparameterised
// sample x = μ + e^{ℓ/2} ε of q(x_i) per row, and the per-row terms
// E_q log p(x̃ | x) − KL(q(x) ‖ p(x)). NIMGP feeds the batch's rows of its
// per-point q(x_i); NIMGP_NN computes them with the encoder (nn.go).
func (t *trainGraph) latentInputs() (x, extra *G.Node, err error) {
	m := t.m
	t.eps = newFeed(t.g, "eps", t.B, m.D)
	var mu, logv *G.Node
	if m.Opts.Kind == NIMGPNN {
		if mu, logv, err = t.encode(); err != nil {
			return nil, nil, err
		}
	} else {
		t.qMean = newFeed(t.g, "qx/mean", t.B, m.D)
		t.qLogV = newFeed(t.g, "qx/logvar", t.B, m.D)
		mu, logv = t.qMean.node, t.qLogV.node
	}
	if m.logNoise == nil {
		t.v = newFeed(t.g, "noise", t.B, m.D)
	}
	noise, logNoise, err := t.noiseArgs(t.v)
	if err != nil {
		return nil, nil, err
	}
	// One exponential per element, shared by the sample and the ELBO terms.
	q, err := graph.Exp(logv)
	if err != nil {
		return nil, nil, err
	}
	if x, err = graph.Map(reparam, mu, q, t.eps.node); err != nil {
		return nil, nil, err
	}
	extra, err = gaussianInputTerms(t.x.node, mu, logv, q, noise, logNoise, m.Opts.PriorVar)
	return x, extra, err
}
