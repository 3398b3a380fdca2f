// Package variational implements posterior families over the latent
// functions: the sparse variational posterior over inducing outputs, for
// each latent function c q(u_c) = N(m_c, L_c L_cᵀ) at M inducing inputs Z_c
// (whitened or not, Z shared or per function, Z free or held fixed — with
// Z = X fixed it is the non-sparse variational Gaussian), its KL divergence
// to the GP prior, and the Gaussian marginals of f_c at a batch of inputs.
// Other families (mean-field, an EP posterior) implement Family.
package variational

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
)

// Config describes the posterior's structure.
type Config struct {
	// Latent is the number of latent functions C; M the inducing points per
	// function; D the input dimension.
	Latent, M, D int
	// Whitened parameterises q(v) with u = chol(K_ZZ)·v, so that the prior on
	// v is N(0, I); the original code was unwhitened.
	Whitened bool
	// SharedZ uses one set of inducing inputs for all latent functions.
	SharedZ bool
	// Jitter is the initial value added with σ₀² to the diagonal of K_ZZ and
	// to k(x,x) (1e-3 in the original code).
	Jitter float64
	// FixedZ holds the inducing inputs where they start (no gradient); with
	// Z = X it makes the non-sparse posterior.
	FixedZ bool
}

// Family is a posterior over the latent functions that a graph can bind:
// what training (its KL term) and prediction (marginals at new inputs) use,
// whatever the inference that fits it.
type Family interface {
	// Params returns the family's parameters (Fixed ones included).
	Params() []*layers.Param
	// Jitter is the diagonal jitter a training loop may raise.
	Jitter() *layers.Param
	// Bind builds the family into s's graph.
	Bind(s *layers.Scope) (Bound, error)
	// ParamGroups counts the free parameters by group.
	ParamGroups() map[string]int
}

// Bound is a family bound into one graph.
type Bound interface {
	// Divergence is the node of the KL divergence to the prior.
	Divergence() *G.Node
	// ClassMarginals returns per latent function the n-vectors of means
	// and variances at the rows of x.
	ClassMarginals(x *G.Node) (mu, v []*G.Node, err error)
	// Marginals returns the n×L means and variances at x.
	Marginals(x *G.Node) (mu, v *G.Node, err error)
}

// Posterior is q(u) for Latent functions. Kernels[c] is latent function c's
// kernel (the papers give each class its own hyper-parameters); the same
// kernel value may be repeated to share them.
type Posterior struct {
	Config
	Kernels []kernels.Kernel
	Z       []*layers.Param // Latent entries of M×D (all the same when SharedZ)
	Mean    []*layers.Param // M×1 each
	// JitterParam holds the current jitter (Config.Jitter at first); a
	// training loop raises it when a Cholesky factorisation fails.
	JitterParam *layers.Param
	// LRaw holds L's strictly-lower part and the logarithm of its diagonal,
	// which keeps L a valid Cholesky factor under unconstrained updates.
	LRaw []*layers.Param // M×M each
}

// New creates the posterior with inducing inputs z (Latent slices of M×D
// row-major values, or one slice when SharedZ) and q(u) at the prior. With
// z nil it creates the parameters only (zero), to be overwritten with
// stored values.
func New(name string, cfg Config, ks []kernels.Kernel, z [][]float64) (*Posterior, error) {
	if cfg.Latent < 1 || cfg.M < 1 || cfg.D < 1 {
		return nil, fmt.Errorf("variational: invalid sizes C=%d M=%d D=%d", cfg.Latent, cfg.M, cfg.D)
	}
	if len(ks) != cfg.Latent {
		return nil, fmt.Errorf("variational: %d kernels for %d latent functions", len(ks), cfg.Latent)
	}
	nz := cfg.Latent
	if cfg.SharedZ {
		nz = 1
	}
	if z != nil && len(z) != nz {
		return nil, fmt.Errorf("variational: %d inducing sets, want %d", len(z), nz)
	}
	p := &Posterior{Config: cfg, Kernels: ks, JitterParam: kernels.Jitter(name+"/jitter", cfg.Jitter)}
	for c := 0; c < cfg.Latent; c++ {
		if c < nz {
			if z != nil && len(z[c]) != cfg.M*cfg.D {
				return nil, fmt.Errorf("variational: inducing set %d has %d values, want M×D = %d", c, len(z[c]), cfg.M*cfg.D)
			}
			zp := layers.NewParam(fmt.Sprintf("%s/Z%d", name, c), tensor.Shape{cfg.M, cfg.D}, 0, layers.Identity)
			zp.Fixed = cfg.FixedZ
			if z != nil {
				copy(zp.Data, z[c])
			}
			p.Z = append(p.Z, zp)
		} else {
			p.Z = append(p.Z, p.Z[0])
		}
		p.Mean = append(p.Mean, layers.NewParam(fmt.Sprintf("%s/m%d", name, c), tensor.Shape{cfg.M, 1}, 0, layers.Identity))
		p.LRaw = append(p.LRaw, layers.NewParam(fmt.Sprintf("%s/L%d", name, c), tensor.Shape{cfg.M, cfg.M}, 0, layers.Identity))
	}
	if z == nil {
		return p, nil
	}
	return p, p.InitPrior()
}

