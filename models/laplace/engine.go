// Package laplace is the Laplace-approximation engine of gpc: for any
// composition with observed (passthrough) inputs and the "full" posterior
// family (Z = X), and any likelihood whose log p(y | f) is graph code
// (likelihoods.LogLik: a Pointwise likelihood's own, else its expected
// log-likelihood at zero variance), it finds the mode of
// log p(y | f) + log p(f) by damped Newton, with the gradient and the
// per-row L×L Hessian blocks of log p(y | f) from the project's automatic
// differentiation, and maximises the Laplace evidence over the kernels' and
// the likelihood's parameters by L-BFGS with its exact gradient (the mode's
// dependence included: R&W §3.4, §3.5 and §5.5.1). The Gaussian at the
// final mode becomes the model's q(f), so prediction, saving and scoring
// are the framework's.
//
// Importing the package registers the engine as "laplace" and the preset
// "htpc" (the heavy-tailed process classifier: the htpc likelihood under
// this engine with the isotropic SE kernel at unit amplitude).
package laplace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// Settings control the engine; zero fields take the defaults listed.
type Settings struct {
	// NewtonTol is the mode search's convergence threshold on max |∇Ψ| in
	// whitened coordinates (default 1e-9).
	NewtonTol float64
	// MaxNewton caps the Newton iterations per mode search (default 100).
	MaxNewton int
	// MinCurvature is the smallest eigenvalue of the whitened posterior
	// precision A = I + LᵀWL accepted during the evidence maximisation
	// (default 0.1; negative disables). For a likelihood that is not
	// log-concave (HTPC's), where the mode is about to merge with a saddle
	// A turns singular and −½ log|A| grows without bound, so the optimiser
	// would climb into such folds; evaluations below the threshold are
	// penalised like failures. A log-concave likelihood has A ⪰ I.
	MinCurvature float64
	// GradTol stops L-BFGS once every |∂E/∂θ_raw| is below it (default 1e-4).
	GradTol float64
	// FuncTol is L-BFGS's relative decrease test (default 1e-10).
	FuncTol float64
	// MaxRaw bounds how far the raw value of every log-scale (Exp)
	// parameter may move from where the fit started for an evaluation to
	// be attempted (default 16, a factor e¹⁶): far out, kernel matrices and
	// transforms lose all precision, and a penalty sends the optimiser back.
	MaxRaw float64
}

func (s Settings) withDefaults() Settings {
	if s.NewtonTol == 0 {
		s.NewtonTol = 1e-9
	}
	if s.MaxNewton == 0 {
		s.MaxNewton = 100
	}
	if s.MinCurvature == 0 {
		s.MinCurvature = 0.1
	}
	if s.GradTol == 0 {
		s.GradTol = 1e-4
	}
	if s.FuncTol == 0 {
		s.FuncTol = 1e-10
	}
	if s.MaxRaw == 0 {
		s.MaxRaw = 16
	}
	return s
}

// Engine is the Laplace engine. The zero value has the default Settings;
// another configuration can be registered under another Name.
type Engine struct {
	// EngineName is the registered name ("laplace" when empty).
	EngineName string
	Settings   Settings
}

func init() {
	if err := models.RegisterEngine(Engine{}); err != nil {
		panic(err)
	}
	registerHTPC()
}

// Name implements models.Engine.
func (e Engine) Name() string {
	if e.EngineName == "" {
		return "laplace"
	}
	return e.EngineName
}

// Supports implements models.Engine: the engine works on the latent values
// at the observed inputs (inputs.Passthrough) with the full family's Z = X.
func (e Engine) Supports(m *models.Model) error {
	if !inputs.IsPassthrough(m.Inputs()) {
		return fmt.Errorf("laplace: the %s engine works on the latent values at the observed inputs (inputs.Passthrough); the %s input model is not", e.Name(), m.Inputs().Name())
	}
	if m.Opts.Posterior.Family != "full" {
		return fmt.Errorf("laplace: the %s engine needs the full posterior family (Z = X), not %q", e.Name(), m.Opts.Posterior.Family)
	}
	return nil
}

