package models

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/solvers"
)

// CheckGradients compares the model's objective gradient — the ELBO's, or
// for the EP engine the evidence's — with finite differences
// on a small random problem (8 points, 2 features, 3 classes — or as many
// as a fixed-class likelihood takes —, 4 inducing points, one full batch).
// Every trainable parameter group is covered: the kernels, Z, q(u), the
// likelihood's, the input model's (noise, networks) and its per-row local
// rows. order 1 checks ∂ELBO/∂θ (for NIMGP_FO this already differentiates
// through ∂μ/∂x); order 2 checks a directional second derivative. q(u) and
// the input model are moved away from their initial values first, so that
// no term is trivially zero.
func CheckGradients(opts Options, order int, seed uint64) (graph.CheckReport, error) {
	return checkGradients(opts, order, seed, 2)
}

// checkGradients is CheckGradients with d features: wide enough inputs
// take other paths (NIMGP_FO's closed-form Δ for a dot-product kernel).
func checkGradients(opts Options, order int, seed uint64, d int) (graph.CheckReport, error) {
	mod, ds, rng, err := gradcheckModel(opts, seed, d)
	if err != nil {
		return graph.CheckReport{}, err
	}
	gc, ok := mod.engine.(GradientChecker)
	if !ok {
		return graph.CheckReport{}, capabilityError(mod.engine, "check its objective's gradient", "GradientChecker")
	}
	if !slices.Contains(gc.GradientOrders(), order) {
		return graph.CheckReport{}, fmt.Errorf("models: the %s engine's gradient check covers order %v, not %d", mod.engine.Name(), gc.GradientOrders(), order)
	}
	return gc.CheckGradients(mod, ds, order, rng)
}

// checkELBOGradients checks the ELBO's gradient (order 1) or a directional
// second derivative (order 2) in every trainable parameter group.
func checkELBOGradients(mod *Model, ds *datasets.Dataset, order int) (graph.CheckReport, error) {
	obj, err := mod.newObjective(ds)
	if err != nil {
		return graph.CheckReport{}, err
	}
	defer obj.Close()
	obj.Load(solvers.FullBatch(ds.N))
	if err := obj.Sync(); err != nil {
		return graph.CheckReport{}, err
	}
	// A small step keeps finite differences from crossing ReLU kinks of the
	// networks; Richardson extrapolation keeps the truncation error negligible.
	// Not smaller than 1e-4: the second-order cost sums every gradient entry,
	// and at 1e-5 its round-off alone reached 1e-6 relative on σ₀².
	co := graph.CheckOptions{Step: 1e-4, Seed: mod.Opts.Train.Seed}
	switch order {
	case 1:
		return graph.CheckGrad(obj.Cost(), obj.Wrt(), co)
	case 2:
		return graph.CheckGrad2(obj.Cost(), obj.Wrt(), co)
	}
	return graph.CheckReport{}, fmt.Errorf("models: gradient check of order %d; want 1 or 2", order)
}