// Jitter implements Family.
func (p *Posterior) Jitter() *layers.Param { return p.JitterParam }

// Bind implements Family.
func (p *Posterior) Bind(s *layers.Scope) (Bound, error) { return p.Build(s) }

// ParamGroups implements Family: "inducing" counts the free inducing inputs
// (once when shared), "q(u)" the means and the M(M+1)/2 free entries of
// each lower-triangular factor.
func (p *Posterior) ParamGroups() map[string]int {
	out := map[string]int{}
	seen := map[*layers.Param]bool{}
	for c := 0; c < p.Latent; c++ {
		if !seen[p.Z[c]] && !p.Z[c].Fixed {
			seen[p.Z[c]] = true
			out["inducing"] += len(p.Z[c].Data)
		}
		out["q(u)"] += len(p.Mean[c].Data) + p.M*(p.M+1)/2
	}
	return out
}

// Divergence implements Bound.
func (b *Built) Divergence() *G.Node { return b.KL }

// Params returns Z (once when shared), the means and the factors.
func (p *Posterior) Params() []*layers.Param {
	var ps []*layers.Param
	seen := map[*layers.Param]bool{}
	for c := 0; c < p.Latent; c++ {
		for _, q := range []*layers.Param{p.Z[c], p.Mean[c], p.LRaw[c]} {
			if !seen[q] {
				seen[q] = true
				ps = append(ps, q)
			}
		}
	}
	return ps
}

// InitPrior sets q(u) to the prior: m = 0 and L = chol(K_ZZ) (unwhitened) or
// L = I (whitened), as the original code starts.
func (p *Posterior) InitPrior() error {
	for c := 0; c < p.Latent; c++ {
		for i := range p.Mean[c].Data {
			p.Mean[c].Data[i] = 0
		}
		l := make([]float64, p.M*p.M)
		if p.Whitened {
			for i := 0; i < p.M; i++ {
				l[i*p.M+i] = 1
			}
		} else {
			var err error
			if l, err = p.priorFactor(c); err != nil {
				return err
			}
		}
		if err := p.SetL(c, l); err != nil {
			return err
		}
	}
	return nil
}

// SetL stores a lower-triangular factor (row-major M×M, positive diagonal).
func (p *Posterior) SetL(c int, l []float64) error {
	m := p.M
	raw := p.LRaw[c].Data
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			switch {
			case j < i:
				raw[i*m+j] = l[i*m+j]
			case j == i:
				if !(l[i*m+i] > 0) {
					return fmt.Errorf("variational: factor %d has diagonal %v at %d", c, l[i*m+i], i)
				}
				raw[i*m+i] = math.Log(l[i*m+i])
			default:
				raw[i*m+j] = 0
			}
		}
	}
	return nil
}

