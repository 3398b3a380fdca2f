package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/models/ep"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// OutlierReporter is an engine whose fit gives, for every training row,
// the posterior probability P(z_i = 1 | y, X) that its label is an
// outlier (drawn at random rather than by the latent functions), as
// multi-latent EP does for the robust-max-with-ρ likelihood; gpc outliers
// asks for it.
type OutlierReporter interface {
	Engine
	// Outliers returns P(z_i = 1 | y, X) for the training rows of m's fit,
	// in training order, or an error saying why m has none.
	Outliers(m *Model) ([]float64, error)
}

// Outliers returns P(z_i = 1 | y, X) for every training row, or an error
// naming the capability the model's engine lacks.
func (m *Model) Outliers() ([]float64, error) {
	r, ok := m.engine.(OutlierReporter)
	if !ok {
		return nil, capabilityError(m.engine, "report outlier posteriors", "OutlierReporter")
	}
	return r.Outliers(m)
}

// OutlierRater is a multi-latent EP likelihood with outlier indicators
// that predicts with the outlier rate EP's fit gives it (ρ's posterior
// mean).
type OutlierRater interface {
	SetOutlierRate(rho float64, classes int)
}

// MultiEPState is what the ep engine's multi-latent fit leaves
// (Model.EngineState): the outlier posteriors and ρ's Beta posterior, the
// evidence and the search's counts.
type MultiEPState struct {
	// Outliers[i] is P(z_i = 1 | y, X) of training row i (nil when the
	// likelihood has no outlier indicators).
	Outliers []float64 `json:"outliers,omitempty"`
	// A and B are ρ's posterior Beta(a, b) (0 without indicators).
	A float64 `json:"a,omitempty"`
	B float64 `json:"b,omitempty"`
	// LogZ is the EP evidence at the fitted hyper-parameters.
	LogZ float64 `json:"log_z"`
	// Evaluations of the evidence, EP sweeps over them all, the final EP's
	// sweeps and whether it converged, and the search's warning if it
	// stopped on an error at its best point.
	Evaluations int    `json:"evaluations"`
	Sweeps      int    `json:"sweeps"`
	FinalSweeps int    `json:"final_sweeps"`
	Converged   bool   `json:"converged"`
	Negative    int    `json:"negative_sites"`
	Warning     string `json:"warning,omitempty"`
}

// Rho returns ρ's posterior mean a/(a+b), 0 without indicators.
func (s *MultiEPState) Rho() float64 {
	if s.A+s.B == 0 {
		return 0
	}
	return s.A / (s.A + s.B)
}

// DecodeState implements Stateful for the multi-latent fit's state.
func (epEngine) DecodeState(m *Model, raw json.RawMessage) (any, error) {
	var s MultiEPState
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("engine_state: %w", err)
	}
	if s.Outliers != nil && len(s.Outliers) != m.N {
		return nil, fmt.Errorf("engine_state: %d outlier probabilities for %d training rows", len(s.Outliers), m.N)
	}
	for i, p := range s.Outliers {
		if !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("engine_state: outlier probability %d is %v, not in [0, 1]", i, p)
		}
	}
	if s.A < 0 || s.B < 0 || math.IsNaN(s.A) || math.IsNaN(s.B) || math.IsInf(s.A, 0) || math.IsInf(s.B, 0) {
		return nil, fmt.Errorf("engine_state: Beta(%v, %v) of the outlier rate", s.A, s.B)
	}
	return &s, nil
}

// Outliers implements OutlierReporter from the multi-latent fit's state.
func (epEngine) Outliers(m *Model) ([]float64, error) {
	s, ok := m.engineState.(*MultiEPState)
	switch {
	case m.post == nil:
		return nil, errors.New("models: the model is not fitted")
	case !ok || s.Outliers == nil:
		return nil, fmt.Errorf("models: model %s has no outlier indicators (its %s likelihood has none); train one whose likelihood has them, such as rmgpc", m.Name(), m.Opts.Likelihood.Name)
	}
	return append([]float64(nil), s.Outliers...), nil
}

