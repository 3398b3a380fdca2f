package rmgpc

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
)

// isoSE is the paper's kernel (22), σ² exp(−‖x − x'‖²/(2γ)), with one γ for
// every input: kernels.SE has one γ per input (ARD), which the paper's
// protocol does not use.
type isoSE struct {
	Lengthscale *layers.Param // γ, a squared length-scale; stored as log γ
	Variance    *layers.Param // σ²; stored as log σ²
}

var _ kernels.Kernel = (*isoSE)(nil)

func newIsoSE(gamma, variance float64) *isoSE {
	return &isoSE{
		Lengthscale: layers.NewParam("rmgpc/se/lengthscale", tensor.ScalarShape(), gamma, layers.Exp),
		Variance:    layers.NewParam("rmgpc/se/variance", tensor.ScalarShape(), variance, layers.Exp),
	}
}

// K implements kernels.Kernel.
func (k *isoSE) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	d2 := e.Do(graph.SqDist(x, z))
	raw := e.Do(s.Raw(k.Lengthscale))
	inv := e.Do(G.Exp(e.Do(G.Neg(raw))))
	t := e.Do(G.HadamardProd(inv, d2))
	kk := e.Do(graph.Exp(e.Do(G.HadamardProd(t, G.NewConstant(-0.5)))))
	v := e.Do(s.Node(k.Variance))
	return e.Do(G.HadamardProd(v, kk)), e.Err
}

// Diag implements kernels.Kernel.
func (k *isoSE) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	v, err := s.Node(k.Variance)
	if err != nil {
		return nil, err
	}
	return graph.BroadcastTo(v, tensor.Shape{x.Shape()[0]}, []int{0})
}

// Params implements kernels.Kernel.
func (k *isoSE) Params() []*layers.Param { return []*layers.Param{k.Lengthscale, k.Variance} }