// FullBatch implements models.FullBatcher: every evaluation reads every row.
func (Engine) FullBatch(*models.Model) bool { return true }

// GradientOrders implements models.GradientChecker: the evidence's gradient.
func (Engine) GradientOrders() []int { return []int{1} }

// maxLatent bounds n·L, the size of the dense Newton system (nL×nL, some
// 300 MB at the bound) and of the posterior covariance.
const maxLatent = 6000

// objective is minus the Laplace evidence of a model's parameters, for
// solvers.TrainLBFGS.
type objective struct {
	ctx    context.Context
	m      *models.Model
	p      *problem
	set    Settings
	params []*layers.Param // kernel parameters, then the likelihood's
	kIdx   []int           // params index of each kernel-graph parameter
	lIdx   []int           // params index of each likelihood-graph parameter
	gbuf   [][]float64
	start  [][]float64 // the parameters' raw values when the fit began
	warm   []float64
	last   *mode
	evals  int
	fails  int
	best   struct {
		e    float64
		data [][]float64
		v    []float64
	}
	progress func(eval int, e float64, m *mode, err error)
	trace    func(eval int, loss float64) error
}

func newObjective(ctx context.Context, m *models.Model, train *datasets.Dataset, set Settings) (*objective, error) {
	post := m.Posterior()
	if post == nil || len(m.Kernels()) == 0 {
		return nil, errors.New("laplace: the model is not initialised")
	}
	lik := m.Likelihood()
	l := lik.Latent(m.C)
	if train.N*l > maxLatent {
		return nil, fmt.Errorf("laplace: the Laplace engine is dense (an nL×nL Newton system): %d rows × %d latent functions exceed its limit of %d latent values; use the svi engine", train.N, l, maxLatent)
	}
	if l != len(m.Kernels()) || l != post.Latent {
		return nil, fmt.Errorf("laplace: %d latent functions, %d kernels and a posterior over %d", l, len(m.Kernels()), post.Latent)
	}
	y, width := lik.Targets(train.Y, m.C)
	lg, err := newLikGraph(lik, y, width, train.N, l)
	if err != nil {
		return nil, err
	}
	kg, err := newKernGraph(post, m.Kernels(), train.N)
	if err != nil {
		lg.close()
		return nil, err
	}
	o := &objective{ctx: ctx, m: m, set: set, p: &problem{n: train.N, l: l, lik: lg, kern: kg, set: set}}
	o.best.e = math.Inf(-1)
	index := map[*layers.Param]int{}
	for _, p := range kg.hyper {
		index[p] = len(o.params)
		o.kIdx = append(o.kIdx, len(o.params))
		o.params = append(o.params, p)
	}
	for _, p := range lg.beta {
		if i, ok := index[p]; ok { // a parameter shared by kernel and likelihood
			o.lIdx = append(o.lIdx, i)
			continue
		}
		o.lIdx = append(o.lIdx, len(o.params))
		o.params = append(o.params, p)
	}
	for _, p := range o.params {
		o.gbuf = append(o.gbuf, make([]float64, len(p.Data)))
		o.start = append(o.start, append([]float64(nil), p.Data...))
	}
	return o, nil
}

func (o *objective) close() {
	o.p.lik.close()
	o.p.kern.close()
}

// Jitter implements solvers.Jitterer on the posterior's jitter, which the
// prior covariances include.
func (o *objective) Jitter() float64 { return o.m.Posterior().JitterParam.Data[0] }

// SetJitter implements solvers.Jitterer.
func (o *objective) SetJitter(v float64) error {
	if !(v > 0) {
		return errors.New("laplace: jitter must be positive")
	}
	o.m.Posterior().JitterParam.Data[0] = v
	return nil
}

// sane reports whether every log-scale parameter is within MaxRaw of its
// starting value.
func (o *objective) sane() bool {
	for i, p := range o.params {
		if p.Transform != layers.Exp {
			continue
		}
		for t, v := range p.Data {
			if !(math.Abs(v-o.start[i][t]) <= o.set.MaxRaw) {
				return false
			}
		}
	}
	return true
}