// priorFactor evaluates chol(K_ZZ) for latent function c at the current parameters.
func (p *Posterior) priorFactor(c int) ([]float64, error) {
	g := G.NewGraph()
	s := layers.NewScope(g)
	z, err := s.Raw(p.Z[c])
	if err != nil {
		return nil, err
	}
	jit, err := s.Node(p.JitterParam)
	if err != nil {
		return nil, err
	}
	kzz, err := kernels.KZZ(p.Kernels[c], s, z, jit)
	if err != nil {
		return nil, err
	}
	l, err := graph.Cholesky(kzz)
	if err != nil {
		return nil, err
	}
	prog, err := graph.Compile(g, l)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := s.Sync(); err != nil {
		return nil, err
	}
	if err := prog.Run(); err != nil {
		return nil, fmt.Errorf("variational: K_ZZ of latent function %d: %w", c, err)
	}
	return prog.Float64s(l)
}

// Built is the posterior bound into one graph: the per-function Cholesky
// factors and the KL divergence, from which marginals at any inputs follow.
type Built struct {
	p  *Posterior
	s  *layers.Scope
	lk []*G.Node // chol(K_ZZ) per latent function
	// lw is the factor of q's covariance in whitened coordinates, the
	// lower-triangular Lk⁻¹L (L itself when whitened): the KL needs it, and
	// with it the marginal variance's ‖Lᵀ K_ZZ⁻¹ K_Zx‖² is ‖lwᵀ Lk⁻¹ K_Zx‖²,
	// one product with the solve already made instead of a second B-column
	// triangular solve and a general product (a triangular one, half the
	// multiply-adds).
	lw []*G.Node
	m  []*G.Node // means, M×1
	z  []*G.Node
	// prior[c] is the first latent function with c's kernel and inducing
	// inputs: latent functions that share both share K_ZZ and its factor,
	// and at new inputs K_Zx, Lk⁻¹K_Zx and k(x,x), built once.
	prior  []int
	logDet []*G.Node // log|K_ZZ| per latent function (unwhitened)
	// KL is Σ_c KL(q(u_c) ‖ p(u_c)).
	KL *G.Node
}

// Build binds the posterior into s's graph.
func (p *Posterior) Build(s *layers.Scope) (*Built, error) {
	b := &Built{p: p, s: s}
	e := &graph.Chain{}
	var kls G.Nodes
	for c := 0; c < p.Latent; c++ {
		first := c
		for c2 := range c {
			if p.Z[c2] == p.Z[c] && sameKernel(p.Kernels[c2], p.Kernels[c]) {
				first = c2
				break
			}
		}
		var z, lk, logDetK *G.Node
		if first < c {
			z, lk, logDetK = b.z[first], b.lk[first], b.logDet[first]
		} else {
			z = e.Do(s.Raw(p.Z[c]))
			kzz := e.Do(kernels.KZZ(p.Kernels[c], s, z, e.Do(s.Node(p.JitterParam))))
			lk = e.Do(graph.Cholesky(kzz))
			if !p.Whitened {
				logDetK = e.Do(graph.LogDetChol(lk))
			}
		}
		raw := e.Do(s.Raw(p.LRaw[c]))
		logDiag := e.Do(graph.Diag(raw))
		lq := e.Do(graph.ExpDiagLower(raw))
		m := e.Do(s.Raw(p.Mean[c]))
		if e.Err != nil {
			return nil, fmt.Errorf("variational: latent function %d: %w", c, e.Err)
		}
		// KL = ½[−M + log|K| − log|S| + ‖Lk⁻¹m‖² + ‖Lk⁻¹L‖²_F] (unwhitened) or
		// ½[−M − log|S| + ‖m‖² + ‖L‖²_F] (whitened); log|S| = 2 Σ log diag L.
		logDetS := e.Do(G.HadamardProd(e.Do(G.Sum(logDiag)), G.NewConstant(2.0)))
		mm, ll := m, lq
		if !p.Whitened {
			mm = e.Do(graph.TriSolve(lk, m, true, false))
			ll = e.Do(graph.TriSolveLower(lk, lq, false)) // lower: a third of a full solve
		}
		quad := e.Do(G.Add(e.Do(graph.SumSquares(mm)), e.Do(graph.SumSquares(ll))))
		kl := e.Do(G.Sub(quad, logDetS))
		if logDetK != nil {
			kl = e.Do(G.Add(kl, logDetK))
		}
		kl = e.Do(G.HadamardProd(e.Do(G.Add(kl, G.NewConstant(-float64(p.M)))), G.NewConstant(0.5)))
		if e.Err != nil {
			return nil, fmt.Errorf("variational: KL of latent function %d: %w", c, e.Err)
		}
		kls = append(kls, kl)
		b.lk, b.lw, b.m, b.z = append(b.lk, lk), append(b.lw, ll), append(b.m, m), append(b.z, z)
		b.prior, b.logDet = append(b.prior, first), append(b.logDet, logDetK)
	}
	kl := kls[0]
	for _, k := range kls[1:] {
		kl = e.Do(G.Add(kl, k))
	}
	b.KL = kl
	return b, e.Err
}

