package htpc

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// likGraph is the log-likelihood of the latent Gaussian values as graph
// code, with every derivative the Laplace approximation needs taken by
// graph.Grad:
//
//	ℓ(G, b) = Σ_i [ f_{i,y_i} − log Σ_k exp f_ik ],  f_ik = b_k τ(G_ik),
//
// for G the n×l matrix of latent Gaussian values (row i = the l values at
// x_i). Because ℓ is a sum of per-point terms, its Hessian is block-diagonal
// with one l×l block per point; column m of every block comes from one
// more Grad: H_m = ∂/∂G Σ_i (∂ℓ/∂G)_{i,m}, whose row i is ∂²ℓ_i/∂g_im∂g_i.
// So l second-order passes give all n blocks. Two further scalars, built on
// those, give the third-order pieces of the evidence gradient (see
// evidence.go): q = Σ_m ⟨S_m, H_m⟩ for constant S_m, and p = ⟨U, ∂ℓ/∂G⟩ for
// constant U.
type likGraph struct {
	n, l int
	g    *G.ExprGraph

	// Backing arrays of the inputs: writing into them changes what the
	// next run sees.
	gData, bData, mData, uData []float64
	sData                      [][]float64

	ll, gradG, gradB *G.Node
	hess             []*G.Node
	dqdG, dqdB, dpdB *G.Node

	progVal, progNewton, progEvid, progImpl *graph.Program
}

// newLikGraph builds the graph for labels y (0..l−1) of n points.
func newLikGraph(y []int, l int) (*likGraph, error) {
	n := len(y)
	lg := &likGraph{n: n, l: l, g: G.NewGraph()}
	lg.gData = make([]float64, n*l)
	lg.bData = make([]float64, l)
	lg.mData = make([]float64, n*l)
	lg.uData = make([]float64, n*l)
	yData := make([]float64, n*l)
	for i, c := range y {
		if c < 0 || c >= l {
			return nil, fmt.Errorf("htpc: label %d of point %d outside 0..%d", c, i, l-1)
		}
		yData[i*l+c] = 1
	}
	g := lg.g
	shape := tensor.Shape{n, l}
	gIn := graph.Input(g, "G", shape, lg.gData)
	bIn := graph.Input(g, "b", tensor.Shape{l}, lg.bData)
	// The log-sum-exp stabiliser (each row's largest f) enters as a
	// constant: log Σ exp f = m + log Σ exp(f − m) holds for any m, so
	// treating it as constant changes no derivative.
	mIn := graph.Input(g, "m", shape, lg.mData)
	yIn := graph.Input(g, "Y", shape, yData)
	uIn := graph.Input(g, "U", shape, lg.uData)

	e := &graph.Chain{}
	t := e.Do(tauNode(gIn, 0))
	f := e.Do(graph.ScaleColumns(t, bIn))
	fm := e.Do(G.Sub(f, mIn))
	rows := e.Do(G.Sum(e.Do(graph.Exp(fm)), 1))
	lse := e.Do(G.Sum(e.Do(G.Log(rows))))
	// Σ_k Y_ik (f_ik − m_i) = f_{i,y_i} − m_i, which pairs with lse's m_i.
	fy := e.Do(G.Sum(e.Do(G.HadamardProd(yIn, fm))))
	lg.ll = e.Do(G.Sub(fy, lse))
	if e.Err != nil {
		return nil, fmt.Errorf("htpc: building the likelihood graph: %w", e.Err)
	}
	gr, err := graph.Grad(lg.ll, gIn, bIn)
	if err != nil {
		return nil, fmt.Errorf("htpc: gradient of the likelihood: %w", err)
	}
	lg.gradG, lg.gradB = gr[0], gr[1]

	var q *G.Node
	for m := range l {
		col := e.Do(graph.Column(lg.gradG, m))
		sum := e.Do(G.Sum(col))
		if e.Err != nil {
			return nil, e.Err
		}
		h, err := graph.Grad(sum, gIn)
		if err != nil {
			return nil, fmt.Errorf("htpc: Hessian column %d: %w", m, err)
		}
		lg.hess = append(lg.hess, h[0])
		s := make([]float64, n*l)
		lg.sData = append(lg.sData, s)
		sIn := graph.Input(g, fmt.Sprintf("S%d", m), shape, s)
		term := e.Do(G.Sum(e.Do(G.HadamardProd(h[0], sIn))))
		if q == nil {
			q = term
		} else {
			q = e.Do(G.Add(q, term))
		}
	}
	p := e.Do(G.Sum(e.Do(G.HadamardProd(lg.gradG, uIn))))
	if e.Err != nil {
		return nil, fmt.Errorf("htpc: building the evidence terms: %w", e.Err)
	}
	dq, err := graph.Grad(q, gIn, bIn)
	if err != nil {
		return nil, fmt.Errorf("htpc: third derivatives of the likelihood: %w", err)
	}
	lg.dqdG, lg.dqdB = dq[0], dq[1]
	dp, err := graph.Grad(p, bIn)
	if err != nil {
		return nil, fmt.Errorf("htpc: mixed derivatives of the likelihood: %w", err)
	}
	lg.dpdB = dp[0]

	if lg.progVal, err = graph.Compile(g, lg.ll); err != nil {
		return nil, err
	}
	newton := append(G.Nodes{lg.ll, lg.gradG}, lg.hess...)
	if lg.progNewton, err = graph.Compile(g, newton...); err != nil {
		return nil, err
	}
	if lg.progEvid, err = graph.Compile(g, lg.gradB, lg.dqdG, lg.dqdB); err != nil {
		return nil, err
	}
	if lg.progImpl, err = graph.Compile(g, lg.dpdB); err != nil {
		return nil, err
	}
	return lg, nil
}