// maxUnconverged is how many evidence evaluations may end without EP
// converging before the hyper-parameter search stops at its best point: an
// EP that oscillates costs MaxSweeps sweeps per evaluation and gives a
// noisy evidence.
const maxUnconverged = 3

// multiObjective is minus the multi-latent EP evidence and its gradient in
// the kernels' hyper-parameters, EP warm-starting from the previous sites
// at every evaluation.
type multiObjective struct {
	m      *Model
	n      int
	lik    ep.MultiTilted
	ly     *ep.MultiLayout
	sites  *ep.MultiSites
	cfg    ep.MultiConfig
	kScope *layers.Scope
	kProg  *graph.Program
	kNodes []*G.Node // per latent; latents sharing a kernel share a node
	eScope *layers.Scope
	eProg  *graph.Program
	ev     *ep.MultiEvidence
	params []*layers.Param
	grads  G.Nodes
	gbuf   [][]float64
	ctx    context.Context
	last   *ep.MultiResult
	state  MultiEPState
	unconv int
}

func newMultiObjective(ctx context.Context, m *Model, train *datasets.Dataset) (*multiObjective, error) {
	lik, ok := m.lik.(ep.MultiTilted)
	if !ok {
		return nil, fmt.Errorf("models: the %s likelihood has no multi-latent EP sites (ep.MultiTilted)", m.Opts.Likelihood.Name)
	}
	if train.N > maxEPRows {
		return nil, fmt.Errorf("models: EP is dense (O(N³) per sweep); %d training rows exceed its limit of %d: use the svi engine", train.N, maxEPRows)
	}
	ly, err := ep.NewMultiLayout(lik, train.Y, m.C)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	e := m.Opts.EP
	o := &multiObjective{m: m, n: train.N, lik: lik, ly: ly, ctx: ctx,
		cfg: ep.MultiConfig{Damping: e.Damping, Tol: e.Tol, MaxSweeps: e.MaxSweeps}}
	o.kScope = layers.NewScope(G.NewGraph())
	if o.kNodes, err = m.multiPrior(o.kScope); err != nil {
		return nil, err
	}
	var outs G.Nodes
	seen := map[*G.Node]bool{}
	for _, k := range o.kNodes {
		if !seen[k] {
			seen[k] = true
			outs = append(outs, k)
		}
	}
	if o.kProg, err = graph.Compile(o.kScope.G, outs...); err != nil {
		return nil, err
	}
	o.eScope = layers.NewScope(G.NewGraph())
	kn, err := m.multiPrior(o.eScope)
	if err != nil {
		return nil, err
	}
	if o.ev, err = ep.NewMultiEvidence(kn); err != nil {
		return nil, err
	}
	// The kernels' hyper-parameters; q(u) is EP's output and the
	// likelihood's ρ has its Beta posterior inside EP.
	var hyper []*layers.Param
	dup := map[*layers.Param]bool{}
	for _, k := range m.kernels {
		for _, p := range k.Params() {
			if !dup[p] {
				dup[p] = true
				hyper = append(hyper, p)
			}
		}
	}
	var wrt G.Nodes
	o.params, wrt = o.eScope.TrainableAmong(hyper)
	if len(wrt) > 0 {
		if o.grads, err = graph.Grad(o.ev.Node, wrt...); err != nil {
			return nil, fmt.Errorf("models: differentiating the EP evidence: %w", err)
		}
	}
	if o.eProg, err = graph.Compile(o.eScope.G, append(G.Nodes{o.ev.Node}, o.grads...)...); err != nil {
		return nil, err
	}
	for _, p := range o.params {
		o.gbuf = append(o.gbuf, make([]float64, len(p.Data)))
	}
	return o, nil
}

