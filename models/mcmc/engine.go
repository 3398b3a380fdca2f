// Package mcmc is a Markov-chain Monte Carlo engine for gpc's models: the
// gold standard beside which the approximate engines (svi, ep, mf and
// whatever else is registered) can be judged. It samples the latent values
// f at the training inputs by elliptical slice sampling (Murray, Adams &
// MacKay 2010) in the whitened parameterisation f_c = L_c ν_c, for any
// likelihood whose log p(y|f) is graph code (likelihoods.LogLik: the
// built-ins and a user's), binary or multi-class; the kernel and likelihood
// hyper-parameters are held at a point or slice-sampled too (Murray &
// Adams 2010). Several chains run side by side, each on its own seeded
// stream; split-R̂ and the bulk effective sample size (Vehtari et al.
// 2021) are reported, and predictions average p(y*|x*, f) over the draws.
//
// Importing the package registers the engine as "mcmc": a model with
// Options.Inference "mcmc" (and the "full" posterior family) fits by it.
// Its settings are Options.Settings under "mcmc." (see Config).
package mcmc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/models"
)

func init() {
	if err := models.RegisterEngine(Engine{}); err != nil {
		panic(err)
	}
}

// Engine is the MCMC engine; it implements models.Engine and the
// capabilities Predictor (predictions average over the draws, each with
// its own hyper-parameters when they are sampled), Stateful (the draws and
// diagnostics are saved with the model) and Checkpointer (a run resumes
// from its checkpoint file with the same draws as an uninterrupted one).
type Engine struct{}

var (
	_ models.Predictor    = Engine{}
	_ models.Stateful     = Engine{}
	_ models.Checkpointer = Engine{}
	_ models.Reporter     = Engine{}
)

// Name implements models.Engine.
func (Engine) Name() string { return Name }

// Supports implements models.Engine: the sampler works on the latent
// values at the observed training inputs, so it needs the "full" family
// (Z = X) and inputs used as given; its settings must parse.
func (Engine) Supports(m *models.Model) error {
	if _, err := ConfigOf(m.Opts); err != nil {
		return err
	}
	if m.Opts.Posterior.Family != "full" {
		return fmt.Errorf("mcmc: the mcmc engine samples the latent values at the training inputs: it needs the full posterior family (Z = X), not %q", m.Opts.Posterior.Family)
	}
	if !inputs.IsPassthrough(m.Inputs()) {
		return fmt.Errorf("mcmc: the mcmc engine samples the latent values at the observed inputs (inputs.Passthrough); the %s input model is not", m.Inputs().Name())
	}
	return nil
}

// Checkpointable implements models.Checkpointer: every run can be.
func (Engine) Checkpointable(*models.Model) error { return nil }

// Fit implements models.Engine: it sets the hyper-parameters' point, runs
// the chains and leaves their draws and diagnostics as the model's engine
// state (a *State) and their Gaussian summary as q(u). Cancelling ctx ends
// every chain at an iteration boundary: the draws made so far are kept
// (and checkpointed), and Fit returns ctx's error with the model usable.
func (Engine) Fit(ctx context.Context, m *models.Model, train *datasets.Dataset, fc models.FitConfig) error {
	cfg, err := ConfigOf(m.Opts)
	if err != nil {
		return err
	}
	src, err := setPoint(ctx, m, train, cfg, fc)
	if err != nil {
		return err
	}
	s, err := newSampler(m, train, cfg, src)
	if err != nil {
		return err
	}
	defer s.close()
	var ck *checkpointer
	if fc.Checkpoint != nil {
		if ck, err = openCheckpoint(fc.Checkpoint, m, train, cfg, s); err != nil {
			return err
		}
	}
	start := time.Now()
	runErr := s.run(ctx, fc.Progress, ck)
	elapsed := time.Since(start).Seconds() + s.resumedSeconds
	if s.kept() == 0 {
		if runErr == nil {
			runErr = errors.New("mcmc: no draws were kept")
		}
		return runErr
	}
	st, err := s.state(elapsed)
	if err != nil {
		return errors.Join(runErr, err)
	}
	m.SetEngineState(st)
	if err := st.summarise(m); err != nil {
		return errors.Join(runErr, err)
	}
	if d := st.Diagnostics; d.MaxRHat > 1.01 && fc.Warnings != nil {
		// The draws are kept and used, but a reader of the predictions
		// should know they may not represent the posterior yet.
		fmt.Fprintf(fc.Warnings, "mcmc: warning: max split-R-hat %.3f > 1.01 (min bulk ESS %.0f): the chains have not mixed; draw more (mcmc.samples, mcmc.warmup, mcmc.thin)\n", d.MaxRHat, d.MinESS)
	}
	if fc.Progress != nil {
		fmt.Fprintf(fc.Progress, "mcmc: %d draws in %d chains, %.1fs; max split-R-hat %.4f, min bulk ESS %.0f, %.3gs per effective sample\n",
			st.Diagnostics.Draws, len(st.Counts), elapsed, st.Diagnostics.MaxRHat, st.Diagnostics.MinESS, st.Diagnostics.SecondsPerESS)
	}
	return runErr
}

