package models

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models/ep"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// maxEPRows bounds the training size of the dense EP engine (O(N²) memory,
// O(N³) time per sweep).
const maxEPRows = 20000

// fitEP fits a one-latent-function model by expectation propagation: the
// kernel hyper-parameters (and, for the sparse family, Z) maximise the EP
// evidence by L-BFGS, EP warm-starting from the previous sites at each
// evaluation; the converged EP posterior then becomes the model's q(u),
// so that prediction is the variational families' (for the full family
// q(u) = N(μ, Σ) at Z = X; for FITC q(u) = N(K_ZX A⁻¹μ̃, K_ZZ − K_ZX A⁻¹ K_XZ),
// A = K̃ + S̃⁻¹, which reproduces FITC-EP's predictive exactly).
func init() { mustRegisterEngine(epEngine{}) }

// epEngine is expectation propagation for one latent function (full EP, or
// EP on the FITC prior with the sparse family), its evidence maximised in
// the hyper-parameters by L-BFGS.
type epEngine struct{}

func (epEngine) Name() string { return "ep" }

func (epEngine) Supports(m *Model) error {
	if !inputs.IsPassthrough(m.inputs) {
		return fmt.Errorf("models: the ep engine works on the latent values at the observed inputs (inputs.Passthrough); the %s input model is not", m.inputs.Name())
	}
	if _, ok := m.lik.(ep.MultiTilted); ok {
		if _, one := m.lik.(ep.Tilted); !one && m.Opts.Posterior.Family != "full" {
			return fmt.Errorf("models: the ep engine runs multi-latent EP (the %s likelihood's ep.MultiTilted sites) on the full prior only; use the full posterior family, not %s", m.Opts.Likelihood.Name, m.Opts.Posterior.Family)
		}
		return nil
	}
	// Otherwise a site touches one latent function, its tilted moments from
	// the likelihood (ep.Tilted) or, for any other, by quadrature of its
	// log p(y|f). Without a fixed class count (likelihoods.ClassCounter)
	// the data decide, at Fit; a likelihood with several latent functions
	// for two classes is refused now.
	classes := 2
	if cc, ok := m.lik.(likelihoods.ClassCounter); ok {
		classes = cc.Classes()
	}
	if l := m.lik.Latent(classes); l != 1 {
		return fmt.Errorf("models: the ep engine's sites touch one latent function unless the likelihood has multi-latent sites (ep.MultiTilted); the %s likelihood has %d latent functions for %d classes and none", m.Opts.Likelihood.Name, l, classes)
	}
	return nil
}

func (epEngine) Fit(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	if multiLatent(m) {
		return fitMultiEP(ctx, m, train, cfg)
	}
	return fitEP(ctx, m, train, cfg)
}

// multiLatent reports whether a fit of m runs multi-latent EP: its
// likelihood has multi-latent sites and more than one latent function for
// the model's classes (one latent function with ep.Tilted takes the binary
// path).
func multiLatent(m *Model) bool {
	if _, ok := m.lik.(ep.MultiTilted); !ok {
		return false
	}
	_, one := m.lik.(ep.Tilted)
	return !one || m.lik.Latent(m.C) > 1
}

// FullBatch: every EP sweep visits every row.
func (epEngine) FullBatch(*Model) bool { return true }

// GradientOrders: the evidence is differentiated once.
func (epEngine) GradientOrders() []int { return []int{1} }

func (epEngine) CheckGradients(m *Model, ds *datasets.Dataset, order int, _ *rand.Rand) (graph.CheckReport, error) {
	if multiLatent(m) {
		return checkMultiEPGradients(m, ds, order)
	}
	return checkEPGradients(m, ds, order)
}

