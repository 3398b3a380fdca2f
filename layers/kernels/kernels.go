// Package kernels provides covariance functions as graph code. A kernel is
// anything that can build its cross-covariance and diagonal from graph nodes;
// users add their own by implementing Kernel (see the tests in
// github.com/gpc-dev/gpc/tests for a kernel defined outside this package).
package kernels

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// Kernel is a covariance function built as graph code.
type Kernel interface {
	// K returns the n×m cross-covariance between the rows of x (n×d) and z (m×d).
	K(s *layers.Scope, x, z *G.Node) (*G.Node, error)
	// Diag returns the n-vector k(x_i, x_i).
	Diag(s *layers.Scope, x *G.Node) (*G.Node, error)
	// Params returns the kernel's parameters.
	Params() []*layers.Param
}

// DotProduct is implemented by kernels of a weighted inner product,
// k(x,z) = κ(q) with q = Σ_j w_j x_j z_j, whose gradient in x is
// κ'(q)·w∘z. Through it a posterior mean's input gradient has a closed
// form (NIMGP_FO's first-order term, see variational.Built).
type DotProduct interface {
	Kernel
	// Inner returns the n×m weighted inner products x·diag(w)·zᵀ.
	Inner(s *layers.Scope, x, z *G.Node) (*G.Node, error)
	// InnerWeights returns the D-vector w.
	InnerWeights(s *layers.Scope) (*G.Node, error)
	// Profile returns κ(q) (the cross-covariances, as K gives them) and
	// κ'(q), elementwise.
	Profile(s *layers.Scope, q *G.Node) (k, dk *G.Node, err error)
}

// Noiser is implemented by kernels with a white-noise variance σ₀², which the
// papers add to K(Z,Z) and to every marginal variance k(x,x) but not to
// cross-covariances.
type Noiser interface {
	Noise(s *layers.Scope) (*G.Node, error)
}

// KZZ returns K(Z,Z) + (σ₀² + jitter)·I; jitter is a scalar node so that a
// training loop can raise it without rebuilding the graph (see Jitter).
func KZZ(k Kernel, s *layers.Scope, z *G.Node, jitter *G.Node) (*G.Node, error) {
	kzz, err := k.K(s, z, z)
	if err != nil {
		return nil, err
	}
	add, err := noisePlus(k, s, jitter)
	if err != nil {
		return nil, err
	}
	m := z.Shape()[0]
	d, err := graph.BroadcastTo(add, tensor.Shape{m}, []int{0})
	if err != nil {
		return nil, err
	}
	if d, err = graph.DiagMatrix(d); err != nil {
		return nil, err
	}
	return G.Add(kzz, d)
}

// KDiag returns k(x_i,x_i) + σ₀² + jitter, the prior marginal variances.
func KDiag(k Kernel, s *layers.Scope, x *G.Node, jitter *G.Node) (*G.Node, error) {
	d, err := k.Diag(s, x)
	if err != nil {
		return nil, err
	}
	add, err := noisePlus(k, s, jitter)
	if err != nil {
		return nil, err
	}
	b, err := graph.BroadcastTo(add, d.Shape(), []int{0})
	if err != nil {
		return nil, err
	}
	return G.Add(d, b)
}

// Jitter returns a fixed scalar parameter holding a jitter value, for KZZ and KDiag.
func Jitter(name string, v float64) *layers.Param {
	p := layers.NewParam(name, tensor.ScalarShape(), v, layers.Identity)
	p.Fixed = true
	return p
}

func noisePlus(k Kernel, s *layers.Scope, j *G.Node) (*G.Node, error) {
	nk, ok := k.(Noiser)
	if !ok {
		return j, nil
	}
	n, err := nk.Noise(s)
	if err != nil {
		return nil, err
	}
	return G.Add(n, j)
}

// ARD holds what the stationary and dot-product kernels share: per-dimension
// scales ℓ_j that divide squared differences (the papers' parameterisation:
// ℓ_j is a squared length-scale), an amplitude σ² and a white noise σ₀².
// The shape of Lengthscales decides the kind: a d-vector is ARD, a scalar
// one ℓ shared by every dimension (isotropic).
type ARD struct {
	Lengthscales *layers.Param // d, or a scalar (isotropic); positive
	Variance     *layers.Param // σ², positive
	WhiteNoise   *layers.Param // σ₀², positive; nil for none
	// d is the input width; the scalar ℓ of an isotropic kernel does not
	// carry it.
	d int
	// init are the values it was built with (Initial).
	init Init
}

