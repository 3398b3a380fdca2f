package mcmc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
)

// chain is one Markov chain: elliptical slice sampling of the whitened
// latent values ν (f_c = L_c ν_c, ν ~ N(0, I) a priori) and, with Hyper
// "sample", slice sampling of each unconstrained hyper-parameter with ν
// held (Murray & Adams 2010: in the whitened parameterisation f moves with
// θ, which is what lets θ mix when the data pin f down).
type chain struct {
	id  int
	pcg *rand.PCG
	rng *rand.Rand
	t   *target
	// sample: θ is sampled; prior mean and sd of each coordinate; kernel
	// says whether coordinate j changes the prior covariance (a
	// likelihood parameter does not, and needs no factorisation).
	sample   bool
	theta0   []float64
	sd       float64
	kernel   []bool
	nu, f    []float64
	ll       float64
	iter     int
	tmp, nuP []float64
	fP, eta  []float64
	// lEta is L η, the proposal direction in f: with it every point on
	// the ellipse is f cos a + Lη sin a, O(n) instead of a product by L.
	lEta []float64
	// With a Gaussian reference (t.ref): g = chol(K)⁻¹(f − a), kept along
	// the ellipse like f (gEta = chol(K)⁻¹ Bη), for the prior term
	// −½‖chol(K)⁻¹ f‖² of the target, and ll includes that term and ½‖ν‖².
	g, gP, gEta []float64
	// kept draws (after warm-up, every Thin-th iteration).
	draws  [][]float64 // ν
	fs     [][]float64 // f, row-major n×L
	thetas [][]float64
	lls    []float64
	// Counters for progress and the state: ESS steps, their shrinks,
	// hyper-parameter slice evaluations.
	steps, shrinks, hyperEvals int
}

