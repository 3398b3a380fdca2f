package models

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers/variational"
)

// firstOrderMarginals builds NIMGP_FO's marginals at the noisy inputs: each
// class's variance gains Δ_i = ∂μ_c(x̃_i)ᵀ V_i ∂μ_c(x̃_i). The gradient comes
// from graph.Grad of Σ_i μ_c(x̃_i) with respect to the inputs (row i is
// ∂μ_c(x̃_i)/∂x̃_i because μ_c(x̃_i) depends on no other row), so it works for
// any kernel, and the ELBO is later differentiated through it.
func (t *trainGraph) firstOrderMarginals() (mu, v *G.Node, err error) {
	if t.m.logNoise == nil {
		t.v = newFeed(t.g, "noise", t.B, t.m.D)
	}
	noise, err := t.noiseNode(t.B, t.v)
	if err != nil {
		return nil, nil, err
	}
	return firstOrder(t.b, t.x.node, noise)
}

// firstOrder returns the n×C means and Δ-inflated variances at x for input
// noise variances noise (n×D); shared by training and prediction.
func firstOrder(b *variational.Built, x, noise *G.Node) (mu, v *G.Node, err error) {
	mus, vs, err := b.ClassMarginals(x)
	if err != nil {
		return nil, nil, err
	}
	e := &graph.Chain{}
	for c := range mus {
		g, err := graph.Grad(e.Do(G.Sum(mus[c])), x)
		if err != nil {
			return nil, nil, fmt.Errorf("models: ∂μ_%d/∂x: %w", c, err)
		}
		// Δ_i = Σ_j g_ij² V_ij as one fused op (graph.RowSum3), whose
		// adjoints stay fused at every order.
		delta := e.Do(graph.RowSum3(g[0], g[0], noise, 1))
		vs[c] = e.Do(G.Add(vs[c], delta))
	}
	if e.Err != nil {
		return nil, nil, e.Err
	}
	if mu, err = variational.Stack(mus); err != nil {
		return nil, nil, err
	}
	v, err = variational.Stack(vs)
	return mu, v, err
}