// evaluate computes the Laplace approximation and the evidence gradient at
// the current parameters.
func (o *objective) evaluate() (*mode, gradient, error) {
	if !o.sane() {
		return nil, gradient{}, errors.New("a log-scale parameter is outside the sane region")
	}
	L, err := o.p.factors()
	if err != nil {
		return nil, gradient{}, err
	}
	if err := o.p.lik.sync(); err != nil {
		return nil, gradient{}, err
	}
	m, err := o.p.findMode(o.ctx, L, o.warm)
	if err != nil && o.warm != nil && o.ctx.Err() == nil {
		m, err = o.p.findMode(o.ctx, L, nil) // a far warm start can stall
	}
	if err != nil {
		return nil, gradient{}, err
	}
	if o.set.MinCurvature > 0 && m.minEig < o.set.MinCurvature {
		return nil, gradient{}, fmt.Errorf("degenerate Laplace approximation: λ_min(A) = %.3g < %g", m.minEig, o.set.MinCurvature)
	}
	g, err := o.p.evidenceGrad(m)
	if err != nil {
		return nil, gradient{}, err
	}
	return m, g, nil
}

// Step implements solvers.Objective: −E and its gradient. A failed Laplace
// approximation (no mode, a fold, an insane parameter) returns a penalty
// above every evidence seen with a zero gradient, which sends the line
// search back; a kernel matrix that does not factorise is reported as
// solvers.ErrNotPositiveDefinite, which raises the jitter.
func (o *objective) Step(solvers.Batch) (float64, [][]float64, error) {
	o.evals++
	m, g, err := o.evaluate()
	if err != nil {
		if cerr := o.ctx.Err(); cerr != nil {
			return 0, nil, cerr
		}
		if errors.Is(err, solvers.ErrNotPositiveDefinite) || errors.Is(err, errNoDerivatives) {
			return 0, nil, err
		}
		o.fails++
		if o.progress != nil {
			o.progress(o.evals, math.NaN(), nil, err)
		}
		pen := 1e3
		if !math.IsInf(o.best.e, 0) {
			pen += math.Abs(o.best.e)
		}
		for _, b := range o.gbuf {
			clear(b)
		}
		return pen, o.gbuf, nil
	}
	o.last, o.warm = m, m.V
	if m.evidence > o.best.e {
		o.best.e = m.evidence
		o.best.v = append([]float64(nil), m.V...)
		o.best.data = o.best.data[:0]
		for _, p := range o.params {
			o.best.data = append(o.best.data, append([]float64(nil), p.Data...))
		}
	}
	for _, b := range o.gbuf {
		clear(b)
	}
	for j, i := range o.kIdx {
		for t, v := range g.kernel[j] {
			o.gbuf[i][t] -= v
		}
	}
	for j, i := range o.lIdx {
		for t, v := range g.lik[j] {
			o.gbuf[i][t] -= v
		}
	}
	if o.progress != nil {
		o.progress(o.evals, m.evidence, m, nil)
	}
	if o.trace != nil {
		// The caller scores the model along the optimisation (FitConfig.Trace).
		if err := o.install(m); err != nil {
			return 0, nil, err
		}
		if err := o.trace(o.evals, -m.evidence); err != nil {
			return 0, nil, err
		}
	}
	return -m.evidence, o.gbuf, nil
}