func newARD(name string, d int, ell, variance, noise float64) ARD {
	return newScales(name, d, tensor.Shape{d}, ell, variance, noise)
}

// newScales is newARD with the length-scales' shape given: {d} or scalar.
func newScales(name string, d int, shape tensor.Shape, ell, variance, noise float64) ARD {
	a := ARD{
		Lengthscales: layers.NewParam(name+"/lengthscales", shape, ell, layers.Exp),
		Variance:     layers.NewParam(name+"/variance", tensor.ScalarShape(), variance, layers.Exp),
		d:            d,
		init:         Init{Lengthscale: ell, Variance: variance, Noise: noise},
	}
	if noise > 0 {
		a.WhiteNoise = layers.NewParam(name+"/white", tensor.ScalarShape(), noise, layers.Exp)
	}
	return a
}

// Initial implements InitReporter: the ℓ, σ² and σ₀² the kernel was built
// with, exactly as given (the parameters hold their logarithms).
func (a ARD) Initial() Init { return a.init }

// Isotropic reports whether one ℓ serves every dimension.
func (a ARD) Isotropic() bool { return a.Lengthscales.Shape.IsScalar() }

// width is the number of input columns the kernel takes.
func (a ARD) width() int {
	if a.Isotropic() {
		return a.d
	}
	return a.Lengthscales.Shape[0]
}

// rawScales returns the d-vector of log ℓ_j: the parameter itself for ARD,
// its one value broadcast for an isotropic kernel (so that its gradient is
// the sum over dimensions).
func (a ARD) rawScales(s *layers.Scope) (*G.Node, error) {
	raw, err := s.Raw(a.Lengthscales)
	if err != nil || !a.Isotropic() {
		return raw, err
	}
	return graph.BroadcastTo(raw, tensor.Shape{a.d}, []int{0})
}

// Params returns ℓ, σ² and σ₀² (if any).
func (a ARD) Params() []*layers.Param {
	ps := []*layers.Param{a.Lengthscales, a.Variance}
	if a.WhiteNoise != nil {
		ps = append(ps, a.WhiteNoise)
	}
	return ps
}

// Noise returns σ₀² (zero when the kernel has none).
func (a ARD) Noise(s *layers.Scope) (*G.Node, error) {
	if a.WhiteNoise == nil {
		return G.NewScalar(s.G, G.Float64, G.WithValue(0.0), G.WithName("zero")), nil
	}
	return s.Node(a.WhiteNoise)
}

// Scale returns x with column j divided by √ℓ_j.
func (a ARD) Scale(s *layers.Scope, x *G.Node) (*G.Node, error) {
	if err := a.checkWidth(x); err != nil {
		return nil, err
	}
	raw, err := a.rawScales(s)
	if err != nil {
		return nil, err
	}
	inv, err := G.HadamardProd(raw, G.NewConstant(-0.5))
	if err != nil {
		return nil, err
	}
	if inv, err = G.Exp(inv); err != nil {
		return nil, err
	}
	return graph.ScaleColumns(x, inv)
}

// weights returns w = 1/ℓ as a vector and as a D×1 column.
func (a ARD) weights(s *layers.Scope) (vec, col *G.Node, err error) {
	raw, err := a.rawScales(s)
	if err != nil {
		return nil, nil, err
	}
	e := &graph.Chain{}
	vec = e.Do(G.Exp(e.Do(G.Neg(raw))))
	col = e.Do(graph.Reshape(vec, tensor.Shape{a.width(), 1}))
	return vec, col, e.Err
}

// weightedDot returns X·diag(1/ℓ)·Zᵀ, the weights applied in the product
// (graph.WeightedDot): no weighted copy of either side is made, and a data
// matrix gets a gradient only if something asks for one.
func (a ARD) weightedDot(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	if err := a.checkWidth(x); err != nil {
		return nil, err
	}
	if err := a.checkWidth(z); err != nil {
		return nil, err
	}
	w, _, err := a.weights(s)
	if err != nil {
		return nil, err
	}
	return graph.WeightedDot(x, z, w)
}

