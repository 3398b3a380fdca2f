package laplace

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// likGraph is log p(y | F) of any likelihood as graph code
// (likelihoods.LogLik) with every derivative the Laplace approximation
// needs taken by graph.Grad:
//
//	ℓ(F, β) = Σ_i log p(y_i | F_i) (+ log p(β) for a likelihood with a Prior)
//
// for the n×L latent values F and the likelihood's trainable parameters β
// (raw storage). ℓ is a sum over rows, so its Hessian in F is
// block-diagonal with one L×L block per row; column m of every block is one
// more Grad, H_m = ∂/∂F Σ_i (∂ℓ/∂F)_{i,m}, so L second-order passes give all
// n blocks. Two scalars built on those give the third-order pieces of the
// evidence gradient: q = Σ_m ⟨S_m, H_m⟩ for constant S_m and p = ⟨U, ∂ℓ/∂F⟩
// for constant U.
type likGraph struct {
	n, l  int
	s     *layers.Scope
	fData []float64
	uData []float64
	sData [][]float64

	beta  []*layers.Param
	ll    *G.Node
	gradF *G.Node
	gradB G.Nodes
	hess  []*G.Node
	dqdF  *G.Node
	dqdB  G.Nodes
	dpdB  G.Nodes

	progVal, progNewton, progEvid, progImpl *graph.Program
}

func newLikGraph(lik likelihoods.Likelihood, y []float64, width, n, l int) (*likGraph, error) {
	g := G.NewGraph()
	lg := &likGraph{n: n, l: l, s: layers.NewScope(g), fData: make([]float64, n*l), uData: make([]float64, n*l)}
	shape := tensor.Shape{n, l}
	fIn := graph.Input(g, "laplace/F", shape, lg.fData)
	yIn := graph.Input(g, "laplace/Y", tensor.Shape{n, width}, append([]float64(nil), y...))
	uIn := graph.Input(g, "laplace/U", shape, lg.uData)
	e := &graph.Chain{}
	rows := e.Do(likelihoods.LogLik(lik, lg.s, fIn, yIn))
	if e.Err != nil {
		return nil, fmt.Errorf("laplace: the likelihood's log p(y | f): %w", e.Err)
	}
	if rows.Dims() != 1 || rows.Shape()[0] != n {
		return nil, fmt.Errorf("laplace: the likelihood's log p(y | f) has shape %v, want (%d)", rows.Shape(), n)
	}
	lg.ll = e.Do(G.Sum(rows))
	if pr, ok := lik.(likelihoods.Prior); ok {
		lp, err := pr.LogPrior(lg.s)
		if err != nil {
			return nil, fmt.Errorf("laplace: the likelihood's prior: %w", err)
		}
		if lp != nil {
			lg.ll = e.Do(G.Add(lg.ll, lp))
		}
	}
	if e.Err != nil {
		return nil, e.Err
	}
	var betaN G.Nodes
	lg.beta, betaN = lg.s.TrainableAmong(lik.Params())
	gr, err := graph.Grad(e.Do(G.Add(lg.ll, e.Do(G.HadamardProd(e.Do(G.Sum(fIn)), G.NewConstant(0.0))))), append(G.Nodes{fIn}, betaN...)...)
	if err != nil {
		return nil, fmt.Errorf("laplace: gradient of log p(y | f): %w", err)
	}
	lg.gradF, lg.gradB = gr[0], gr[1:]

	// 0·ΣF (and 0·Σβ) keep every derivative defined where the true one is
	// identically zero (a Gaussian's Hessian is constant, its third
	// derivatives vanish): Grad refuses outputs that do not depend on an input.
	zero := e.Do(G.HadamardProd(e.Do(G.Sum(fIn)), G.NewConstant(0.0)))
	for _, b := range betaN {
		zero = e.Do(G.Add(zero, e.Do(G.HadamardProd(e.Do(G.Sum(b)), G.NewConstant(0.0)))))
	}
	var q *G.Node
	for m := range l {
		sum := e.Do(G.Add(e.Do(G.Sum(e.Do(graph.Column(lg.gradF, m)))), zero))
		if e.Err != nil {
			return nil, e.Err
		}
		h, err := graph.Grad(sum, fIn)
		if err != nil {
			return nil, fmt.Errorf("laplace: Hessian column %d of log p(y | f): %w", m, err)
		}
		lg.hess = append(lg.hess, h[0])
		sd := make([]float64, n*l)
		lg.sData = append(lg.sData, sd)
		sIn := graph.Input(g, fmt.Sprintf("laplace/S%d", m), shape, sd)
		term := e.Do(G.Sum(e.Do(G.HadamardProd(h[0], sIn))))
		if q == nil {
			q = term
		} else {
			q = e.Do(G.Add(q, term))
		}
	}
	q = e.Do(G.Add(q, zero))
	p := e.Do(G.Add(e.Do(G.Sum(e.Do(G.HadamardProd(lg.gradF, uIn)))), zero))
	if e.Err != nil {
		return nil, fmt.Errorf("laplace: building the evidence terms: %w", e.Err)
	}
	dq, err := graph.Grad(q, append(G.Nodes{fIn}, betaN...)...)
	if err != nil {
		return nil, fmt.Errorf("laplace: third derivatives of log p(y | f): %w", err)
	}
	lg.dqdF, lg.dqdB = dq[0], dq[1:]
	if len(betaN) > 0 {
		if lg.dpdB, err = graph.Grad(p, betaN...); err != nil {
			return nil, fmt.Errorf("laplace: mixed derivatives of log p(y | f): %w", err)
		}
	}
	if lg.progVal, err = graph.Compile(g, lg.ll); err != nil {
		return nil, err
	}
	if lg.progNewton, err = graph.Compile(g, append(G.Nodes{lg.ll, lg.gradF}, lg.hess...)...); err != nil {
		return nil, err
	}
	evid := append(G.Nodes{lg.dqdF}, lg.gradB...)
	if lg.progEvid, err = graph.Compile(g, append(evid, lg.dqdB...)...); err != nil {
		return nil, err
	}
	if len(lg.dpdB) > 0 {
		if lg.progImpl, err = graph.Compile(g, lg.dpdB...); err != nil {
			return nil, err
		}
	}
	return lg, nil
}