// setPoint puts the hyper-parameters at the point the chains start from:
// another engine's fit, a saved model's values, or the model's initial
// ones; it returns the model they came from (nil for the initial ones).
func setPoint(ctx context.Context, m *models.Model, train *datasets.Dataset, cfg Config, fc models.FitConfig) (*models.Model, error) {
	var src *models.Model
	switch {
	case cfg.Fit != "":
		o := m.Opts
		o.Inference = cfg.Fit
		// train is already in the model's units.
		o.Inputs.Standardize = false
		other, err := models.New(o)
		if err != nil {
			return nil, fmt.Errorf("mcmc: fitting the hyper-parameters by %s: %w", cfg.Fit, err)
		}
		if err := other.Fit(ctx, train, models.FitConfig{Warnings: fc.Warnings}); err != nil {
			return nil, fmt.Errorf("mcmc: fitting the hyper-parameters by %s: %w", cfg.Fit, err)
		}
		src = other
	case cfg.InitFrom != "":
		o := m.Opts
		other, err := models.Load(cfg.InitFrom, &o)
		if err != nil {
			return nil, fmt.Errorf("mcmc: init-from: %w", err)
		}
		src = other
	default:
		return nil, nil
	}
	return src, copyHyper(m, src)
}

// newRef builds the Gaussian reference from src's q(u) at Z = X, in f:
// a = m, B = L (unwhitened) or a = chol(K) m, B = chol(K) L (whitened),
// B scaled by scale; t holds chol(K) at the point.
func newRef(t *target, src *models.Model, scale float64) (*gaussRef, error) {
	post := src.Posterior()
	n, L := t.n, t.latent
	if post.M != n || post.Latent != L {
		return nil, fmt.Errorf("mcmc: proposal=fit: the fitted model has %d×%d latent values, this one %d×%d (fit it on the same rows with the full family)", post.M, post.Latent, n, L)
	}
	r := &gaussRef{a: make([]float64, n*L), wa: make([]float64, n*L)}
	for c := 0; c < L; c++ {
		raw := post.LRaw[c].Data
		b := make([]float64, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j < i; j++ {
				b[i*n+j] = raw[i*n+j]
			}
			b[i*n+i] = math.Exp(raw[i*n+i])
		}
		mean := append([]float64(nil), post.Mean[c].Data...)
		if post.Whitened {
			lk := t.chol[t.kern[c]]
			mean = lowerTimes(lk, mean, make([]float64, n), n)
			prod := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					var s float64
					for k := j; k <= i; k++ {
						s += lk[i*n+k] * b[k*n+j]
					}
					prod[i*n+j] = s
				}
			}
			b = prod
		}
		for i := range b {
			b[i] *= scale
		}
		r.b = append(r.b, b)
		for i, v := range mean {
			r.a[i*L+c] = v
		}
	}
	t.whiten(r.a, r.wa)
	return r, nil
}

// copyHyper copies the kernels' and likelihood's parameters and the jitter
// of src into m, which must have the same composition.
func copyHyper(m, src *models.Model) error {
	dk, sk := m.Kernels(), src.Kernels()
	if len(dk) != len(sk) {
		return fmt.Errorf("mcmc: the model to take hyper-parameters from has %d latent functions, this one %d", len(sk), len(dk))
	}
	pairs := [][2][]*layers.Param{{m.Likelihood().Params(), src.Likelihood().Params()},
		{{m.Posterior().JitterParam}, {src.Posterior().JitterParam}}}
	for c := range dk {
		pairs = append(pairs, [2][]*layers.Param{dk[c].Params(), sk[c].Params()})
	}
	for _, p := range pairs {
		if len(p[0]) != len(p[1]) {
			return fmt.Errorf("mcmc: the model to take hyper-parameters from has another composition")
		}
		for i := range p[0] {
			if len(p[0][i].Data) != len(p[1][i].Data) {
				return fmt.Errorf("mcmc: parameter %s has %d values in the model to take hyper-parameters from, %d here", p[0][i].Name, len(p[1][i].Data), len(p[0][i].Data))
			}
			copy(p[0][i].Data, p[1][i].Data)
		}
	}
	return nil
}

// hyperParams are the parameters Hyper "sample" moves: the kernels' and
// the likelihood's trainable ones, each once; kernel says which are the
// kernels'.
func hyperParams(m *models.Model) (ps []*layers.Param, kernel []bool) {
	seen := map[*layers.Param]bool{}
	add := func(k bool, qs ...*layers.Param) {
		for _, q := range qs {
			if q != nil && !q.Fixed && !seen[q] {
				seen[q] = true
				ps = append(ps, q)
				for range q.Data {
					kernel = append(kernel, k)
				}
			}
		}
	}
	for _, k := range m.Kernels() {
		add(true, k.Params()...)
	}
	add(false, m.Likelihood().Params()...)
	return ps, kernel
}

// sampler runs the chains of one fit.
type sampler struct {
	m      *models.Model
	cfg    Config
	chains []*chain
	hyper  []*layers.Param
	theta0 []float64
	// resumedSeconds is the sampling time a resumed checkpoint recorded.
	resumedSeconds float64
	mu             *sync.Mutex
}