func newChain(id int, seed uint64, t *target) *chain {
	pcg := rand.NewPCG(seed, 0x6d636d63^uint64(id)*0x9e3779b97f4a7c15)
	n := t.n * t.latent
	c := &chain{id: id, pcg: pcg, rng: rand.New(pcg), t: t,
		nu: make([]float64, n), f: make([]float64, n), tmp: make([]float64, t.n),
		nuP: make([]float64, n), fP: make([]float64, n), eta: make([]float64, n), lEta: make([]float64, n)}
	if t.ref != nil {
		c.g, c.gP, c.gEta = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	return c
}

// start draws ν from its prior (chains start dispersed, which split-R-hat
// needs to detect non-convergence) and evaluates the state.
func (c *chain) start() error {
	for i := range c.nu {
		c.nu[i] = c.rng.NormFloat64()
	}
	return c.refresh()
}

// refresh recomputes the factors, f and log p(y|f) at the chain's θ and ν.
func (c *chain) refresh() error {
	if err := c.t.factor(); err != nil {
		return err
	}
	c.t.latents(c.nu, c.f, c.tmp)
	var err error
	c.ll, err = c.t.logLik(c.f)
	if c.t.ref != nil {
		c.t.spread(c.nu, c.fP, c.tmp)
		c.t.whiten(c.fP, c.g)
		c.ll += c.correction(c.nu, c.g)
	}
	return err
}

// correction is the reference's term of the target, log N(f; 0, K) −
// log N(f; a, BBᵀ) up to a constant: −½‖chol(K)⁻¹a + g‖² + ½‖ν‖².
func (c *chain) correction(nu, g []float64) float64 {
	var s float64
	for i, w := range c.t.ref.wa {
		v := w + g[i]
		s -= 0.5 * v * v
	}
	for _, v := range nu {
		s += 0.5 * v * v
	}
	return s
}

// priorWhite returns the state's prior-whitened values chol(K)⁻¹ f (ν
// itself without a reference), which the draws store.
func (c *chain) priorWhite() []float64 {
	if c.t.ref == nil {
		return append([]float64(nil), c.nu...)
	}
	out := make([]float64, len(c.g))
	for i, w := range c.t.ref.wa {
		out[i] = w + c.g[i]
	}
	return out
}

// step is one iteration: an elliptical slice step on ν, then (sampling θ)
// a sweep of slice steps over θ's coordinates.
func (c *chain) step() error {
	if err := c.ellipticalSlice(); err != nil {
		return err
	}
	if c.sample {
		if err := c.hyperSweep(); err != nil {
			return err
		}
	}
	c.iter++
	return nil
}

// maxShrinks bounds an elliptical slice step's bracket shrinks: the
// bracket reaches the current state (which is always accepted) long
// before, unless log p(y|f) is not finite there.
const maxShrinks = 200

// ellipticalSlice is Murray, Adams & MacKay's (2010) elliptical slice
// sampling on the whitened ν.
func (c *chain) ellipticalSlice() error {
	logy := c.ll + math.Log(c.rng.Float64())
	for i := range c.eta {
		c.eta[i] = c.rng.NormFloat64()
	}
	c.t.spread(c.eta, c.lEta, c.tmp)
	ref := c.t.ref
	if ref != nil {
		c.t.whiten(c.lEta, c.gEta)
	}
	angle := c.rng.Float64() * 2 * math.Pi
	lo, hi := angle-2*math.Pi, angle
	c.steps++
	for s := 0; s < maxShrinks; s++ {
		cs, sn := math.Cos(angle), math.Sin(angle)
		for i := range c.nuP {
			c.nuP[i] = c.nu[i]*cs + c.eta[i]*sn
		}
		if ref == nil {
			for i := range c.fP {
				c.fP[i] = c.f[i]*cs + c.lEta[i]*sn
			}
		} else {
			for i, a := range ref.a {
				c.fP[i] = a + (c.f[i]-a)*cs + c.lEta[i]*sn
			}
			for i := range c.gP {
				c.gP[i] = c.g[i]*cs + c.gEta[i]*sn
			}
		}
		ll, err := c.t.logLik(c.fP)
		if err != nil {
			return err
		}
		if ref != nil {
			ll += c.correction(c.nuP, c.gP)
		}
		if ll > logy {
			c.nu, c.nuP = c.nuP, c.nu
			c.f, c.fP = c.fP, c.f
			c.g, c.gP = c.gP, c.g
			c.ll = ll
			return nil
		}
		c.shrinks++
		if angle < 0 {
			lo = angle
		} else {
			hi = angle
		}
		angle = lo + c.rng.Float64()*(hi-lo)
	}
	return errors.New("mcmc: elliptical slice step did not find a point: log p(y|f) is not finite at the current state")
}

// logPost is log p(y | L_θ ν) + log p(θ) at the chain's ν and θ = c.t.theta;
// −Inf where the prior covariance does not factorise.
func (c *chain) logPost(refactor bool) (float64, error) {
	c.hyperEvals++
	if refactor {
		if err := c.t.factor(); errors.Is(err, errNotPD) {
			return math.Inf(-1), nil
		} else if err != nil {
			return 0, err
		}
	}
	c.t.latents(c.nu, c.fP, c.tmp)
	ll, err := c.t.logLik(c.fP)
	if err != nil {
		return 0, err
	}
	lp := 0.0
	for j, v := range c.t.theta {
		d := (v - c.theta0[j]) / c.sd
		lp -= 0.5 * d * d
	}
	return ll + lp, nil
}

// Slice-sampling settings for θ: the initial bracket's width (in log
// units) and the most steps it is stepped out by (Neal 2003).
const (
	sliceWidth = 1.0
	sliceSteps = 8
)

// hyperSweep slice-samples each coordinate of θ in turn with ν held.
func (c *chain) hyperSweep() error {
	th := c.t.theta
	cur, err := c.logPost(false)
	if err != nil {
		return err
	}
	for j := range th {
		x0 := th[j]
		eval := func(x float64) (float64, error) {
			th[j] = x
			return c.logPost(c.kernel[j])
		}
		logy := cur + math.Log(c.rng.Float64())
		lo := x0 - sliceWidth*c.rng.Float64()
		hi := lo + sliceWidth
		jl := int(sliceSteps * c.rng.Float64())
		kr := sliceSteps - 1 - jl
		for ; jl > 0; jl-- {
			v, err := eval(lo)
			if err != nil {
				return err
			}
			if !(v > logy) {
				break
			}
			lo -= sliceWidth
		}
		for ; kr > 0; kr-- {
			v, err := eval(hi)
			if err != nil {
				return err
			}
			if !(v > logy) {
				break
			}
			hi += sliceWidth
		}
		for {
			x := lo + c.rng.Float64()*(hi-lo)
			v, err := eval(x)
			if err != nil {
				return err
			}
			if v > logy {
				cur = v
				break
			}
			if x < x0 {
				lo = x
			} else {
				hi = x
			}
			if hi-lo < 1e-12 {
				// Only x0 itself is left: keep it.
				th[j] = x0
				if cur, err = c.logPost(c.kernel[j]); err != nil {
					return err
				}
				break
			}
		}
	}
	// The chain's state at the accepted θ: factors, f and log p(y|f).
	return c.refresh()
}

// record keeps the current state as a draw.
func (c *chain) record() {
	c.draws = append(c.draws, c.priorWhite())
	c.fs = append(c.fs, append([]float64(nil), c.f...))
	if c.sample {
		c.thetas = append(c.thetas, append([]float64(nil), c.t.theta...))
	}
	c.lls = append(c.lls, c.ll)
}

// run advances the chain until it has done total iterations, or until
// until more, or until ctx is cancelled (ending at an iteration boundary).
func (c *chain) run(ctx context.Context, cfg Config, until int) error {
	for c.iter < until {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.step(); err != nil {
			return err
		}
		if k := c.iter - cfg.Warmup; k > 0 && k%cfg.Thin == 0 {
			c.record()
		}
	}
	return nil
}