// weightedSqNorms returns the n-vector Σ_j x_j²/ℓ_j.
func (a ARD) weightedSqNorms(s *layers.Scope, x *G.Node) (*G.Node, error) {
	if err := a.checkWidth(x); err != nil {
		return nil, err
	}
	_, col, err := a.weights(s)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	q := e.Do(graph.MatMul(e.Do(graph.Square(x)), col, false, false))
	return e.Do(graph.Reshape(q, tensor.Shape{x.Shape()[0]})), e.Err
}

func (a ARD) checkWidth(x *G.Node) error {
	xs := x.Shape()
	if len(xs) != 2 || xs[1] != a.width() {
		return fmt.Errorf("kernels: input of shape %v, kernel %s expects %d columns", xs, a.Lengthscales.Name, a.width())
	}
	return nil
}

func (a ARD) amplitudeTimes(s *layers.Scope, k *G.Node) (*G.Node, error) {
	v, err := s.Node(a.Variance)
	if err != nil {
		return nil, err
	}
	return G.HadamardProd(v, k)
}

func (a ARD) constantDiag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	v, err := s.Node(a.Variance)
	if err != nil {
		return nil, err
	}
	return graph.BroadcastTo(v, tensor.Shape{x.Shape()[0]}, []int{0})
}

// distanceTerms returns what a stationary kernel's fused op takes: the
// weighted cross products x·diag(w)·zᵀ, the weighted squared norms of x's
// and z's rows (one node when z is x) and σ².
func (a ARD) distanceTerms(s *layers.Scope, x, z *G.Node) (cross, xx, zz, v *G.Node, err error) {
	e := &graph.Chain{}
	cross = e.Do(a.weightedDot(s, x, z))
	xx = e.Do(a.weightedSqNorms(s, x))
	zz = xx
	if z != x {
		zz = e.Do(a.weightedSqNorms(s, z))
	}
	v = e.Do(s.Node(a.Variance))
	return cross, xx, zz, v, e.Err
}

// SE is the squared-exponential kernel with ARD,
// k(x,z) = σ² exp(−½ Σ_j (x_j−z_j)²/ℓ_j), or isotropic (one ℓ).
type SE struct{ ARD }

// NewSE returns an SE-ARD kernel on d inputs; noise is σ₀² (0 for none).
func NewSE(name string, d int, lengthscale, variance, noise float64) *SE {
	return &SE{newARD(name, d, lengthscale, variance, noise)}
}

// NewSEIso returns an isotropic SE kernel on d inputs: one ℓ for all.
func NewSEIso(name string, d int, lengthscale, variance, noise float64) *SE {
	return &SE{newScales(name, d, tensor.ScalarShape(), lengthscale, variance, noise)}
}

// K implements Kernel: σ² exp(−½ (‖x‖²_w + ‖z‖²_w − 2 x·diag(w)·z)), w = 1/ℓ.
func (k *SE) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	cross, xx, zz, v, err := k.distanceTerms(s, x, z)
	if err != nil {
		return nil, err
	}
	return graph.ExpQuad(cross, xx, zz, v)
}

// Diag implements Kernel.
func (k *SE) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) { return k.constantDiag(s, x) }

// Matern is the Matérn kernel with ν = 3/2 or 5/2 and ARD (or isotropic,
// as SE), in r = √(Σ_j (x_j−z_j)²/ℓ_j).
type Matern struct {
	ARD
	Nu float64
}

// NewMatern returns a Matérn kernel with nu 1.5 or 2.5.
func NewMatern(name string, nu float64, d int, lengthscale, variance, noise float64) (*Matern, error) {
	if nu != 1.5 && nu != 2.5 {
		return nil, fmt.Errorf("kernels: Matérn ν = %g; only 1.5 and 2.5 are supported", nu)
	}
	return &Matern{newARD(name, d, lengthscale, variance, noise), nu}, nil
}

// NewMaternIso returns an isotropic Matérn kernel (one ℓ) with nu 1.5 or 2.5.
func NewMaternIso(name string, nu float64, d int, lengthscale, variance, noise float64) (*Matern, error) {
	k, err := NewMatern(name, nu, d, lengthscale, variance, noise)
	if err != nil {
		return nil, err
	}
	k.ARD = newScales(name, d, tensor.ScalarShape(), lengthscale, variance, noise)
	return k, nil
}