// Fit implements models.Engine: L-BFGS on the Laplace evidence (at most
// Train.Epochs iterations and twice as many evaluations, FitConfig's
// MaxIterations if smaller), Newton warm-started from the previous mode at
// each evaluation; the best evaluated point is kept, and the Gaussian at
// its mode becomes q(f). FitConfig.Progress gets a line per evaluation,
// FitConfig.Trace is called after each successful one with q(f) set to its
// Laplace approximation, and Callback once at the end.
func (e Engine) Fit(ctx context.Context, m *models.Model, train *datasets.Dataset, cfg models.FitConfig) error {
	set := e.Settings.withDefaults()
	start := time.Now()
	o, err := newObjective(ctx, m, train, set)
	if err != nil {
		return err
	}
	defer o.close()
	if cfg.Progress != nil {
		o.progress = func(eval int, ev float64, md *mode, err error) {
			if err != nil {
				fmt.Fprintf(cfg.Progress, "laplace: evaluation %d failed (%v); penalised  %.1fs\n", eval, err, time.Since(start).Seconds())
				return
			}
			fmt.Fprintf(cfg.Progress, "laplace: evaluation %d  log evidence %.6f  Newton %d  λmin(A) %.3g  %.1fs\n", eval, ev, md.iters, md.minEig, time.Since(start).Seconds())
		}
	}
	o.trace = cfg.Trace
	iters := m.Opts.Train.Epochs
	if cfg.MaxIterations > 0 && cfg.MaxIterations < iters {
		iters = cfg.MaxIterations
	}
	var res solvers.Result
	if len(o.params) > 0 {
		res, err = solvers.TrainLBFGS(ctx, o, svi.AsSolverParams(o.params), train.N, solvers.LBFGSSettings{
			MaxIterations: iters, MaxEvaluations: 2 * iters,
			GradTol: set.GradTol, FuncTol: set.FuncTol, Warnings: cfg.Warnings,
		})
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil && !errors.Is(err, solvers.ErrLineSearch) && !errors.Is(err, solvers.ErrTrialFailed) && !errors.Is(err, solvers.ErrNonFinite) {
			return fmt.Errorf("laplace: evidence maximisation: %w", err)
		}
		if math.IsInf(o.best.e, 0) {
			return errors.New("laplace: the Laplace approximation failed at every evaluated parameter setting")
		}
		// The best evaluated point, which a line search's last trial need not be.
		for i, p := range o.params {
			copy(p.Data, o.best.data[i])
		}
		o.warm = o.best.v
	}
	md, _, err := o.evaluate()
	if err != nil {
		return fmt.Errorf("laplace: the Laplace approximation at the fitted parameters: %w", err)
	}
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "laplace: done: log evidence %.6f after %d evaluations (%d failed), %d L-BFGS iterations (%s), %.1fs\n",
			md.evidence, o.evals, o.fails, res.Iterations, res.Status, time.Since(start).Seconds())
	}
	if err := o.install(md); err != nil {
		return err
	}
	if cfg.Callback != nil {
		if err := cfg.Callback(models.Epoch{Epoch: 1, Loss: -md.evidence, Steps: o.evals, Iterations: res.Iterations}); err != nil && !errors.Is(err, solvers.ErrStopTraining) {
			return err
		}
	}
	return nil
}

// install makes the Gaussian at the mode the model's q(f): N(f̂_c, Σ_cc) per
// latent function (or, for a whitened family, N(v̂_c, (A⁻¹)_cc) over
// v_c = L_c⁻¹f_c). The cross-covariances between latent functions, which the
// family does not hold, are dropped: prediction uses each function's
// marginals.
func (o *objective) install(md *mode) error {
	post := o.m.Posterior()
	n, l := o.p.n, o.p.l
	var cov *mat.Dense
	if post.Whitened {
		sym := mat.NewSymDense(n*l, nil)
		if err := md.chA.InverseTo(sym); err != nil {
			return fmt.Errorf("laplace: inverting the posterior precision: %w", err)
		}
		cov = mat.DenseCopyOf(sym)
	} else {
		cov = o.p.posteriorCov(md)
	}
	o.keepState(cov)
	for c := range l {
		mean := post.Mean[c].Data
		src := md.F
		if post.Whitened {
			src = md.V
		}
		for i := range n {
			mean[i] = src[i*l+c]
		}
		blk := mat.NewSymDense(n, nil)
		for i := range n {
			for j := i; j < n; j++ {
				blk.SetSym(i, j, 0.5*(cov.At(c*n+i, c*n+j)+cov.At(c*n+j, c*n+i)))
			}
		}
		if err := post.SetL(c, cholOf(blk, n)); err != nil {
			return err
		}
	}
	return nil
}

