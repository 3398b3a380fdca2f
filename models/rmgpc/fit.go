package rmgpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/solvers"
)

// Model is a fitted RMGPC (or SMGPC) classifier.
type Model struct {
	// Config is the configuration the model was fitted with (defaults
	// filled in).
	Config Config
	// D inputs, C classes, N training rows.
	D, C, N int
	// X holds the training inputs as the kernel sees them (standardised
	// unless Config.NoStandardize), row-major N×D; Y their labels.
	X []float64
	Y []int
	// Shift and Scale standardise an input column by column,
	// (x − Shift)/Scale, before the kernel sees it; nil with NoStandardize.
	Shift, Scale []float64
	// Sites are the converged EP sites; Post the EP posterior at them.
	Sites *Sites
	Post  *Posterior
	// Fit records the hyper-parameter search.
	Fit FitInfo

	kernel kernels.Kernel
	noise  []*layers.Param // ϑ_k² (SMGPC); nil for RMGPC
	custom bool
}

// FitInfo summarises Fit's evidence maximisation.
type FitInfo struct {
	// Evaluations of the evidence (EP runs), L-BFGS iterations and the
	// L-BFGS status (empty with FixHyper).
	Evaluations, Iterations int
	Status                  string
	// Sweeps is the total number of EP sweeps over all evaluations.
	Sweeps int
	// Warning is set when L-BFGS stopped on an error (a failed line search,
	// or EP failing at a trial point); the model is then the best point
	// reached.
	Warning string
	// Runtime is Fit's wall time.
	Runtime time.Duration
}

// LogZ returns the EP evidence log Z_EP at the fitted hyper-parameters.
func (m *Model) LogZ() float64 { return m.Post.LogZ }

// Rho returns the posterior mean outlier rate a/(a+b) (0 for SMGPC).
func (m *Model) Rho() float64 { return m.Post.Rho() }

// Outliers returns P(z_i = 1 | y, X) for every training row, in the
// training order (eq. 21); zeros for SMGPC, which has no outlier
// indicators.
func (m *Model) Outliers() []float64 { return m.Post.Outliers() }

// Hyper returns the kernel's and the latent noise's hyper-parameters by
// parameter name, as constrained values (γ, σ², ϑ_k², not their logs).
func (m *Model) Hyper() map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range m.params() {
		v := make([]float64, len(p.Data))
		for i := range v {
			v[i] = p.Value(i)
		}
		out[p.Name] = v
	}
	return out
}

func (m *Model) params() []*layers.Param {
	return append(append([]*layers.Param(nil), m.kernel.Params()...), m.noise...)
}

// Fit fits the model to train (labels 0..C−1, C = train.C ≥ 2): the kernel
// hyper-parameters (log γ, with FitVariance log σ², under SMGPC log ϑ_k²)
// maximise the EP evidence by L-BFGS, EP warm-starting from the previous
// sites at every evaluation, and the model keeps EP's posterior at the
// optimum. The evidence gradient is the graph gradient described at
// evidenceGraph, exact at EP's fixed point.
func Fit(ctx context.Context, train *datasets.Dataset, cfg Config) (*Model, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkData(train); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, D: train.D, C: train.C, N: train.N, Y: append([]int(nil), train.Y...)}
	m.X = append([]float64(nil), train.X...)
	if !cfg.NoStandardize {
		sc := datasets.FitScaler(train)
		m.Shift, m.Scale = sc.Mean, sc.Scale
		m.standardize(m.X, m.N)
	}
	if err := m.initParams(); err != nil {
		return nil, err
	}
	f, err := newFitter(m)
	if err != nil {
		return nil, err
	}
	if err := f.fit(ctx); err != nil {
		return nil, err
	}
	m.Fit.Runtime = time.Since(start)
	return m, nil
}

