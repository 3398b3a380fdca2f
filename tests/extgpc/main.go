// Command extgpc is gpc extended from outside the library: it registers a
// kernel (the rational quadratic, "rq") and a binary likelihood (the
// complementary log-log, "cloglog"), both written as graph code here, and
// then runs the whole gpc command line with them. Every command names them
// like the built-in parts: gpc train --kernel 'rq+linear' --likelihood
// cloglog, a spec's kernel: rq, gpc predict on the saved model.
package main

import (
	"fmt"
	"os"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/cmd/gpc/cli"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

func init() {
	if err := kernels.Register("rq", newRQ); err != nil {
		panic(err)
	}
	if err := likelihoods.Register("cloglog", func(c likelihoods.Config) likelihoods.Likelihood { return CLogLog{Points: c.Points} }); err != nil {
		panic(err)
	}
}

func main() { os.Exit(cli.Main(os.Args[1:])) }

// RQ is the rational quadratic kernel σ² (1 + ‖x−z‖²/(2αℓ))^(−α) with α
// fixed at 2 and one length-scale ℓ (dividing squared distances).
type RQ struct {
	Alpha                  float64
	Scale, Variance, White *layers.Param
}

// newRQ starts ℓ at the data's median distance, as the stationary
// built-ins do; without data (a model being loaded) at 1.
func newRQ(c kernels.Config) (kernels.Kernel, error) {
	if len(c.Args) > 0 {
		return nil, fmt.Errorf("rq takes no arguments")
	}
	ell := 1.0
	if c.Data != nil {
		ell = c.Data.MedianDistance()
	}
	return &RQ{
		Alpha:    2,
		Scale:    layers.NewParam(c.Name+"/scale", tensor.ScalarShape(), ell, layers.Exp),
		Variance: layers.NewParam(c.Name+"/variance", tensor.ScalarShape(), 1, layers.Exp),
		White:    layers.NewParam(c.Name+"/white", tensor.ScalarShape(), 1e-3, layers.Exp),
	}, nil
}

// K implements kernels.Kernel.
func (k *RQ) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	d2 := e.Do(graph.SqDist(x, z))
	ell := e.Do(s.Node(k.Scale))
	u := e.Do(G.Add(e.Do(G.HadamardDiv(d2, e.Do(G.HadamardProd(ell, G.NewConstant(2*k.Alpha))))), G.NewConstant(1.0)))
	kk := e.Do(G.Exp(e.Do(G.HadamardProd(e.Do(G.Log(u)), G.NewConstant(-k.Alpha)))))
	return e.Do(G.HadamardProd(e.Do(s.Node(k.Variance)), kk)), e.Err
}

// Diag implements kernels.Kernel.
func (k *RQ) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	v, err := s.Node(k.Variance)
	if err != nil {
		return nil, err
	}
	return graph.BroadcastTo(v, tensor.Shape{x.Shape()[0]}, []int{0})
}

// Noise implements kernels.Noiser: the white-noise variance on K_ZZ.
func (k *RQ) Noise(s *layers.Scope) (*G.Node, error) { return s.Node(k.White) }

// Params implements kernels.Kernel.
func (k *RQ) Params() []*layers.Param { return []*layers.Param{k.Scale, k.Variance, k.White} }

// CLogLog is the binary likelihood p(y=1|f) = 1 − exp(−e^f).
type CLogLog struct{ Points int }

// Latent implements likelihoods.Likelihood: one latent function.
func (CLogLog) Latent(int) int { return 1 }

// Classes implements likelihoods.ClassCounter: binary.
func (CLogLog) Classes() int { return 2 }

// Params implements likelihoods.Likelihood: none.
func (CLogLog) Params() []*layers.Param { return nil }

// Targets implements likelihoods.Likelihood: the labels as 0/1.
func (CLogLog) Targets(labels []int, classes int) ([]float64, int) {
	y := make([]float64, len(labels))
	for i, v := range labels {
		y[i] = float64(v)
	}
	return y, 1
}

// logs returns log p(y=1|f) = log(1 − exp(−e^f)) and log p(y=0|f) = −e^f.
func (CLogLog) logs(f *G.Node) (l1, l0 *G.Node, err error) {
	e := &graph.Chain{}
	l0 = e.Do(G.Neg(e.Do(G.Exp(f))))
	l1 = e.Do(G.Log1p(e.Do(G.Neg(e.Do(G.Exp(l0))))))
	return l1, l0, e.Err
}

// ExpectedLogLik implements likelihoods.Likelihood by Gauss–Hermite
// quadrature.
func (l CLogLog) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	m, vv, yv := e.Do(likelihoods.Column(mu, 0)), e.Do(likelihoods.Column(v, 0)), e.Do(likelihoods.Column(y, 0))
	e1 := e.Do(likelihoods.Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) { a, _, err := l.logs(f); return a, err }))
	e0 := e.Do(likelihoods.Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) { _, b, err := l.logs(f); return b, err }))
	return e.Do(G.Add(e.Do(G.HadamardProd(yv, e1)), e.Do(G.HadamardProd(e.Do(G.Sub(G.NewConstant(1.0), yv)), e0)))), e.Err
}

// Predict implements likelihoods.Likelihood.
func (l CLogLog) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	m, vv := e.Do(likelihoods.Column(mu, 0)), e.Do(likelihoods.Column(v, 0))
	p0 := e.Do(likelihoods.Expect1D(s.G, m, vv, l.Points, func(f *G.Node) (*G.Node, error) {
		_, b, err := l.logs(f)
		if err != nil {
			return nil, err
		}
		return G.Exp(b)
	}))
	return e.Do(likelihoods.Columns(p0, e.Do(G.Sub(G.NewConstant(1.0), p0)))), e.Err
}
