package kernels

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// IsoSE is the robust multi-class paper's kernel (Hernández-Lobato et al.
// 2011, eq. 22), k(x, z) = exp(−‖x − z‖²/(2γ)), with one squared
// length-scale γ for every input and no amplitude: under a step likelihood
// only the kernel's ratio to the jitter matters, so an amplitude would
// leave the evidence nearly flat along it.
type IsoSE struct {
	// Lengthscale is γ, stored as log γ.
	Lengthscale *layers.Param
}

// NewIsoSE returns the kernel with initial γ; its parameter is named
// name+"/lengthscale".
func NewIsoSE(name string, gamma float64) *IsoSE {
	return &IsoSE{Lengthscale: layers.NewParam(name+"/lengthscale", tensor.ScalarShape(), gamma, layers.Exp)}
}

// K implements Kernel.
func (k *IsoSE) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	d2 := e.Do(graph.SqDist(x, z))
	raw := e.Do(s.Raw(k.Lengthscale))
	inv := e.Do(G.Exp(e.Do(G.Neg(raw))))
	t := e.Do(G.HadamardProd(inv, d2))
	return e.Do(graph.Exp(e.Do(G.HadamardProd(t, G.NewConstant(-0.5))))), e.Err
}

// Diag implements Kernel: k(x, x) = 1.
func (k *IsoSE) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	n := x.Shape()[0]
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	return graph.Input(s.G, fmt.Sprintf("iso/ones%d", n), tensor.Shape{n}, ones), nil
}

// Params implements Kernel.
func (k *IsoSE) Params() []*layers.Param { return []*layers.Param{k.Lengthscale} }

// WithNoise is a kernel plus a white noise ϑ² of its own (Noiser): the
// robust paper's SMGPC gives every class's latent function the shared
// kernel plus a learnt ϑ_k², added to the prior covariance of the latent
// values and to every marginal variance, not to cross-covariances.
type WithNoise struct {
	Kernel
	// Theta is ϑ², stored as log ϑ².
	Theta *layers.Param
}

// NewWithNoise wraps k with a white noise ϑ² starting at noise, named
// name+"/latent-noise".
func NewWithNoise(name string, k Kernel, noise float64) *WithNoise {
	return &WithNoise{Kernel: k, Theta: layers.NewParam(name+"/latent-noise", tensor.ScalarShape(), noise, layers.Exp)}
}

// Noise implements Noiser: ϑ², plus the wrapped kernel's own white noise.
func (k *WithNoise) Noise(s *layers.Scope) (*G.Node, error) {
	v, err := s.Node(k.Theta)
	if err != nil {
		return nil, err
	}
	if nk, ok := k.Kernel.(Noiser); ok {
		w, err := nk.Noise(s)
		if err != nil {
			return nil, err
		}
		return G.Add(w, v)
	}
	return v, nil
}

// Params implements Kernel: the wrapped kernel's and ϑ².
func (k *WithNoise) Params() []*layers.Param {
	return append(append([]*layers.Param(nil), k.Kernel.Params()...), k.Theta)
}

// The robust paper's kernel is registered as "se-gamma": γ starts at 1, the
// unit of standardised inputs (the paper's protocol), not at a data-driven
// length-scale, and there is no amplitude to initialise.
func init() {
	err := Register("se-gamma", func(c Config) (Kernel, error) {
		if err := noArgs("se-gamma", c); err != nil {
			return nil, err
		}
		return NewIsoSE(c.Name, 1), nil
	})
	if err != nil {
		panic(err)
	}
}