func checkData(d *datasets.Dataset) error {
	switch {
	case d == nil || d.N < 1 || d.D < 1:
		return errors.New("rmgpc: empty training set")
	case d.C < 2:
		return fmt.Errorf("rmgpc: %d classes; need at least 2", d.C)
	case len(d.X) != d.N*d.D || len(d.Y) != d.N:
		return fmt.Errorf("rmgpc: %d inputs and %d labels for %d×%d", len(d.X), len(d.Y), d.N, d.D)
	}
	for i, y := range d.Y {
		if y < 0 || y >= d.C {
			return fmt.Errorf("rmgpc: label %d of row %d outside 0..%d", y, i, d.C-1)
		}
	}
	for i, x := range d.X {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("rmgpc: input %d of row %d is %v", i%d.D, i/d.D, x)
		}
	}
	return nil
}

// initParams builds the kernel and the SMGPC noise parameters from Config.
func (m *Model) initParams() error {
	cfg := m.Config
	switch {
	case cfg.Kernel != nil:
		m.kernel, m.custom = cfg.Kernel, true
	case cfg.ARD:
		se := kernels.NewSE("rmgpc/se", m.D, cfg.Lengthscale, cfg.Variance, 0)
		se.Variance.Fixed = !cfg.FitVariance
		m.kernel = se
	default:
		se := newIsoSE(cfg.Lengthscale, cfg.Variance)
		se.Variance.Fixed = !cfg.FitVariance
		m.kernel = se
	}
	m.noise = nil
	if cfg.SMGPC {
		for k := 0; k < m.C; k++ {
			m.noise = append(m.noise, layers.NewParam(fmt.Sprintf("rmgpc/noise%d", k), tensor.ScalarShape(), cfg.Noise, layers.Exp))
		}
	}
	return nil
}

func (m *Model) standardize(x []float64, n int) {
	if m.Shift == nil {
		return
	}
	for i := 0; i < n; i++ {
		row := x[i*m.D : (i+1)*m.D]
		for j := range row {
			row[j] = (row[j] - m.Shift[j]) / m.Scale[j]
		}
	}
}

// fitter evaluates the EP evidence and its gradient at the parameters'
// current values.
type fitter struct {
	m       *Model
	kScope  *layers.Scope
	kProg   *graph.Program
	kNodes  []*G.Node
	eg      *evidenceGraph
	train   []*layers.Param
	kBuf    map[*G.Node]*mat.SymDense
	lastErr error
	// unconverged counts the evidence evaluations whose EP ran out of
	// sweeps (see maxUnconverged).
	unconverged int
}

// maxUnconverged is how many evidence evaluations may end without EP
// converging before the hyper-parameter search stops at its best point. An
// EP that oscillates costs MaxSweeps sweeps per evaluation and gives a noisy
// evidence, so without a bound a search of MaxIterations steps at such
// hyper-parameters ran for tens of minutes on a 143-row problem.
const maxUnconverged = 3

func newFitter(m *Model) (*fitter, error) {
	f := &fitter{m: m, kBuf: map[*G.Node]*mat.SymDense{}}
	g := G.NewGraph()
	f.kScope = layers.NewScope(g)
	var err error
	if f.kNodes, err = priorNodes(f.kScope, m.kernel, m.X, m.N, m.D, m.C, m.noise, m.Config.Jitter); err != nil {
		return nil, err
	}
	var outs G.Nodes
	for _, n := range f.kNodes {
		if _, ok := f.kBuf[n]; !ok {
			f.kBuf[n] = nil
			outs = append(outs, n)
		}
	}
	if f.kProg, err = graph.Compile(g, outs...); err != nil {
		return nil, err
	}
	if !m.Config.FixHyper {
		for _, p := range m.params() {
			if !p.Fixed {
				f.train = append(f.train, p)
			}
		}
	}
	if f.eg, err = newEvidenceGraph(m.kernel, m.X, m.N, m.D, m.C, m.noise, m.Config.Jitter, f.train); err != nil {
		return nil, err
	}
	f.train = f.eg.params
	return f, nil
}

// prior evaluates K_1..K_l at the current parameters.
func (f *fitter) prior() (*prior, error) {
	if err := f.kScope.Sync(); err != nil {
		return nil, err
	}
	if err := f.kProg.Run(); err != nil {
		return nil, err
	}
	n := f.m.N
	for node := range f.kBuf {
		d, err := f.kProg.Float64s(node)
		if err != nil {
			return nil, err
		}
		f.kBuf[node] = mat.NewSymDense(n, d)
	}
	ks := make([]*mat.SymDense, len(f.kNodes))
	for k, node := range f.kNodes {
		ks[k] = f.kBuf[node]
	}
	return newPrior(ks)
}