// ClassMarginals returns, for each latent function, the n-vectors of means
// and variances of f_c at the rows of x (n×D):
//
//	μ = K_xZ K_ZZ⁻¹ m,  v = k(x,x) − K_xZ K_ZZ⁻¹ K_Zx + ‖Lᵀ K_ZZ⁻¹ K_Zx‖²
//
// (the original code's formula; the papers' eq. 5 has a sign typo), with
// K_ZZ⁻¹ replaced by Lk⁻ᵀ when whitened. k(x,x) includes σ₀² and the jitter.
func (b *Built) ClassMarginals(x *G.Node) (mu, v []*G.Node, err error) {
	return b.classMarginals(x, nil)
}

// InflatedClassMarginals is ClassMarginals with each variance raised by the
// first-order input-noise term Δ_c(x_i) = Σ_j V_j (∂μ_c(x_i)/∂x_ij)², for
// input-noise variances V shared by every row (a D-vector), in closed form.
// For a dot-product kernel (kernels.DotProduct) ∂μ_c/∂x_i = (W_c Z_c)_i ∘ w
// with W_c = κ'(x_i·diag(w)·Z_cᵀ) ∘ α_cᵀ (μ_c = K_xZ α_c), so
//
//	Δ_c(x_i) = W_ci S_c W_ciᵀ,  S_c = Z_c diag(V ∘ w²) Z_cᵀ:
//
// an M×M Gram matrix and n×M by M×M products where the gradient itself is
// an n×M by M×D product and its reverse pass two more (on MNIST, M = 100
// against D = 784, the noise-aware step's extra multiply-adds fall from
// 0.47 G to 0.2 G). ok is false, with nothing built, when the form does
// not apply (a kernel without DotProduct, V given per row) or would cost
// more multiply-adds than the gradient: M(D/2 + 3n) ≥ 3nD, as for small D.
func (b *Built) InflatedClassMarginals(x, noise *G.Node) (mu, v []*G.Node, ok bool, err error) {
	p := b.p
	if ns := noise.Shape(); len(ns) != 1 || ns[0] != p.D {
		return nil, nil, false, nil
	}
	for _, k := range p.Kernels {
		if _, dot := k.(kernels.DotProduct); !dot {
			return nil, nil, false, nil
		}
	}
	if xs := x.Shape(); len(xs) == 2 {
		n, m, d := xs[0], p.M, p.D
		if m*(d/2+3*n) >= 3*n*d {
			return nil, nil, false, nil
		}
	}
	mu, v, err = b.classMarginals(x, noise)
	return mu, v, err == nil, err
}