// sync loads the likelihood's parameters (call after they change).
func (lg *likGraph) sync() error { return lg.s.Sync() }

// value returns ℓ(F).
func (lg *likGraph) value(f []float64) (float64, error) {
	copy(lg.fData, f)
	if err := lg.progVal.Run(); err != nil {
		return 0, err
	}
	return lg.progVal.Scalar(lg.ll)
}

// newtonTerms returns ℓ, ∂ℓ/∂F (n×L) and the per-row Hessian blocks,
// hess[i*L*L + m*L + k] = ∂²ℓ_i/∂f_im∂f_ik.
func (lg *likGraph) newtonTerms(f []float64) (ll float64, grad, hess []float64, err error) {
	copy(lg.fData, f)
	p := lg.progNewton
	if err = p.Run(); err != nil {
		return 0, nil, nil, err
	}
	if ll, err = p.Scalar(lg.ll); err != nil {
		return 0, nil, nil, err
	}
	if grad, err = p.Float64s(lg.gradF); err != nil {
		return 0, nil, nil, err
	}
	grad = append([]float64(nil), grad...)
	n, l := lg.n, lg.l
	if err := finite(grad); err != nil {
		return 0, nil, nil, err
	}
	hess = make([]float64, n*l*l)
	for m, h := range lg.hess {
		c, err := p.Float64s(h)
		if err != nil {
			return 0, nil, nil, err
		}
		if err := finite(c); err != nil {
			return 0, nil, nil, err
		}
		for i := range n {
			for k := range l {
				hess[i*l*l+m*l+k] = c[i*l+k]
			}
		}
	}
	return ll, grad, hess, nil
}

// errNoDerivatives is returned where log p(y | f) has no finite
// derivatives: a step likelihood (robust-max, additive step noise) is
// piecewise constant in f, and its closed form at zero variance divides by
// the zero standard deviation.
var errNoDerivatives = errors.New("laplace: log p(y | f) or its derivatives are not finite (a step likelihood such as robust-max has none: its closed form divides by the zero variance); use the svi or ep engine")

func finite(v []float64) error {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errNoDerivatives
		}
	}
	return nil
}

// evidenceTerms returns ∂q/∂F and, per likelihood parameter, ∂ℓ/∂β and
// ∂q/∂β, for q = Σ_m ⟨S_m, H_m⟩ with S given per row as L×L blocks
// (s[i*L*L + m*L + k] multiplies ∂²ℓ_i/∂f_im∂f_ik).
func (lg *likGraph) evidenceTerms(f, s []float64) (dqdF []float64, gradB, dqdB [][]float64, err error) {
	copy(lg.fData, f)
	n, l := lg.n, lg.l
	for m := range l {
		for i := range n {
			for k := range l {
				lg.sData[m][i*l+k] = s[i*l*l+m*l+k]
			}
		}
	}
	p := lg.progEvid
	if err = p.Run(); err != nil {
		return nil, nil, nil, err
	}
	if dqdF, err = copyOut(p, lg.dqdF); err != nil {
		return nil, nil, nil, err
	}
	for j := range lg.beta {
		gb, err := copyOut(p, lg.gradB[j])
		if err != nil {
			return nil, nil, nil, err
		}
		qb, err := copyOut(p, lg.dqdB[j])
		if err != nil {
			return nil, nil, nil, err
		}
		gradB, dqdB = append(gradB, gb), append(dqdB, qb)
	}
	return dqdF, gradB, dqdB, nil
}

// mixedTerms returns ∂/∂β ⟨U, ∂ℓ/∂F⟩ for a constant n×L matrix U.
func (lg *likGraph) mixedTerms(f, u []float64) ([][]float64, error) {
	if lg.progImpl == nil {
		return nil, nil
	}
	copy(lg.fData, f)
	copy(lg.uData, u)
	if err := lg.progImpl.Run(); err != nil {
		return nil, err
	}
	var out [][]float64
	for _, d := range lg.dpdB {
		v, err := copyOut(lg.progImpl, d)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func copyOut(p *graph.Program, n *G.Node) ([]float64, error) {
	v, err := p.Float64s(n)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), v...), nil
}

func (lg *likGraph) close() {
	for _, p := range []*graph.Program{lg.progVal, lg.progNewton, lg.progEvid, lg.progImpl} {
		if p != nil {
			p.Close()
		}
	}
}