// set loads the latent values G (n×l, row-major) and scales b into the
// inputs, with the stabiliser recomputed for them.
func (lg *likGraph) set(gv, b []float64) {
	copy(lg.gData, gv)
	copy(lg.bData, b)
	l := lg.l
	for i := range lg.n {
		m := math.Inf(-1)
		for k := range l {
			m = math.Max(m, b[k]*tau(gv[i*l+k]))
		}
		for k := range l {
			lg.mData[i*l+k] = m
		}
	}
}

// value returns ℓ(G, b).
func (lg *likGraph) value(gv, b []float64) (float64, error) {
	lg.set(gv, b)
	if err := lg.progVal.Run(); err != nil {
		return 0, err
	}
	return lg.progVal.Scalar(lg.ll)
}

// newtonTerms returns ℓ, ∂ℓ/∂G (n×l) and the per-point Hessian blocks,
// hess[i*l*l + m*l + k] = ∂²ℓ_i/∂g_im∂g_ik.
func (lg *likGraph) newtonTerms(gv, b []float64) (ll float64, grad, hess []float64, err error) {
	lg.set(gv, b)
	p := lg.progNewton
	if err = p.Run(); err != nil {
		return 0, nil, nil, err
	}
	if ll, err = p.Scalar(lg.ll); err != nil {
		return 0, nil, nil, err
	}
	if grad, err = p.Float64s(lg.gradG); err != nil {
		return 0, nil, nil, err
	}
	n, l := lg.n, lg.l
	hess = make([]float64, n*l*l)
	for m, h := range lg.hess {
		col, err := p.Value(h)
		if err != nil {
			return 0, nil, nil, err
		}
		c, err := graph.Float64s(col)
		if err != nil {
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

// evidenceTerms returns ∂ℓ/∂b and the gradients of q = Σ_m ⟨S_m, H_m⟩ with
// respect to G and b, for S given per point as l×l blocks
// (s[i*l*l + m*l + k] multiplies ∂²ℓ_i/∂g_im∂g_ik).
func (lg *likGraph) evidenceTerms(gv, b, s []float64) (gradB, dqdG, dqdB []float64, err error) {
	lg.set(gv, b)
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
	if gradB, err = p.Float64s(lg.gradB); err != nil {
		return nil, nil, nil, err
	}
	if dqdG, err = p.Float64s(lg.dqdG); err != nil {
		return nil, nil, nil, err
	}
	dqdB, err = p.Float64s(lg.dqdB)
	return gradB, dqdG, dqdB, err
}

// mixedTerm returns ∂/∂b ⟨U, ∂ℓ/∂G⟩ for a constant n×l matrix U.
func (lg *likGraph) mixedTerm(gv, b, u []float64) ([]float64, error) {
	lg.set(gv, b)
	copy(lg.uData, u)
	if err := lg.progImpl.Run(); err != nil {
		return nil, err
	}
	return lg.progImpl.Float64s(lg.dpdB)
}

// close releases the compiled programs.
func (lg *likGraph) close() {
	for _, p := range []*graph.Program{lg.progVal, lg.progNewton, lg.progEvid, lg.progImpl} {
		if p != nil {
			p.Close()
		}
	}
}
