package models

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// LearnedNoise returns the learned per-dimension input-noise variances, or
// nil when the noise was given or the model has no noise model.
func (m *Model) LearnedNoise() []float64 {
	if m.logNoise == nil {
		return nil
	}
	v := make([]float64, m.D)
	for d := range v {
		v[d] = m.logNoise.Value(d)
	}
	return v
}

// ParamCount reports the number of trainable scalars by group: "kernel",
// "inducing" (Z), "q(u)" (means and factors), "noise", "nn" and "q(x)"
// (NIMGP's per-point means and variances).
func (m *Model) ParamCount() map[string]int {
	out := map[string]int{}
	if m.post == nil {
		return out
	}
	for _, k := range m.kernels {
		for _, p := range k.Params() {
			out["kernel"] += len(p.Data)
		}
	}
	seen := map[*layers.Param]bool{}
	for c := 0; c < m.post.Latent; c++ {
		if !seen[m.post.Z[c]] {
			seen[m.post.Z[c]] = true
			out["inducing"] += len(m.post.Z[c].Data)
		}
		// L is lower-triangular: only M(M+1)/2 of its entries are free.
		out["q(u)"] += len(m.post.Mean[c].Data) + m.post.M*(m.post.M+1)/2
	}
	for _, p := range m.lik.Params() {
		out["likelihood"] += len(p.Data)
	}
	if m.logNoise != nil {
		out["noise"] = m.D
	}
	if m.enc != nil {
		for _, p := range append(m.enc.Mean.Params(), m.enc.LogVar.Params()...) {
			out["nn"] += len(p.Data)
		}
	}
	out["q(x)"] = len(m.qxMean) + len(m.qxLogVar)
	return out
}

// Marginals returns the n×L means and variances of the latent functions at
// the rows of x (n×D), evaluated at the inputs as given. For NIMGP_FO,
// delta holds the first-order variance terms Δ = ∂μᵀ V ∂μ for the noise
// variances (as in Predict: given, learned or Options.NoiseVar), already
// included in v; for the other models it is nil.
func (m *Model) Marginals(x []float64, n int, noise []float64) (mu, v, delta []float64, err error) {
	if m.post == nil {
		return nil, nil, nil, errors.New("models: the model is not trained")
	}
	if len(x) != n*m.D || (noise != nil && len(noise) != n*m.D) {
		return nil, nil, nil, fmt.Errorf("models: %d inputs and %d noise values for %d rows of %d features", len(x), len(noise), n, m.D)
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	xf := newFeed(g, "x", n, m.D)
	copy(xf.data, x)
	b, err := m.post.Build(s)
	if err != nil {
		return nil, nil, nil, err
	}
	mun, vn, err := b.Marginals(xf.node)
	if err != nil {
		return nil, nil, nil, err
	}
	outs := G.Nodes{mun, vn}
	var vfo *G.Node
	if m.Opts.Kind == NIMGPFO {
		nf := newFeed(g, "noise", n, m.D)
		for i := 0; i < n; i++ {
			for d := 0; d < m.D; d++ {
				nf.data[i*m.D+d] = m.noiseAt(noise, i, d)
			}
		}
		if _, vfo, err = firstOrder(b, xf.node, nf.node); err != nil {
			return nil, nil, nil, err
		}
		outs = append(outs, vfo)
	}
	prog, err := graph.Compile(g, outs...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer prog.Close()
	if err := s.Sync(); err != nil {
		return nil, nil, nil, err
	}
	if err := prog.Run(); err != nil {
		return nil, nil, nil, err
	}
	if mu, err = prog.Float64s(mun); err != nil {
		return nil, nil, nil, err
	}
	if v, err = prog.Float64s(vn); err != nil {
		return nil, nil, nil, err
	}
	if vfo != nil {
		full, err := prog.Float64s(vfo)
		if err != nil {
			return nil, nil, nil, err
		}
		delta = make([]float64, len(full))
		for i := range full {
			delta[i] = full[i] - v[i]
		}
		v = full
	}
	return mu, v, delta, nil
}

// InducingInputs returns a copy of each latent function's inducing inputs
// (M×D, row-major); with shared inducing inputs every entry is the same set.
func (m *Model) InducingInputs() [][]float64 {
	if m.post == nil {
		return nil
	}
	out := make([][]float64, m.post.Latent)
	for c := range out {
		out[c] = append([]float64(nil), m.post.Z[c].Data...)
	}
	return out
}
