package kernels

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// SEIsotropic is the squared-exponential kernel with one length-scale for
// every input dimension, k(x,z) = σ² exp(−½ ‖x − z‖²/ℓ) (ℓ, like the ARD
// kernels', divides squared distances: the robust paper's kernel (22) with
// γ = ℓ). It is the HTPC and RMGPC kernel.
type SEIsotropic struct {
	D           int
	Lengthscale *layers.Param // scalar ℓ, positive
	Variance    *layers.Param // σ², positive
	WhiteNoise  *layers.Param // σ₀², positive; nil for none
}

// NewSEIsotropic returns an isotropic SE kernel on d inputs; noise is σ₀²
// (0 for none).
func NewSEIsotropic(name string, d int, lengthscale, variance, noise float64) *SEIsotropic {
	k := &SEIsotropic{
		D:           d,
		Lengthscale: layers.NewParam(name+"/lengthscale", tensor.ScalarShape(), lengthscale, layers.Exp),
		Variance:    layers.NewParam(name+"/variance", tensor.ScalarShape(), variance, layers.Exp),
	}
	if noise > 0 {
		k.WhiteNoise = layers.NewParam(name+"/white", tensor.ScalarShape(), noise, layers.Exp)
	}
	return k
}

// Params implements Kernel: ℓ, σ² and σ₀² (if any).
func (k *SEIsotropic) Params() []*layers.Param {
	ps := []*layers.Param{k.Lengthscale, k.Variance}
	if k.WhiteNoise != nil {
		ps = append(ps, k.WhiteNoise)
	}
	return ps
}

// Amplitude returns σ², so that a model can hold it fixed.
func (k *SEIsotropic) Amplitude() *layers.Param { return k.Variance }

// Amplitude returns σ², so that a model can hold it fixed.
func (a ARD) Amplitude() *layers.Param { return a.Variance }

// Noise implements Noiser: σ₀² (zero when the kernel has none).
func (k *SEIsotropic) Noise(s *layers.Scope) (*G.Node, error) {
	if k.WhiteNoise == nil {
		return G.NewScalar(s.G, G.Float64, G.WithValue(0.0), G.WithName("zero")), nil
	}
	return s.Node(k.WhiteNoise)
}

// weights broadcasts 1/ℓ to a d-vector and a d×1 column, so that the
// weighted products are the ARD kernels' and the gradient sums over d.
func (k *SEIsotropic) weights(s *layers.Scope, x *G.Node) (vec, col *G.Node, err error) {
	xs := x.Shape()
	if len(xs) != 2 || xs[1] != k.D {
		return nil, nil, fmt.Errorf("kernels: input of shape %v, kernel %s expects %d columns", xs, k.Lengthscale.Name, k.D)
	}
	raw, err := s.Raw(k.Lengthscale)
	if err != nil {
		return nil, nil, err
	}
	e := &graph.Chain{}
	w := e.Do(G.Exp(e.Do(G.Neg(raw))))
	vec = e.Do(graph.BroadcastTo(w, tensor.Shape{k.D}, []int{0}))
	col = e.Do(graph.Reshape(vec, tensor.Shape{k.D, 1}))
	return vec, col, e.Err
}

func (k *SEIsotropic) sqNorms(x, col *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	q := e.Do(graph.MatMul(e.Do(graph.Square(x)), col, false, false))
	return e.Do(graph.Reshape(q, tensor.Shape{x.Shape()[0]})), e.Err
}

// K implements Kernel.
func (k *SEIsotropic) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	w, col, err := k.weights(s, x)
	if err != nil {
		return nil, err
	}
	if _, _, err := k.weights(s, z); err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	cross := e.Do(graph.WeightedDot(x, z, w))
	xx := e.Do(k.sqNorms(x, col))
	zz := xx
	if z != x {
		zz = e.Do(k.sqNorms(z, col))
	}
	v := e.Do(s.Node(k.Variance))
	if e.Err != nil {
		return nil, e.Err
	}
	return graph.ExpQuad(cross, xx, zz, v)
}

// Diag implements Kernel: σ² on every row.
func (k *SEIsotropic) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	v, err := s.Node(k.Variance)
	if err != nil {
		return nil, err
	}
	return graph.BroadcastTo(v, tensor.Shape{x.Shape()[0]}, []int{0})
}
