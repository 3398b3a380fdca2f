package models

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/solvers"
)

// CheckGradients compares the model's ELBO gradient with finite differences
// on a small random problem (8 points, 2 features, 3 classes, 4 inducing
// points, one full batch). Every trainable parameter group is covered: the
// kernels, Z, q(u), the likelihood's, the learned noise, the MLP weights and
// NIMGP's q(x_i) rows. order 1 checks ∂ELBO/∂θ (for NIMGP_FO this already
// differentiates through ∂μ/∂x); order 2 checks a directional second derivative.
// q(u) and the networks are moved away from their initial values first, so
// that no term is trivially zero.
func CheckGradients(opts Options, order int, seed uint64) (graph.CheckReport, error) {
	const n, d, c, m = 8, 2, 3, 4
	opts.Inducing, opts.Batch = m, n
	if opts.Hidden == nil {
		opts.Hidden = []int{5}
	}
	if !opts.LearnNoise && opts.NoiseVar == 0 {
		opts.NoiseVar = 0.2
	}
	opts.Seed = seed
	mod, err := New(opts)
	if err != nil {
		return graph.CheckReport{}, err
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	ds := &datasets.Dataset{Name: "gradcheck", N: n, D: d, C: c, X: make([]float64, n*d), Y: make([]int, n)}
	for i := range ds.X {
		ds.X[i] = rng.NormFloat64()
	}
	for i := range ds.Y {
		ds.Y[i] = i % c
	}
	if !opts.LearnNoise { // heteroscedastic given noise exercises per-point alignment
		ds.Noise = make([]float64, n*d)
		for i := range ds.Noise {
			ds.Noise[i] = 0.05 + 0.3*rng.Float64()
		}
	}
	if err := mod.initialize(ds, io.Discard); err != nil {
		return graph.CheckReport{}, err
	}
	// σ₀² starts at e⁻²⁰, where its gradient (~1e-8) is below the
	// finite-difference round-off; check it at a value where it matters.
	for _, p := range mod.params() {
		if strings.HasSuffix(p.Name, "/white") {
			p.Fill(0.05)
		}
	}
	if err := mod.post.InitPrior(); err != nil {
		return graph.CheckReport{}, err
	}
	for c := range mod.post.Mean {
		for i := range mod.post.Mean[c].Data {
			mod.post.Mean[c].Data[i] = rng.NormFloat64()
		}
		for i := range mod.post.LRaw[c].Data {
			mod.post.LRaw[c].Data[i] += 0.2 * rng.NormFloat64()
		}
	}
	if mod.enc != nil {
		for _, p := range append(mod.enc.Mean.Params(), mod.enc.LogVar.Params()...) {
			for i := range p.Data {
				p.Data[i] = 0.15 * rng.NormFloat64()
			}
		}
	}
	for i := range mod.qxLogVar {
		mod.qxLogVar[i] = -2 + 0.5*rng.NormFloat64()
	}
	obj, err := mod.newObjective(ds)
	if err != nil {
		return graph.CheckReport{}, err
	}
	b := solvers.FullBatch(n)
	obj.t.load(obj.data, b.Index, b.Weight, obj.eps)
	if err := obj.t.s.Sync(); err != nil {
		return graph.CheckReport{}, err
	}
	_, params := obj.t.s.Trainable()
	if obj.t.qMean.node != nil {
		params = append(params, obj.t.qMean.node, obj.t.qLogV.node)
	}
	// A small step keeps finite differences from crossing ReLU kinks of the
	// networks; Richardson extrapolation keeps the truncation error negligible.
	// Not smaller than 1e-4: the second-order cost sums every gradient entry,
	// and at 1e-5 its round-off alone reached 1e-6 relative on σ₀².
	co := graph.CheckOptions{Step: 1e-4, Seed: seed}
	switch order {
	case 1:
		return graph.CheckGrad(obj.t.cost, params, co)
	case 2:
		return graph.CheckGrad2(obj.t.cost, params, co)
	}
	return graph.CheckReport{}, fmt.Errorf("models: gradient check of order %d; want 1 or 2", order)
}