// K implements Kernel: σ² f(r) with r² = ‖x‖²_w + ‖z‖²_w − 2 x·diag(w)·z
// (w = 1/ℓ) from the weighted products, as SE's K, and f evaluated by
// graph.Matern in one op.
func (k *Matern) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	cross, xx, zz, v, err := k.distanceTerms(s, x, z)
	if err != nil {
		return nil, err
	}
	return graph.Matern(k.Nu, cross, xx, zz, v)
}

// Diag implements Kernel.
func (k *Matern) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) { return k.constantDiag(s, x) }

// Polynomial is the polynomial kernel with ARD, k(x,z) = σ² (Σ_j x_j z_j/ℓ_j + 1)^p,
// used with p = 9 on MNIST.
type Polynomial struct {
	ARD
	Degree int
}

// NewPolynomial returns a polynomial ARD kernel of the given degree.
func NewPolynomial(name string, degree, d int, lengthscale, variance, noise float64) *Polynomial {
	return &Polynomial{newARD(name, d, lengthscale, variance, noise), degree}
}

// K implements Kernel.
func (k *Polynomial) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	dot := e.Do(k.weightedDot(s, x, z))
	return k.power(s, e, dot)
}

// Inner implements DotProduct: x·diag(1/ℓ)·zᵀ.
func (k *Polynomial) Inner(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	return k.weightedDot(s, x, z)
}

// InnerWeights implements DotProduct: the D-vector 1/ℓ.
func (k *Polynomial) InnerWeights(s *layers.Scope) (*G.Node, error) {
	w, _, err := k.weights(s)
	return w, err
}

// Profile implements DotProduct: κ(q) = σ²(q + 1)^p and κ'(q) = σ²p(q + 1)^(p−1).
func (k *Polynomial) Profile(s *layers.Scope, q *G.Node) (kq, dk *G.Node, err error) {
	e := &graph.Chain{}
	kq = e.Do(k.power(s, e, q))
	if k.Degree == 0 {
		return kq, e.Do(G.HadamardProd(q, G.NewConstant(0.0))), e.Err
	}
	// κ' with the variance node itself as its factor: q's adjoints from
	// κ and κ' are then summed in one pass (graph.PowAffineScaled).
	v := e.Do(s.Node(k.Variance))
	dk = e.Do(graph.PowAffineScaled(q, v, 1, k.Degree-1, float64(k.Degree)))
	return kq, dk, e.Err
}

// power returns σ²(q + 1)^p for the weighted inner products q, one op
// (graph.PowAffine) where an addition, a power and a scaling were three.
func (k *Polynomial) power(s *layers.Scope, e *graph.Chain, q *G.Node) (*G.Node, error) {
	v := e.Do(s.Node(k.Variance))
	if e.Err != nil {
		return nil, e.Err
	}
	return graph.PowAffine(q, v, 1, k.Degree)
}

// Diag implements Kernel.
func (k *Polynomial) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	q := e.Do(k.weightedSqNorms(s, x))
	return k.power(s, e, q)
}

// Linear is k(x,z) = Σ_j x_j z_j / ℓ_j (ARD weights 1/ℓ_j, no separate amplitude).
type Linear struct {
	Lengthscales *layers.Param
}

// NewLinear returns a linear ARD kernel on d inputs.
func NewLinear(name string, d int, lengthscale float64) *Linear {
	return &Linear{layers.NewParam(name+"/lengthscales", tensor.Shape{d}, lengthscale, layers.Exp)}
}

// Params implements Kernel.
func (k *Linear) Params() []*layers.Param { return []*layers.Param{k.Lengthscales} }

func (k *Linear) ard() ARD { return ARD{Lengthscales: k.Lengthscales, d: k.Lengthscales.Shape[0]} }

// K implements Kernel.
func (k *Linear) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	return k.ard().weightedDot(s, x, z)
}

// Diag implements Kernel.
func (k *Linear) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	return k.ard().weightedSqNorms(s, x)
}

// Sum is k₁ + k₂ + …; its white noise is the sum of its parts'.
type Sum []Kernel

// Product is k₁ · k₂ · …; white noise is not defined for products, so none of
// the factors' σ₀² is used.
type Product []Kernel