// multiPrior builds every latent function's prior covariance at the
// training inputs, K_ZZ at Z = X (its white noise and the jitter
// included); latents sharing a kernel share the node.
func (m *Model) multiPrior(s *layers.Scope) ([]*G.Node, error) {
	e := &graph.Chain{}
	z := e.Do(s.Raw(m.post.Z[0]))
	jit := e.Do(s.Node(m.post.JitterParam))
	out := make([]*G.Node, len(m.kernels))
	byKernel := map[kernels.Kernel]*G.Node{}
	for c, k := range m.kernels {
		if n, ok := byKernel[k]; ok {
			out[c] = n
			continue
		}
		out[c] = e.Do(kernels.KZZ(k, s, z, jit))
		byKernel[k] = out[c]
	}
	return out, e.Err
}

// priors evaluates the latents' prior covariances at the current
// parameters and factorises them.
func (o *multiObjective) priors() (*ep.MultiPrior, error) {
	if err := o.kScope.Sync(); err != nil {
		return nil, err
	}
	if err := o.kProg.Run(); err != nil {
		return nil, err
	}
	ks := make([]*mat.SymDense, len(o.kNodes))
	made := map[*G.Node]*mat.SymDense{}
	for c, node := range o.kNodes {
		if k, ok := made[node]; ok {
			ks[c] = k
			continue
		}
		d, err := o.kProg.Float64s(node)
		if err != nil {
			return nil, err
		}
		ks[c] = mat.NewSymDense(o.n, append([]float64(nil), d...))
		made[node] = ks[c]
	}
	pr, err := ep.NewMultiPrior(ks)
	if err != nil {
		return nil, fmt.Errorf("models: %v: %w", err, solvers.ErrNotPositiveDefinite)
	}
	return pr, nil
}

// run runs EP at the current hyper-parameters to tol, warm-started from the
// sites; a run that fails outright (a large jump of the hyper-parameters
// can leave the old sites improper) is retried once from the prior.
func (o *multiObjective) run(tol float64) (*ep.MultiResult, error) {
	pr, err := o.priors()
	if err != nil {
		return nil, err
	}
	if o.sites == nil {
		o.sites = o.ly.NewSites()
	}
	cfg := o.cfg
	cfg.Tol = tol
	res, err := ep.RunMulti(o.ctx, pr, o.ly, o.lik, o.sites, cfg)
	o.state.Evaluations++
	if res != nil {
		o.state.Sweeps += res.Sweeps
	}
	if err != nil && o.ctx.Err() != nil {
		return nil, o.ctx.Err()
	}
	if err != nil && !errors.Is(err, ep.ErrNotConverged) {
		o.sites = o.ly.NewSites()
		res, err = ep.RunMulti(o.ctx, pr, o.ly, o.lik, o.sites, cfg)
		if res != nil {
			o.state.Sweeps += res.Sweeps
		}
	}
	if err != nil && o.ctx.Err() != nil {
		return nil, o.ctx.Err()
	}
	if err != nil && !errors.Is(err, ep.ErrNotConverged) {
		o.sites = nil
		return nil, err
	}
	if err != nil {
		o.unconv++
	}
	o.last = res
	return res, err
}

// Step implements solvers.Objective: −log Z_EP and its gradient (the batch
// is ignored: EP uses every row).
func (o *multiObjective) Step(solvers.Batch) (float64, [][]float64, error) {
	res, err := o.run(o.tolerance())
	if err != nil && !errors.Is(err, ep.ErrNotConverged) {
		return 0, nil, err
	}
	if err != nil && o.unconv >= maxUnconverged {
		return 0, nil, fmt.Errorf("%w at %d evidence evaluations: hyper-parameter search stopped at its best point", err, o.unconv)
	}
	o.ev.Set(o.ly, o.sites)
	if err := o.eScope.Sync(); err != nil {
		return 0, nil, err
	}
	if err := o.eProg.Run(); err != nil {
		return 0, nil, err
	}
	for i, g := range o.grads {
		v, err := o.eProg.Float64s(g)
		if err != nil {
			return 0, nil, err
		}
		for j := range v {
			o.gbuf[i][j] = -v[j]
		}
	}
	return -res.LogZ, o.gbuf, nil
}