// gradcheckModel returns CheckGradients' model, initialised on its random
// problem of d features and moved away from its initial values, with the
// problem and the random stream.
func gradcheckModel(opts Options, seed uint64, d int) (*Model, *datasets.Dataset, *rand.Rand, error) {
	const n, m = 8, 4
	c := 3
	opts.Posterior.Inducing, opts.Train.Batch = m, n
	if opts.Inputs.Hidden == nil {
		opts.Inputs.Hidden = []int{5}
	}
	if !opts.Inputs.Noise.Learn && opts.Inputs.Noise.Var == 0 {
		opts.Inputs.Noise.Var = 0.2
	}
	opts.Train.Seed = seed
	mod, err := New(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	if cc, ok := mod.lik.(likelihoods.ClassCounter); ok {
		c = cc.Classes()
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	ds := &datasets.Dataset{Name: "gradcheck", N: n, D: d, C: c, X: make([]float64, n*d), Y: make([]int, n)}
	for i := range ds.X {
		ds.X[i] = rng.NormFloat64()
	}
	for i := range ds.Y {
		ds.Y[i] = i % c
	}
	if !opts.Inputs.Noise.Learn { // heteroscedastic given noise exercises per-point alignment
		ds.Noise = make([]float64, n*d)
		for i := range ds.Noise {
			ds.Noise[i] = 0.05 + 0.3*rng.Float64()
		}
	}
	if err := mod.initialize(ds, io.Discard); err != nil {
		return nil, nil, nil, err
	}
	// σ₀² starts at e⁻²⁰, where its gradient (~1e-8) is below the
	// finite-difference round-off; check it at a value where it matters.
	for _, p := range mod.params() {
		if strings.HasSuffix(p.Name, "/white") {
			p.Fill(0.05)
		}
	}
	if err := mod.post.InitPrior(); err != nil {
		return nil, nil, nil, err
	}
	for c := range mod.post.Mean {
		for i := range mod.post.Mean[c].Data {
			mod.post.Mean[c].Data[i] = rng.NormFloat64()
		}
		for i := range mod.post.LRaw[c].Data {
			mod.post.LRaw[c].Data[i] += 0.2 * rng.NormFloat64()
		}
	}
	if p, ok := mod.inputs.(inputs.Perturber); ok {
		p.Perturb(rng)
	}
	return mod, ds, rng, nil
}

// checkEPGradients compares the graph gradient of −log Z_EP at EP's fixed
// point with central differences of the converged evidence (EP rerun from
// the converged sites at each perturbed point, to a 1e-13 tolerance).
// Only first order exists: the evidence is not differentiated twice.
func checkEPGradients(m *Model, ds *datasets.Dataset, order int) (graph.CheckReport, error) {
	if order != 1 {
		return graph.CheckReport{}, fmt.Errorf("models: the EP evidence has only a first-order gradient check")
	}
	m.Opts.EP.Tol = 1e-13
	obj, err := newEPObjective(m, ds)
	if err != nil {
		return graph.CheckReport{}, err
	}
	return checkEvidenceGradients(obj, obj.params, ds.N)
}

// checkMultiEPGradients is checkEPGradients for multi-latent EP, its
// sweeps Anderson-accelerated to a 1e-10 tolerance at every point.
func checkMultiEPGradients(m *Model, ds *datasets.Dataset, order int) (graph.CheckReport, error) {
	if order != 1 {
		return graph.CheckReport{}, fmt.Errorf("models: the EP evidence has only a first-order gradient check")
	}
	m.Opts.EP.Tol, m.Opts.EP.MaxSweeps = 1e-10, 20000
	obj, err := newMultiObjective(context.Background(), m, ds)
	if err != nil {
		return graph.CheckReport{}, err
	}
	return checkEvidenceGradients(obj, obj.params, ds.N)
}

// checkEvidenceGradients compares an EP objective's gradient in params
// with Richardson-extrapolated central differences of its value.
func checkEvidenceGradients(obj solvers.Objective, params []*layers.Param, n int) (graph.CheckReport, error) {
	b := solvers.FullBatch(n)
	_, g, err := obj.Step(b)
	if err != nil {
		return graph.CheckReport{}, err
	}
	var rep graph.CheckReport
	grads := make([][]float64, len(g))
	for i := range g {
		grads[i] = append([]float64(nil), g[i]...)
	}
	// Central differences at h and h/2, Richardson-extrapolated: the
	// evidence's third derivatives are large enough that plain differences
	// at h = 1e-5 err by 1e-6.
	central := func(x *float64, h float64) (float64, error) {
		old := *x
		*x = old + h
		fp, _, err := obj.Step(b)
		if err == nil {
			*x = old - h
			var fm float64
			fm, _, err = obj.Step(b)
			fp = (fp - fm) / (2 * h)
		}
		*x = old
		return fp, err
	}
	for i, p := range params {
		want := grads[i]
		var worst, scale float64
		for j := range p.Data {
			d1, err := central(&p.Data[j], 1e-4)
			if err != nil {
				return rep, err
			}
			d2, err := central(&p.Data[j], 5e-5)
			if err != nil {
				return rep, err
			}
			fd := (4*d2 - d1) / 3
			worst = math.Max(worst, math.Abs(fd-want[j]))
			scale = math.Max(scale, math.Abs(fd))
		}
		rel := worst / math.Max(1, scale)
		rep.Params = append(rep.Params, graph.ParamError{Name: p.Name, RelErr: rel})
		rep.MaxRelErr = math.Max(rep.MaxRelErr, rel)
	}
	return rep, nil
}

// checkMFGradients checks the mean-field bound's gradient in the locations
// a, the hyper-parameters and Z at random locations.
func checkMFGradients(m *Model, ds *datasets.Dataset, order int, rng *rand.Rand) (graph.CheckReport, error) {
	o, err := newMFObjective(m, ds)
	if err != nil {
		return graph.CheckReport{}, err
	}
	defer o.prog.Close()
	for i := range o.aData {
		o.aData[i] = rng.NormFloat64()
	}
	if err := o.s.Sync(); err != nil {
		return graph.CheckReport{}, err
	}
	co := graph.CheckOptions{Step: 1e-4, Seed: 1}
	if order == 2 {
		return graph.CheckGrad2(o.bound, o.wrt, co)
	}
	return graph.CheckGrad(o.bound, o.wrt, co)
}