// Composite is what a kernel expression that combines kernels builds: its
// Sum or Product, whose registered parts carry no white noise of their
// own, and one white noise σ₀² for the whole. A part's σ₀² would be
// unidentifiable in a sum (only the total enters K_ZZ and k(x,x)) and
// unused in a product, yet still a parameter to store and optimise.
type Composite struct {
	// Kernel is the Sum or Product of the parts.
	Kernel
	// WhiteNoise is σ₀² (stored as log σ₀²), named prefix+"/white"; nil
	// when no part would have had one (a sum of linear kernels).
	WhiteNoise *layers.Param
	// kept are parts reached through sums only that kept a white noise of
	// their own (a user's kernel that cannot hand it over): it is added,
	// as a Sum always did.
	kept []Noiser
}

// Params implements Kernel: the parts', then σ₀².
func (c *Composite) Params() []*layers.Param {
	ps := append([]*layers.Param(nil), c.Kernel.Params()...)
	if c.WhiteNoise != nil {
		ps = append(ps, c.WhiteNoise)
	}
	return ps
}

// Noise implements Noiser: σ₀², plus the noise of any part that kept its own.
func (c *Composite) Noise(s *layers.Scope) (*G.Node, error) {
	var acc *G.Node
	if c.WhiteNoise != nil {
		v, err := s.Node(c.WhiteNoise)
		if err != nil {
			return nil, err
		}
		acc = v
	}
	for _, k := range c.kept {
		v, err := k.Noise(s)
		if err != nil {
			return nil, err
		}
		if acc == nil {
			acc = v
		} else if acc, err = G.Add(acc, v); err != nil {
			return nil, err
		}
	}
	if acc == nil {
		return G.NewScalar(s.G, G.Float64, G.WithValue(0.0), G.WithName("zero")), nil
	}
	return acc, nil
}

// DefaultJitter implements JitterDefaulter: the combination's.
func (c *Composite) DefaultJitter() float64 { return JitterOf(c.Kernel) }

// whiteDropper is a kernel that can hand its white noise over to the
// composite it is a part of: it drops the parameter and returns the σ₀²
// it started at (0 when it had none).
type whiteDropper interface {
	dropWhite() float64
}

// dropWhite implements whiteDropper for the ARD family.
func (a *ARD) dropWhite() float64 {
	if a.WhiteNoise == nil {
		return 0
	}
	a.WhiteNoise = nil
	return a.init.Noise
}

// K implements Kernel.
func (ks Sum) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	return combine(ks, func(k Kernel) (*G.Node, error) { return k.K(s, x, z) }, G.Add)
}

// Diag implements Kernel.
func (ks Sum) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	return combine(ks, func(k Kernel) (*G.Node, error) { return k.Diag(s, x) }, G.Add)
}

// Params implements Kernel.
func (ks Sum) Params() []*layers.Param { return allParams(ks) }

// Noise implements Noiser.
func (ks Sum) Noise(s *layers.Scope) (*G.Node, error) {
	var ns []Kernel
	for _, k := range ks {
		if _, ok := k.(Noiser); ok {
			ns = append(ns, k)
		}
	}
	if len(ns) == 0 {
		return G.NewScalar(s.G, G.Float64, G.WithValue(0.0), G.WithName("zero")), nil
	}
	return combine(ns, func(k Kernel) (*G.Node, error) { return k.(Noiser).Noise(s) }, G.Add)
}

// K implements Kernel.
func (ks Product) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	return combine(ks, func(k Kernel) (*G.Node, error) { return k.K(s, x, z) }, G.HadamardProd)
}

// Diag implements Kernel.
func (ks Product) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	return combine(ks, func(k Kernel) (*G.Node, error) { return k.Diag(s, x) }, G.HadamardProd)
}

// Params implements Kernel.
func (ks Product) Params() []*layers.Param { return allParams(ks) }

func combine(ks []Kernel, part func(Kernel) (*G.Node, error), op func(a, b *G.Node) (*G.Node, error)) (*G.Node, error) {
	if len(ks) == 0 {
		return nil, fmt.Errorf("kernels: empty combination")
	}
	acc, err := part(ks[0])
	if err != nil {
		return nil, err
	}
	for _, k := range ks[1:] {
		n, err := part(k)
		if err != nil {
			return nil, err
		}
		if acc, err = op(acc, n); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func allParams(ks []Kernel) []*layers.Param {
	var ps []*layers.Param
	for _, k := range ks {
		ps = append(ps, k.Params()...)
	}
	return ps
}
