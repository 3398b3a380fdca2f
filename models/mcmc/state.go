package mcmc

import (
	"encoding/json"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/models"
)

// State is what a fit leaves in Model.EngineState: the draws (the whitened
// latent values ν, and the hyper-parameters when sampled) and the
// chains' diagnostics. Save stores it with the model; predictions of a
// loaded model average over the same draws.
type State struct {
	// Hyper is Config.Hyper of the fit; HyperParams name the parameters
	// whose unconstrained values Point and each Thetas entry hold in order
	// (concatenated).
	Hyper       string   `json:"hyper"`
	HyperParams []string `json:"hyper_params,omitempty"`
	// Point is the hyper-parameters the chains started from (held there
	// with Hyper "fixed").
	Point []float64 `json:"point"`
	// Counts is the number of draws each chain kept; Draws holds them
	// chain after chain, each the Latent·N values ν (latent function c's
	// at c·N), f_c = chol(K_c) ν_c.
	Counts []int       `json:"counts"`
	Draws  [][]float64 `json:"draws"`
	// Thetas are the draws' hyper-parameters (Hyper "sample" only).
	Thetas      [][]float64 `json:"thetas,omitempty"`
	Diagnostics Diagnostics `json:"diagnostics"`
}

// Diagnostics summarises the chains of a fit.
type Diagnostics struct {
	Chains int `json:"chains"`
	// Draws kept over all chains; Warmup and Thin as configured.
	Draws, Warmup, Thin int
	// MaxRHat and MinESS are the largest split-R̂ and the smallest bulk
	// effective sample size over the latent values f_i at the training
	// inputs (and the hyper-parameters when sampled); RHatLogLik and
	// ESSLogLik those of log p(y|f).
	MaxRHat    float64 `json:"max_rhat"`
	MinESS     float64 `json:"min_ess"`
	RHatLogLik float64 `json:"rhat_loglik"`
	ESSLogLik  float64 `json:"ess_loglik"`
	// Seconds is the sampling time (warm-up included, fitting the point
	// excluded); SecondsPerESS is Seconds / MinESS.
	Seconds       float64 `json:"seconds"`
	SecondsPerESS float64 `json:"seconds_per_ess"`
	// ShrinksPerStep is the mean number of bracket shrinks per elliptical
	// slice step (each costs one likelihood evaluation).
	ShrinksPerStep float64 `json:"shrinks_per_step"`
}

// StateOf returns the MCMC state of a model fitted (or loaded) with the
// mcmc engine, nil for another model.
func StateOf(m *models.Model) *State {
	s, _ := m.EngineState().(*State)
	return s
}

// state collects the chains' draws and computes the diagnostics.
func (s *sampler) state(seconds float64) (*State, error) {
	st := &State{Hyper: s.cfg.Hyper, Point: s.theta0}
	sample := len(s.chains) > 0 && s.chains[0].sample
	if !sample {
		st.Hyper = "fixed"
	}
	if sample {
		for _, p := range s.hyper {
			st.HyperParams = append(st.HyperParams, p.Name)
		}
	}
	var steps, shrinks int
	for _, c := range s.chains {
		st.Counts = append(st.Counts, len(c.draws))
		st.Draws = append(st.Draws, c.draws...)
		st.Thetas = append(st.Thetas, c.thetas...)
		steps += c.steps
		shrinks += c.shrinks
	}
	d := &st.Diagnostics
	d.Chains, d.Draws, d.Warmup, d.Thin = len(s.chains), len(st.Draws), s.cfg.Warmup, s.cfg.Thin
	d.Seconds = seconds
	d.ShrinksPerStep = float64(shrinks) / float64(max(steps, 1))
	series := func(get func(c *chain, j int) float64) [][]float64 {
		out := make([][]float64, len(s.chains))
		for k, c := range s.chains {
			out[k] = make([]float64, len(c.fs))
			for j := range c.fs {
				out[k][j] = get(c, j)
			}
		}
		return out
	}
	d.MaxRHat, d.MinESS = 0, math.Inf(1)
	note := func(x [][]float64) {
		r, e := RHat(x), BulkESS(x)
		if !math.IsNaN(r) {
			d.MaxRHat = math.Max(d.MaxRHat, r)
		}
		if !math.IsNaN(e) {
			d.MinESS = math.Min(d.MinESS, e)
		}
	}
	q := len(s.chains[0].f)
	for i := 0; i < q; i++ {
		note(series(func(c *chain, j int) float64 { return c.fs[j][i] }))
	}
	for i := range st.Point {
		if sample {
			note(series(func(c *chain, j int) float64 { return c.thetas[j][i] }))
		}
	}
	ll := series(func(c *chain, j int) float64 { return c.lls[j] })
	d.RHatLogLik, d.ESSLogLik = RHat(ll), BulkESS(ll)
	if math.IsInf(d.MinESS, 1) {
		d.MinESS = math.NaN()
	}
	d.SecondsPerESS = seconds / d.MinESS
	for _, v := range []*float64{&d.MaxRHat, &d.MinESS, &d.RHatLogLik, &d.ESSLogLik, &d.SecondsPerESS} {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0 // JSON has no NaN; too few draws to say
		}
	}
	return st, nil
}

