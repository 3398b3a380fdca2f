package likelihoods

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// Pointwise forms of built-in likelihoods. The step likelihoods
// (robust-max, GPC-I) compute S, the probability that
// the label's latent value is the largest, from the marginals' variances;
// at zero variance that expression divides by zero. Their log p(y|f) is
// two values switched by an indicator, which Pointwise gives directly, so
// that the engines working on latent values (MCMC's elliptical slice
// sampling) can use them. The indicator has no gradient: a Newton method
// cannot use these likelihoods, whose log p(y|f) is flat almost everywhere.

var (
	_ Pointwise = (*RobustMax)(nil)
	_ Pointwise = (*Additive)(nil)
	_ Pointwise = (*Bernoulli)(nil)
)

// LogLik implements Pointwise: log σ(y f), the link once per row where the
// expectation at zero variance evaluates it at every quadrature node (the
// same value, Points times the work: a sampler's inner loop).
func (l *Bernoulli) LogLik(s *layers.Scope, f, y *G.Node) (*G.Node, error) {
	if f.Dims() != 2 || f.Shape()[1] != 1 || !f.Shape().Eq(y.Shape()) {
		return nil, fmt.Errorf("likelihoods.Bernoulli: latent values %v and targets %v, want n×1", f.Shape(), y.Shape())
	}
	e := &graph.Chain{}
	fv := e.Do(Column(f, 0))
	yv := e.Do(Column(y, 0))
	out := e.Do(l.logLink(e.Do(G.HadamardProd(fv, yv))))
	return out, e.Err
}

// LogLik implements Pointwise: log(1−ε) where y's latent value is the
// largest, log(ε/(C−1)) (or the uniform flip's values) elsewhere.
func (l *RobustMax) LogLik(s *layers.Scope, f, y *G.Node) (*G.Node, error) {
	if f.Dims() != 2 || !f.Shape().Eq(y.Shape()) {
		return nil, fmt.Errorf("likelihoods.RobustMax: latent values %v and targets %v", f.Shape(), y.Shape())
	}
	hit, miss := l.logs(f.Shape()[1])
	ind, err := G.ApplyOp(hitOp{n: f.Shape()[0], c: f.Shape()[1]}, f, y)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	out := e.Do(G.Add(e.Do(G.HadamardProd(ind, G.NewConstant(hit-miss))), G.NewConstant(miss)))
	return out, e.Err
}

// LogLik implements Pointwise: log p(y|f) = log(δ' + S·(1 − δ − δ')) for
// the probability S that y's g = f + ε is the largest (δ' = δ/(C−1)):
// Φ(y f/√A) for two classes, the robust-max quadrature on variances A for
// more, and for GPC-I (A = 0) the indicator that y's f is the largest.
// (The expected log-likelihood at zero variance is E_ε[log p(y|g)], not
// this: the noise is part of the model, not of the posterior.)
func (l *Additive) LogLik(s *layers.Scope, f, y *G.Node) (*G.Node, error) {
	if f.Dims() != 2 || !f.Shape().Eq(y.Shape()) {
		return nil, fmt.Errorf("likelihoods.Additive: latent values %v and targets %v", f.Shape(), y.Shape())
	}
	n, c := f.Shape()[0], f.Shape()[1]
	classes := c
	if c == 1 && !l.Multi {
		classes = 2
	}
	hit, miss, err := l.logs(s, classes)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	if l.A == 0 {
		ind := e.Do(G.ApplyOp(hitOp{n: n, c: c}, f, y))
		out := e.Do(G.Add(e.Do(G.HadamardProd(ind, e.Do(G.Sub(hit, miss)))), miss))
		return out, e.Err
	}
	zero := constant(s.G, fmt.Sprintf("loglik-zero-variance-%dx%d", n, c), tensor.Shape{n, c}, make([]float64, n*c))
	var p *G.Node
	if classes == 2 && c == 1 {
		p = e.Do(l.binaryProb(f, zero, y))
	} else {
		p = e.Do(l.argmaxProb(s, f, zero, y, -1))
	}
	pHit, pMiss := e.Do(G.Exp(hit)), e.Do(G.Exp(miss))
	prob := e.Do(G.Add(e.Do(G.HadamardProd(p, e.Do(G.Sub(pHit, pMiss)))), pMiss))
	out := e.Do(G.Log(prob))
	return out, e.Err
}

// hitOp is the n-vector indicator that row i's label has the largest
// latent value: for one column, y_i·f_i > 0 (labels ±1); for c columns
// (one-hot y), f_{i,y_i} ≥ max_k f_ik. It has no gradient.
type hitOp struct {
	noGradOp
	n, c int
}

func (op hitOp) Arity() int                                     { return 2 }
func (op hitOp) Type() hm.Type                                  { return hm.NewFnType(matType, matType, vecType) }
func (op hitOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return tensor.Shape{op.n}, nil }
func (op hitOp) String() string                                 { return fmt.Sprintf("ArgmaxHit{%dx%d}", op.n, op.c) }
func (op hitOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op hitOp) Hashcode() uint32                               { return hashString(op.String()) }
func (op hitOp) DiffWRT(int) []bool                             { return []bool{false, false} }
func (op hitOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, errNoGrad
}

func (op hitOp) Do(vs ...G.Value) (G.Value, error) {
	f, err := graph.Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	y, err := graph.Float64s(vs[1])
	if err != nil {
		return nil, err
	}
	if len(f) != op.n*op.c || len(y) != op.n*op.c {
		return nil, fmt.Errorf("likelihoods: %v got %d and %d values", op, len(f), len(y))
	}
	out := make([]float64, op.n)
	for i := range out {
		if op.c == 1 {
			if y[i]*f[i] > 0 {
				out[i] = 1
			}
			continue
		}
		row, yr := f[i*op.c:(i+1)*op.c], y[i*op.c:(i+1)*op.c]
		var own float64
		mx := row[0]
		for k, v := range row {
			mx = max(mx, v)
			if yr[k] != 0 {
				own = v
			}
		}
		if own >= mx {
			out[i] = 1
		}
	}
	return graph.NewValue(tensor.Shape{op.n}, out), nil
}
