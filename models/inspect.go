package models

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
)

// LearnedNoise returns the learned per-dimension input-noise variances, or
// nil when the noise is given or the model has no noise part.
//
// With Options.Inputs.Standardize they are learned in standardised units
// and returned in the inputs' units (multiplied by the squared scale).
func (m *Model) LearnedNoise() []float64 {
	if n := m.InputNoise(); n != nil {
		v := n.Learned()
		if m.scaler != nil {
			for k := range v {
				v[k] *= m.scaler.Scale[k] * m.scaler.Scale[k]
			}
		}
		return v
	}
	return nil
}

// ParamCount reports the number of trainable scalars by group: "kernel",
// "inducing" (free Z), "q(u)" (means and factors), "likelihood", and the
// input model's ("noise", "nn", "q(x)": NIMGP's per-point means and
// variances). Groups without parameters are absent.
func (m *Model) ParamCount() map[string]int {
	out := map[string]int{}
	if m.post == nil {
		return out
	}
	add := func(g map[string]int) {
		for k, v := range g {
			if v > 0 {
				out[k] += v
			}
		}
	}
	seen := map[*layers.Param]bool{} // a shared kernel is counted once
	for _, k := range m.kernels {
		for _, p := range k.Params() {
			if !p.Fixed && !seen[p] {
				seen[p] = true
				out["kernel"] += len(p.Data)
			}
		}
	}
	add(m.post.ParamGroups())
	for _, p := range m.lik.Params() {
		out["likelihood"] += len(p.Data)
	}
	add(m.inputs.ParamGroups())
	return out
}

// Marginals returns the n×L means and variances of the latent functions at
// the rows of x (n×D), evaluated at the inputs as given. For an input model
// with closed-form predictions, delta holds what it adds to the variances
// there (NIMGP_FO's first-order Δ = ∂μᵀ V ∂μ for the noise variances, as in
// Predict: given, learned or configured; zero for observed inputs), already
// included in v; for a model that samples its test inputs it is nil.
func (m *Model) Marginals(x []float64, n int, noise []float64) (mu, v, delta []float64, err error) {
	if m.post == nil {
		return nil, nil, nil, errors.New("models: the model is not trained")
	}
	if len(x) != n*m.D || (noise != nil && len(noise) != n*m.D) {
		return nil, nil, nil, fmt.Errorf("models: %d inputs and %d noise values for %d rows of %d features", len(x), len(noise), n, m.D)
	}
	x, noise = m.standardizeTest(x, n, noise)
	t := m.newTestGraph(n)
	copy(t.x.data, x)
	post, err := m.post.Bind(t.s)
	if err != nil {
		return nil, nil, nil, err
	}
	mun, vn, err := post.Marginals(t.x.node)
	if err != nil {
		return nil, nil, nil, err
	}
	outs := []*G.Node{mun, vn}
	var vp *G.Node
	if _, ok := m.inputs.(inputs.Sampler); !ok {
		if _, vp, err = m.inputs.Predict(t, post); err != nil {
			return nil, nil, nil, err
		}
		outs = append(outs, vp)
	}
	if t.v.node != nil {
		for i := 0; i < n; i++ {
			for d := 0; d < m.D; d++ {
				t.v.data[i*m.D+d] = m.noiseAt(noise, i, d)
			}
		}
	}
	prog, err := graph.Compile(t.g, outs...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer prog.Close()
	if err := t.s.Sync(); err != nil {
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
	mu, v = append([]float64(nil), mu...), append([]float64(nil), v...)
	if vp != nil {
		full, err := prog.Float64s(vp)
		if err != nil {
			return nil, nil, nil, err
		}
		delta = make([]float64, len(full))
		for i := range full {
			delta[i] = full[i] - v[i]
		}
		v = append([]float64(nil), full...)
	}
	return mu, v, delta, nil
}

// InducingInputs returns a copy of each latent function's inducing inputs
// (M×D, row-major); with shared inducing inputs every entry is the same set.
// They are in the inputs' units (a standardised model's are mapped back).
func (m *Model) InducingInputs() [][]float64 {
	if m.post == nil {
		return nil
	}
	out := make([][]float64, m.post.Latent)
	for c := range out {
		out[c] = append([]float64(nil), m.post.Z[c].Data...)
		if s := m.scaler; s != nil {
			for k := range out[c] {
				out[c][k] = out[c][k]*s.Scale[k%m.D] + s.Mean[k%m.D]
			}
		}
	}
	return out
}