// classMarginals builds ClassMarginals, with the first-order term of
// InflatedClassMarginals when noise is not nil.
func (b *Built) classMarginals(x, noise *G.Node) (mu, v []*G.Node, err error) {
	p := b.p
	if xs := x.Shape(); len(xs) != 2 || xs[1] != p.D {
		return nil, nil, fmt.Errorf("variational: inputs of shape %v, want n×%d", xs, p.D)
	}
	n := x.Shape()[0]
	e := &graph.Chain{}
	kzxs, as, kds := make([]*G.Node, p.Latent), make([]*G.Node, p.Latent), make([]*G.Node, p.Latent)
	// With noise: κ'(Z diag(w) xᵀ) and S = Z diag(V∘w²) Zᵀ per prior.
	dks, grams := make([]*G.Node, p.Latent), make([]*G.Node, p.Latent)
	for c := 0; c < p.Latent; c++ {
		k := p.Kernels[c]
		if f := b.prior[c]; f < c {
			kzxs[c], as[c], kds[c], dks[c], grams[c] = kzxs[f], as[f], kds[f], dks[f], grams[f]
		} else {
			if noise == nil {
				kzxs[c] = e.Do(k.K(b.s, b.z[c], x))
			} else {
				dp := k.(kernels.DotProduct)
				q := e.Do(dp.Inner(b.s, b.z[c], x))
				if e.Err == nil {
					kzxs[c], dks[c], err = dp.Profile(b.s, q)
					e.Do(nil, err)
				}
				w := e.Do(dp.InnerWeights(b.s))
				if e.Err == nil {
					w = e.Do(G.HadamardProd(w, w))
				}
				if e.Err == nil {
					w = e.Do(G.HadamardProd(noise, w)) // V ∘ w²
				}
				u := w
				grams[c] = e.Do(graph.WeightedDot(b.z[c], b.z[c], u))
			}
			as[c] = e.Do(graph.TriSolve(b.lk[c], kzxs[c], true, false)) // Lk⁻¹ K_Zx
			kds[c] = e.Do(kernels.KDiag(k, b.s, x, e.Do(b.s.Node(p.JitterParam))))
		}
		kzx, a, kd := kzxs[c], as[c], kds[c]
		// μ = K_xZ α with α = L⁻ᵀ m (whitened) or K_ZZ⁻¹ m: the same mean as
		// projᵀ m, but its gradient with respect to x is K's alone, with no
		// B-column triangular solve (NIMGP_FO differentiates it, and then
		// differentiates through that gradient again).
		alpha := b.m[c]
		if !p.Whitened {
			alpha = e.Do(graph.TriSolve(b.lk[c], alpha, true, false))
		}
		alpha = e.Do(graph.TriSolve(b.lk[c], alpha, true, true))
		mc := e.Do(graph.Reshape(e.Do(graph.MatMul(kzx, alpha, true, false)), tensor.Shape{n}))
		lp := e.Do(graph.TriMul(b.lw[c], a, true, true))
		vc := e.Do(G.Sub(kd, e.Do(graph.ColumnSumSquares(a))))
		vc = e.Do(G.Add(vc, e.Do(graph.ColumnSumSquares(lp))))
		if noise != nil && e.Err == nil {
			// Δ = column sums of W ∘ (S W) with W = diag(α) κ' (M×n), as
			// the quadratic forms of κ' with S' = S ∘ ααᵀ: α scales an
			// M×M matrix rather than an M×n one.
			av := e.Do(graph.Reshape(alpha, tensor.Shape{p.M}))
			sa := e.Do(graph.ScaleSym(grams[c], av))
			vc = e.Do(G.Add(vc, e.Do(graph.QuadForm(sa, dks[c]))))
		}
		if e.Err != nil {
			return nil, nil, fmt.Errorf("variational: marginals of latent function %d: %w", c, e.Err)
		}
		mu, v = append(mu, mc), append(v, vc)
	}
	return mu, v, nil
}

// Marginals returns the n×C matrices of means and variances at x.
func (b *Built) Marginals(x *G.Node) (mu, v *G.Node, err error) {
	ms, vs, err := b.ClassMarginals(x)
	if err != nil {
		return nil, nil, err
	}
	if mu, err = Stack(ms); err != nil {
		return nil, nil, err
	}
	v, err = Stack(vs)
	return mu, v, err
}

// sameKernel reports whether two latent functions' kernels are one kernel
// (the same parameters), which kernels of slice types (a Sum) cannot
// answer by ==. Every parameter is compared: kernels.WithNoise wrappers of
// one kernel share its parameters but not their own noise.
func sameKernel(a, b kernels.Kernel) bool {
	pa, pb := a.Params(), b.Params()
	if len(pa) == 0 || len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return false
		}
	}
	return true
}

// Stack places n-vectors side by side as the columns of an n×len(cols) matrix.
func Stack(cols []*G.Node) (*G.Node, error) { return graph.Stack(cols...) }