func (o *multiObjective) tolerance() float64 {
	if o.cfg.Tol > 0 {
		return o.cfg.Tol
	}
	return 1e-3
}

// fitMultiEP maximises the multi-latent EP evidence over the kernels'
// hyper-parameters by L-BFGS (the robust paper's eq. 18 as graph code,
// exact at EP's fixed point, for any kernel), then runs EP at the chosen
// point ten times tighter (warm-started, a few sweeps) and installs its
// posterior as q(u) at Z = X, ρ's posterior mean in the likelihood and the
// outlier posteriors as the engine's state.
func fitMultiEP(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	o, err := newMultiObjective(ctx, m, train)
	if err != nil {
		return err
	}
	if len(o.params) > 0 {
		sp := svi.AsSolverParams(o.params)
		x0 := solvers.Flatten(sp)
		f := func(x, grad []float64) (float64, error) {
			if err := solvers.Unflatten(sp, x); err != nil {
				return 0, err
			}
			loss, g, err := o.Step(solvers.FullBatch(o.n))
			if err != nil {
				return 0, err
			}
			if cfg.Trace != nil {
				if err := o.setPosterior(); err != nil {
					return 0, err
				}
				if err := cfg.Trace(o.state.Evaluations, loss); err != nil {
					return 0, err
				}
			}
			return loss, solvers.FlattenGrads(grad, sp, g)
		}
		res, err := solvers.MinimizeLBFGS(ctx, f, x0, solvers.LBFGSSettings{
			MaxIterations: max(m.Opts.Train.Epochs, 1), GradTol: 1e-3,
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if res.Gradient == nil {
				return fmt.Errorf("models: EP evidence maximisation: %w", err)
			}
			o.state.Warning = err.Error()
			warn := cfg.Warnings
			if warn == nil {
				warn = os.Stderr
			}
			fmt.Fprintf(warn, "models: warning: the EP evidence search stopped at its best point: %v\n", err)
		}
		if err := solvers.Unflatten(sp, res.X); err != nil {
			return err
		}
	}
	// EP at the chosen hyper-parameters (the last evaluation may have been
	// a rejected trial point), converged ten times tighter than during the
	// search; the predictions and outlier posteriors come from it.
	res, err := o.run(o.tolerance() / 10)
	if err != nil && !errors.Is(err, ep.ErrNotConverged) {
		return fmt.Errorf("models: EP at the fitted hyper-parameters: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	o.state.LogZ, o.state.FinalSweeps, o.state.Converged, o.state.Negative = res.LogZ, res.Sweeps, res.Converged, res.Negative
	if o.ly.Robust {
		o.state.Outliers, o.state.A, o.state.B = res.Outliers(o.n), res.A, res.B
	}
	if cfg.Callback != nil {
		if err := cfg.Callback(Epoch{Epoch: 1, Loss: -res.LogZ, Steps: o.state.Evaluations, Iterations: o.state.Evaluations}); err != nil && !errors.Is(err, solvers.ErrStopTraining) {
			return err
		}
	}
	if err := o.setPosterior(); err != nil {
		return err
	}
	st := o.state
	m.SetEngineState(&st)
	return nil
}

// setPosterior installs the last EP posterior as q(u) at Z = X and ρ's
// posterior mean as the likelihood's outlier rate.
func (o *multiObjective) setPosterior() error {
	res, post := o.last, o.m.post
	for c := range post.Mean {
		copy(post.Mean[c].Data, res.Mean[c])
		if err := post.SetL(c, cholOf(res.Cov(c), o.n)); err != nil {
			return err
		}
	}
	if r, ok := o.lik.(OutlierRater); ok && o.ly.Robust {
		r.SetOutlierRate(res.Rho(), o.m.C)
	}
	return nil
}