func fitEP(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	o, err := newEPObjective(m, train)
	if err != nil {
		return err
	}
	o.cfg.Context = ctx
	params := svi.AsSolverParams(o.params)
	tobj, err := withTrace(o, cfg, o.setPosterior)
	if err != nil {
		return err
	}
	if len(params) > 0 {
		t := m.Opts.Train
		var res solvers.Result
		res, err = solvers.TrainLBFGS(ctx, tobj, params, train.N, m.lbfgsSettings(t.Epochs, cfg, "log Z_EP"))
		if err = lbfgsStopped(err, cfg.Warnings); err != nil {
			return err
		}
		m.report = lbfgsReport(t.Stop, "EP log evidence", res, res.Iterations, t.Epochs, reportTol(t.Tolerance, DefaultLBFGSTol))
	}
	// EP at the final hyper-parameters, then its posterior as q(u).
	if _, _, err := o.Step(solvers.FullBatch(train.N)); err != nil {
		return err
	}
	if cfg.Callback != nil {
		if err := cfg.Callback(Epoch{Epoch: 1, Loss: -o.last.LogZ, Steps: o.evals, Iterations: o.evals}); err != nil && !errors.Is(err, solvers.ErrStopTraining) {
			return err
		}
	}
	return o.setPosterior()
}

// epObjective is minus the EP evidence as a function of the prior's
// parameters, for solvers.TrainLBFGS.
type epObjective struct {
	jitterOf
	m     *Model
	n     int
	y     []float64
	lik   ep.Tilted
	sites *ep.Sites
	cfg   ep.Config
	// The prior graph gives K̃ (and, for FITC, K_ZX and K_ZZ); the evidence
	// graph gives g(K̃) and its gradient.
	kScope, eScope *layers.Scope
	kProg, eProg   *graph.Program
	k              *G.Node
	// lam, v and lm are FITC's Λ, V = L_ZZ⁻¹K_ZX and L_ZZ (sparse family),
	// in place of the dense K̃; lr is the last LowRank prior.
	lam, v, lm *G.Node
	lr         ep.LowRank
	ev         *ep.Evidence
	params     []*layers.Param
	grads      G.Nodes
	gbuf       [][]float64
	last       *ep.Result
	kData      []float64
	evals      int
}

func newEPObjective(m *Model, train *datasets.Dataset) (*epObjective, error) {
	lik, err := tiltedFor(m)
	if err != nil {
		return nil, err
	}
	if m.post.Latent != 1 {
		return nil, fmt.Errorf("models: the EP engine handles one latent function; the %s likelihood has %d", m.Opts.Likelihood.Name, m.post.Latent)
	}
	if train.N > maxEPRows {
		return nil, fmt.Errorf("models: EP is dense (O(N³) per sweep); %d training rows exceed its limit of %d: use the svi engine", train.N, maxEPRows)
	}
	y, _ := m.lik.Targets(train.Y, m.C)
	e := m.Opts.EP
	o := &epObjective{jitterOf: jitterOf{m.post.JitterParam}, m: m, n: train.N, y: y, lik: lik, sites: ep.NewSites(train.N),
		cfg: ep.Config{Damping: e.Damping, Tol: e.Tol, MaxSweeps: e.MaxSweeps, Parallel: e.Parallel}}
	// Prior graph.
	kg := G.NewGraph()
	o.kScope = layers.NewScope(kg)
	var outs G.Nodes
	if m.Opts.Posterior.Family == "full" {
		if o.k, err = m.epPrior(o.kScope); err != nil {
			return nil, err
		}
		outs = G.Nodes{o.k}
	} else {
		if o.lam, o.v, o.lm, err = m.fitcPrior(o.kScope, train); err != nil {
			return nil, err
		}
		outs = G.Nodes{o.lam, o.v, o.lm}
	}
	if o.kProg, err = graph.Compile(kg, outs...); err != nil {
		return nil, err
	}
	// Evidence graph.
	eg := G.NewGraph()
	o.eScope = layers.NewScope(eg)
	if m.Opts.Posterior.Family == "full" {
		ke, err := m.epPrior(o.eScope)
		if err != nil {
			return nil, err
		}
		if o.ev, err = ep.NewEvidence(ke); err != nil {
			return nil, err
		}
	} else {
		lam, v, _, err := m.fitcPrior(o.eScope, train)
		if err != nil {
			return nil, err
		}
		if o.ev, err = ep.NewFITCEvidence(lam, v); err != nil {
			return nil, err
		}
	}
	// The kernels' hyper-parameters and Z; q(u) is EP's output, not trained.
	hyper, zs := m.freezeSets()
	var wrt G.Nodes
	o.params, wrt = o.eScope.TrainableAmong(append(slices.Collect(maps.Keys(hyper)), slices.Collect(maps.Keys(zs))...))
	if len(wrt) > 0 {
		if o.grads, err = graph.Grad(o.ev.Node, wrt...); err != nil {
			return nil, fmt.Errorf("models: differentiating the EP evidence: %w", err)
		}
	}
	if o.eProg, err = graph.Compile(eg, append(G.Nodes{o.ev.Node}, o.grads...)...); err != nil {
		return nil, err
	}
	for _, p := range o.params {
		o.gbuf = append(o.gbuf, make([]float64, len(p.Data)))
	}
	return o, nil
}