// cholOf returns the lower Cholesky factor (row-major) of S, adding the
// smallest diagonal jitter that makes it factorise: a posterior covariance
// can be singular to round-off where the data pin f down.
func cholOf(S *mat.SymDense, n int) []float64 {
	jit := 0.0
	for {
		A := mat.NewSymDense(n, nil)
		A.CopySym(S)
		for i := range n {
			A.SetSym(i, i, A.At(i, i)+jit)
		}
		var ch mat.Cholesky
		if ch.Factorize(A) {
			var L mat.TriDense
			ch.LTo(&L)
			out := make([]float64, n*n)
			for i := range n {
				for j := 0; j <= i; j++ {
					out[i*n+j] = L.At(i, j)
				}
			}
			return out
		}
		jit = math.Max(10*jit, 1e-12)
	}
}

// CheckGradients implements models.GradientChecker: the evidence's
// gradient in every trainable kernel and likelihood parameter against
// Richardson-extrapolated central differences of the evidence, each
// evaluation re-finding the mode to a tight tolerance (so the check covers
// the mode's dependence on the parameters).
func (e Engine) CheckGradients(m *models.Model, ds *datasets.Dataset, order int, _ *rand.Rand) (graph.CheckReport, error) {
	if order != 1 {
		return graph.CheckReport{}, fmt.Errorf("laplace: the evidence has only a first-order gradient check, not order %d", order)
	}
	set := e.Settings.withDefaults()
	set.NewtonTol, set.MinCurvature, set.MaxRaw = 1e-12, -1, math.Inf(1)
	o, err := newObjective(context.Background(), m, ds, set)
	if err != nil {
		return graph.CheckReport{}, err
	}
	defer o.close()
	eval := func() (float64, error) {
		o.warm = nil
		md, _, err := o.evaluate()
		if err != nil {
			return 0, err
		}
		return md.evidence, nil
	}
	o.warm = nil
	_, g, err := o.evaluate()
	if err != nil {
		return graph.CheckReport{}, err
	}
	ana := make([][]float64, len(o.params))
	for i, p := range o.params {
		ana[i] = make([]float64, len(p.Data))
	}
	for j, i := range o.kIdx {
		for t, v := range g.kernel[j] {
			ana[i][t] += v
		}
	}
	for j, i := range o.lIdx {
		for t, v := range g.lik[j] {
			ana[i][t] += v
		}
	}
	var rep graph.CheckReport
	for i, p := range o.params {
		pe := graph.ParamError{Name: p.Name}
		for t := range p.Data {
			old := p.Data[t]
			central := func(h float64) (float64, error) {
				p.Data[t] = old + h
				fp, err := eval()
				if err == nil {
					p.Data[t] = old - h
					var fm float64
					fm, err = eval()
					fp = (fp - fm) / (2 * h)
				}
				p.Data[t] = old
				return fp, err
			}
			d1, err := central(1e-4)
			if err != nil {
				return rep, err
			}
			d2, err := central(5e-5)
			if err != nil {
				return rep, err
			}
			pe.Index = append(pe.Index, t)
			pe.Numeric = append(pe.Numeric, (4*d2-d1)/3)
			pe.Analytic = append(pe.Analytic, ana[i][t])
		}
		var diff, scale float64
		for k := range pe.Numeric {
			diff = math.Max(diff, math.Abs(pe.Numeric[k]-pe.Analytic[k]))
			scale = math.Max(scale, math.Max(math.Abs(pe.Numeric[k]), math.Abs(pe.Analytic[k])))
		}
		pe.RelErr = diff / math.Max(scale, 1e-12)
		if math.IsNaN(diff) {
			pe.RelErr = math.NaN()
		}
		rep.Params = append(rep.Params, pe)
		rep.MaxRelErr = math.Max(rep.MaxRelErr, pe.RelErr)
		if math.IsNaN(pe.RelErr) {
			rep.MaxRelErr = math.NaN()
		}
	}
	return rep, nil
}