// ep runs EP warm-started from the model's sites. A run that fails (an
// improper posterior or an invalid cavity, which a large jump of the
// hyper-parameters can cause from sites fitted elsewhere) is retried once
// from uniform sites.
// ep runs EP at the current hyper-parameters. A run that ends without
// converging still gives a valid posterior and an evidence; the error is
// returned only once maxUnconverged evaluations have ended so, which stops
// the search.
func (f *fitter) ep() (*Posterior, error) {
	post, err := f.epTol(f.m.Config.Tol)
	if err != nil && !errors.Is(err, ErrNotConverged) {
		return nil, err
	}
	if err != nil && f.unconverged >= maxUnconverged {
		return nil, fmt.Errorf("%w at %d evidence evaluations: hyper-parameter search stopped at its best point", err, f.unconverged)
	}
	return post, nil
}

func (f *fitter) epTol(tol float64) (*Posterior, error) {
	m := f.m
	cfg := m.Config
	cfg.Tol = tol
	pr, err := f.prior()
	if err != nil {
		return nil, err
	}
	if m.Sites == nil {
		m.Sites = NewSites(m.N, m.C, m.Config)
	}
	post, err := runEP(pr, m.Y, m.Sites, cfg)
	m.Fit.Evaluations++
	if post != nil {
		m.Fit.Sweeps += post.Sweeps
	}
	if err != nil && !errors.Is(err, ErrNotConverged) {
		m.Sites = NewSites(m.N, m.C, m.Config)
		post, err = runEP(pr, m.Y, m.Sites, cfg)
		if post != nil {
			m.Fit.Sweeps += post.Sweeps
		}
	}
	if err != nil && !errors.Is(err, ErrNotConverged) {
		m.Sites = nil
		return nil, err
	}
	if err != nil {
		f.unconverged++
	}
	m.Post = post
	return post, err
}

func (f *fitter) pack() []float64 {
	var x []float64
	for _, p := range f.train {
		x = append(x, p.Data...)
	}
	return x
}

func (f *fitter) unpack(x []float64) {
	for _, p := range f.train {
		x = x[copy(p.Data, x):]
	}
}

// objective is −log Z_EP and its gradient in the parameters' raw (log)
// storage.
func (f *fitter) objective(x, grad []float64) (float64, error) {
	f.unpack(x)
	post, err := f.ep()
	if err != nil {
		return 0, err
	}
	_, g, err := f.eg.gradient(f.m.Sites, f.m.Y)
	if err != nil {
		return 0, err
	}
	off := 0
	for _, gi := range g {
		for _, v := range gi {
			grad[off] = -v
			off++
		}
	}
	return -post.LogZ, nil
}

func (f *fitter) fit(ctx context.Context) error {
	m := f.m
	if len(f.train) > 0 {
		res, err := solvers.MinimizeLBFGS(ctx, f.objective, f.pack(), solvers.LBFGSSettings{
			MaxIterations: m.Config.MaxIterations,
			GradTol:       m.Config.GradTol,
			Progress:      m.Config.Progress, ProgressName: "log Z_EP",
		})
		m.Fit.Iterations, m.Fit.Status = res.Iterations, string(res.Status)
		if err != nil {
			if ctx.Err() != nil || res.Gradient == nil {
				return fmt.Errorf("rmgpc: evidence maximisation: %w", err)
			}
			m.Fit.Warning = err.Error()
		}
		f.unpack(res.X)
	}
	// EP at the chosen hyper-parameters (the last evaluation may have been
	// a rejected trial point), converged ten times tighter than during the
	// search: warm-started, that costs a few sweeps, and the predictions
	// and outlier probabilities come from this posterior.
	if _, err := f.epTol(m.Config.Tol / 10); err != nil && !errors.Is(err, ErrNotConverged) {
		return fmt.Errorf("rmgpc: EP at the fitted hyper-parameters: %w", err)
	}
	return nil
}