// epPrior builds the full family's EP prior covariance over the training
// latents: K_ZZ at Z = X.
func (m *Model) epPrior(s *layers.Scope) (*G.Node, error) {
	e := &graph.Chain{}
	z := e.Do(s.Raw(m.post.Z[0]))
	jit := e.Do(s.Node(m.post.JitterParam))
	k := e.Do(kernels.KZZ(m.kernels[0], s, z, jit))
	return k, e.Err
}

// fitcPrior builds FITC's prior over the training latents in low-rank
// form: λ = diag(K − Q), V = L_ZZ⁻¹K_ZX (Q = VᵀV) and L_ZZ, never the
// n×n matrix.
func (m *Model) fitcPrior(s *layers.Scope, train *datasets.Dataset) (lam, v, lm *G.Node, err error) {
	kern := m.kernels[0]
	e := &graph.Chain{}
	z := e.Do(s.Raw(m.post.Z[0]))
	jit := e.Do(s.Node(m.post.JitterParam))
	kzz := e.Do(kernels.KZZ(kern, s, z, jit))
	x := graph.Input(s.G, "ep/x", tensor.Shape{train.N, train.D}, append([]float64(nil), train.X...))
	kzx := e.Do(kern.K(s, z, x))
	lm = e.Do(graph.Cholesky(kzz))
	v = e.Do(graph.TriSolve(lm, kzx, true, false))
	qd := e.Do(G.Sum(e.Do(G.Square(v)), 0))
	kd := e.Do(kernels.KDiag(kern, s, x, jit))
	lam = e.Do(G.Sub(kd, qd))
	return lam, v, lm, e.Err
}

// Step implements solvers.Objective: −log Z_EP and its gradient at the
// current parameters (the batch is ignored: EP uses every row).
func (o *epObjective) Step(solvers.Batch) (float64, [][]float64, error) {
	o.evals++
	if err := o.kScope.Sync(); err != nil {
		return 0, nil, err
	}
	if err := o.kProg.Run(); err != nil {
		return 0, nil, err
	}
	res, err := o.runEP()
	if c := o.cfg.Context; c != nil && c.Err() != nil {
		return 0, nil, c.Err()
	}
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return 0, nil, err
	}
	if err != nil && !errors.Is(err, ep.ErrNotConverged) {
		// A failed factorisation leaves the sites unusable; restart them.
		o.sites = ep.NewSites(o.n)
		return 0, nil, fmt.Errorf("models: EP: %v: %w", err, solvers.ErrNotPositiveDefinite)
	}
	o.last = res
	o.ev.Set(o.sites)
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

// runEP runs EP, warm-started from the sites, on the prior just computed
// by kProg: dense for the full family, FITC's low-rank form otherwise.
func (o *epObjective) runEP() (*ep.Result, error) {
	res, err := o.runSites()
	if q, ok := o.lik.(*quadTilted); ok && q.Err() != nil {
		// The quadrature's graph failed; EP saw only NaN moments.
		return nil, q.Err()
	}
	return res, err
}