// summarise sets q(u) to the Gaussian with the draws' mean and covariance
// (of ν when the family is whitened, of f otherwise), so that
// Model.Marginals gives the sampled posterior's latent means and variances
// at new inputs (exactly, up to Monte Carlo error, when the
// hyper-parameters are held; sampled, they are set to the draws' mean
// first and the marginals are those of that single point).
func (st *State) summarise(m *models.Model) error {
	post := m.Posterior()
	n, L := post.M, post.Latent
	if len(st.Thetas) > 0 {
		mean := make([]float64, len(st.Point))
		for _, t := range st.Thetas {
			for j, v := range t {
				mean[j] += v / float64(len(st.Thetas))
			}
		}
		ps, _ := hyperParams(m)
		setTheta(ps, mean)
	}
	var chol [][]float64
	if !post.Whitened {
		t, err := newTarget(m, nil, 0, nil)
		if err != nil {
			return err
		}
		defer t.close()
		if err := t.factor(); err != nil {
			return err
		}
		chol = make([][]float64, L)
		for c := range chol {
			chol[c] = t.chol[t.kern[c]]
		}
	}
	S := len(st.Draws)
	X := mat.NewDense(S, n, nil)
	tmp := make([]float64, n)
	for c := 0; c < L; c++ {
		mean := make([]float64, n)
		for s, d := range st.Draws {
			v := d[c*n : (c+1)*n]
			if chol != nil {
				v = lowerTimes(chol[c], v, tmp, n)
			}
			X.SetRow(s, v)
			for i, x := range v {
				mean[i] += x / float64(S)
			}
		}
		for s := 0; s < S; s++ {
			for i := 0; i < n; i++ {
				X.Set(s, i, X.At(s, i)-mean[i])
			}
		}
		var cov mat.SymDense
		cov.SymOuterK(1/float64(max(S-1, 1)), X.T())
		copy(post.Mean[c].Data, mean)
		if err := post.SetL(c, cholWithJitter(&cov, n)); err != nil {
			return err
		}
	}
	return nil
}

// lowerTimes returns L v for the row-major lower n×n L, in out.
func lowerTimes(l, v, out []float64, n int) []float64 {
	for i := 0; i < n; i++ {
		var s float64
		row := l[i*n : i*n+i+1]
		for j, a := range row {
			s += a * v[j]
		}
		out[i] = s
	}
	return out
}

// cholWithJitter returns the row-major lower factor of S plus the smallest
// diagonal jitter that makes it factorise (a sample covariance of fewer
// draws than dimensions is singular).
func cholWithJitter(S *mat.SymDense, n int) []float64 {
	jit := 0.0
	for {
		A := mat.NewSymDense(n, nil)
		A.CopySym(S)
		for i := 0; i < n; i++ {
			A.SetSym(i, i, A.At(i, i)+jit)
		}
		var ch mat.Cholesky
		if ch.Factorize(A) {
			var L mat.TriDense
			ch.LTo(&L)
			out := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					out[i*n+j] = L.At(i, j)
				}
			}
			return out
		}
		jit = math.Max(10*jit, 1e-10)
	}
}

// DecodeState implements models.Stateful: it parses a saved State and
// checks its draws against the model's sizes.
func (Engine) DecodeState(m *models.Model, raw json.RawMessage) (any, error) {
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("mcmc: engine state: %w", err)
	}
	post := m.Posterior()
	want := post.M * post.Latent
	total := 0
	for _, c := range st.Counts {
		if c < 0 {
			return nil, fmt.Errorf("mcmc: engine state: negative draw count %d", c)
		}
		total += c
	}
	if total != len(st.Draws) || total == 0 {
		return nil, fmt.Errorf("mcmc: engine state: %d draws, counts say %d", len(st.Draws), total)
	}
	for i, d := range st.Draws {
		if len(d) != want {
			return nil, fmt.Errorf("mcmc: engine state: draw %d has %d values, want %d", i, len(d), want)
		}
	}
	ps, _ := hyperParams(m)
	nTheta := len(getTheta(ps))
	if len(st.Point) != nTheta {
		return nil, fmt.Errorf("mcmc: engine state: %d hyper-parameter values, the model has %d", len(st.Point), nTheta)
	}
	if st.Hyper == "sample" {
		if len(st.Thetas) != total {
			return nil, fmt.Errorf("mcmc: engine state: %d hyper-parameter draws for %d draws", len(st.Thetas), total)
		}
		for i, t := range st.Thetas {
			if len(t) != nTheta {
				return nil, fmt.Errorf("mcmc: engine state: hyper-parameter draw %d has %d values, want %d", i, len(t), nTheta)
			}
		}
	} else if len(st.Thetas) != 0 {
		return nil, fmt.Errorf("mcmc: engine state: hyper-parameter draws with hyper %q", st.Hyper)
	}
	return &st, nil
}

// Report implements models.Reporter: the chains' diagnostics.
func (Engine) Report(m *models.Model) []models.Figure {
	st := StateOf(m)
	if st == nil {
		return nil
	}
	d := st.Diagnostics
	return []models.Figure{
		{Name: "draws", Value: float64(d.Draws)},
		{Name: "max_rhat", Value: d.MaxRHat},
		{Name: "min_ess", Value: d.MinESS},
		{Name: "rhat_loglik", Value: d.RHatLogLik},
		{Name: "sampling_seconds", Value: d.Seconds},
		{Name: "seconds_per_ess", Value: d.SecondsPerESS},
		{Name: "shrinks_per_step", Value: d.ShrinksPerStep},
	}
}