func newSampler(m *models.Model, train *datasets.Dataset, cfg Config, src *models.Model) (*sampler, error) {
	y, width := m.Likelihood().Targets(train.Y, m.C)
	s := &sampler{m: m, cfg: cfg}
	var kernel []bool
	s.hyper, kernel = hyperParams(m)
	s.theta0 = getTheta(s.hyper)
	sample := cfg.Hyper == "sample" && len(s.theta0) > 0
	if sample {
		s.mu = &sync.Mutex{}
	}
	for k := 0; k < cfg.Chains; k++ {
		t, err := newTarget(m, y, width, s.mu)
		if err != nil {
			s.close()
			return nil, err
		}
		t.hyper, t.theta = s.hyper, append([]float64(nil), s.theta0...)
		c := newChain(k, m.Opts.Train.Seed, t)
		c.sample, c.theta0, c.sd, c.kernel = sample, s.theta0, cfg.HyperSD, kernel
		s.chains = append(s.chains, c)
	}
	if cfg.Proposal == "fit" {
		t0 := s.chains[0].t
		if err := t0.factor(); err != nil {
			s.close()
			return nil, fmt.Errorf("mcmc: the prior covariance at the starting hyper-parameters: %w", err)
		}
		ref, err := newRef(t0, src, cfg.ProposalScale)
		if err != nil {
			s.close()
			return nil, err
		}
		for _, c := range s.chains {
			c.t.ref = ref
			c.g, c.gP, c.gEta = make([]float64, len(c.nu)), make([]float64, len(c.nu)), make([]float64, len(c.nu))
		}
	}
	for _, c := range s.chains {
		if err := c.start(); err != nil {
			s.close()
			if errors.Is(err, errNotPD) {
				return nil, fmt.Errorf("mcmc: the prior covariance at the starting hyper-parameters is not positive definite (raise the jitter)")
			}
			return nil, err
		}
	}
	return s, nil
}

func (s *sampler) close() {
	for _, c := range s.chains {
		c.t.close()
	}
}

// kept is the number of draws kept so far over all chains.
func (s *sampler) kept() int {
	n := 0
	for _, c := range s.chains {
		n += len(c.draws)
	}
	return n
}

// rounds: the chains meet this many times over a run (progress lines,
// checkpoints and cancellation checks between chains happen there).
const rounds = 40

// run advances every chain to the configured iterations, in rounds at
// whose ends it reports progress and writes checkpoints. The chains of a
// round run on their own goroutines; each uses only its own random stream,
// so the draws do not depend on the scheduling.
func (s *sampler) run(ctx context.Context, progress io.Writer, ck *checkpointer) error {
	total := s.cfg.iterations()
	per := max(1, (total+rounds-1)/rounds)
	start := time.Now()
	startIter := s.chains[0].iter
	for {
		done := true
		for _, c := range s.chains {
			done = done && c.iter >= total
		}
		if done {
			break
		}
		until := s.chains[0].iter + per
		for _, c := range s.chains {
			until = min(until, c.iter+per)
		}
		until = min(total, until)
		errs := make([]error, len(s.chains))
		var wg sync.WaitGroup
		for k, c := range s.chains {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = c.run(ctx, s.cfg, until)
			}()
		}
		wg.Wait()
		err := errors.Join(errs...)
		if ck != nil {
			if cerr := ck.maybeSave(s, time.Since(start).Seconds(), err != nil); cerr != nil {
				return errors.Join(err, cerr)
			}
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			return err
		}
		if progress != nil {
			s.report(progress, total, startIter, start)
		}
	}
	if ck != nil {
		// The finished run too, so that a fit killed before its caller
		// keeps the result resumes with nothing left to draw.
		return ck.maybeSave(s, time.Since(start).Seconds(), true)
	}
	return nil
}

// report writes one progress line: the iteration, the phase, elliptical
// slice shrinks per step, the split-R̂ of log p(y|f) so far and the ETA.
func (s *sampler) report(w io.Writer, total, startIter int, start time.Time) {
	it := s.chains[0].iter
	phase := "sampling"
	if it <= s.cfg.Warmup {
		phase = "warm-up"
	}
	var steps, shrinks int
	lls := make([][]float64, len(s.chains))
	for k, c := range s.chains {
		steps += c.steps
		shrinks += c.shrinks
		lls[k] = c.lls
	}
	rh := "-"
	if r := RHat(lls); !math.IsNaN(r) {
		rh = fmt.Sprintf("%.3f", r)
	}
	el := time.Since(start)
	eta := "-"
	if it > startIter {
		eta = (time.Duration(float64(el) / float64(it-startIter) * float64(total-it))).Round(time.Second).String()
	}
	fmt.Fprintf(w, "mcmc: iteration %d/%d (%s), %d chains, %.2f shrinks/step, R-hat(log-lik) %s, elapsed %s, ETA %s\n",
		it, total, phase, len(s.chains), float64(shrinks)/float64(max(steps, 1)), rh, el.Round(time.Millisecond), eta)
}