func (o *epObjective) runSites() (*ep.Result, error) {
	if o.k != nil {
		kd, err := o.kProg.Float64s(o.k)
		if err != nil {
			return nil, err
		}
		// EP and the evidence's sites only read K, so one copy serves both and
		// setPosterior.
		o.kData = append(o.kData[:0], kd...)
		return ep.Run(mat.NewSymDense(o.n, o.kData), o.y, o.lik, o.sites, o.cfg)
	}
	lam, err := o.kProg.Float64s(o.lam)
	if err != nil {
		return nil, err
	}
	vd, err := o.kProg.Float64s(o.v)
	if err != nil {
		return nil, err
	}
	// Round-off can make K − Q a hair negative where an input sits on
	// an inducing point; the prior's diagonal is non-negative.
	o.lr.Lambda = append(o.lr.Lambda[:0], lam...)
	for i, l := range o.lr.Lambda {
		if l < 0 && l > -1e-8 {
			o.lr.Lambda[i] = 0
		}
	}
	o.lr.V = mat.NewDense(len(vd)/o.n, o.n, append([]float64(nil), vd...))
	return ep.RunFITC(o.lr, o.y, o.lik, o.sites, o.cfg)
}

// setPosterior stores the last EP posterior as the model's q(u).
func (o *epObjective) setPosterior() error {
	res, post, n := o.last, o.m.post, o.n
	if o.k != nil {
		copy(post.Mean[0].Data, res.Mean)
		return post.SetL(0, cholOf(res.Cov, n))
	}
	// q(u) = N(L_ZZ a, L_ZZ C L_ZZᵀ) from FITC-EP's posterior N(a, C) over
	// L_ZZ⁻¹u.
	a, C, err := ep.InducingPosterior(o.lr, o.sites)
	if err != nil {
		return fmt.Errorf("models: EP-FITC: %w", err)
	}
	lmD, err := o.kProg.Float64s(o.lm)
	if err != nil {
		return err
	}
	M := post.M
	Lm := mat.NewDense(M, M, append([]float64(nil), lmD...))
	var mu mat.VecDense
	mu.MulVec(Lm, mat.NewVecDense(M, a))
	copy(post.Mean[0].Data, mu.RawVector().Data)
	var t, S mat.Dense
	t.Mul(Lm, C)
	S.Mul(&t, Lm.T())
	Ssym := mat.NewSymDense(M, nil)
	for i := 0; i < M; i++ {
		for j := i; j < M; j++ {
			Ssym.SetSym(i, j, (S.At(i, j)+S.At(j, i))/2)
		}
	}
	return post.SetL(0, cholOf(Ssym, M))
}

// cholOf returns the lower Cholesky factor of a covariance (row-major),
// adding the smallest diagonal jitter that makes it factorise: a posterior
// covariance can be singular to round-off where the data pin f down.
func cholOf(S *mat.SymDense, n int) []float64 {
	jit := 0.0
	for {
		A := mat.NewSymDense(n, nil)
		A.CopySym(S)
		for i := 0; i < n; i++ {
			A.SetSym(i, i, A.At(i, i)+jit)
		}
		var ch mat.Cholesky
		if ch.Factorize(A) {
			L := mat.NewTriDense(n, mat.Lower, nil)
			ch.LTo(L)
			out := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					out[i*n+j] = L.At(i, j)
				}
			}
			return out
		}
		jit = math.Max(10*jit, 1e-12)
	}
}

// jitterOf implements solvers.Jitterer on a posterior's jitter parameter,
// for the full-batch engines.
type jitterOf struct{ p *layers.Param }

// Jitter implements solvers.Jitterer.
func (j jitterOf) Jitter() float64 { return j.p.Data[0] }

// SetJitter implements solvers.Jitterer.
func (j jitterOf) SetJitter(v float64) error {
	if !(v > 0) {
		return errors.New("models: jitter must be positive")
	}
	j.p.Data[0] = v
	return nil
}
