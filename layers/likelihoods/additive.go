package likelihoods

import (
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// The additive-noise classifiers of Liu et al. (2019, "Scalable Gaussian
// process classification with additive noise for various likelihoods")
// write the label as a step function of g = f + ε. Gaussian noise of
// variance a stands in for the three symmetric errors; these are the
// paper's three choices.
const (
	// StepNoise is GPC-I's a: no noise, the step (robust-max) likelihood.
	StepNoise = 0.0
	// ProbitNoise is GPC-II's a: standard normal noise, the probit likelihood.
	ProbitNoise = 1.0
	// LogitNoise is GPC-III's a: N(0, 2.897) is the Gaussian closest in CDF
	// to the standard logistic (max difference 0.009; 2.897 ≈ 1.702²).
	LogitNoise = 2.897
)

// Additive is the robust step likelihood on g = f + ε, ε ~ N(0, A), of
// GPC-I/II/III (Liu et al. 2019): p(y|g) = 1−δ when y is the class with the
// largest g, and δ/(C−1) otherwise. Because g is Gaussian under the
// posterior, E[log p(y|g)] = log(1−δ)·S + log(δ/(C−1))·(1−S) is exact given
// the probability S that y's g is the largest, so the ELBO needs no sampling.
//
// The form follows the number of classes, so one name serves binary and
// multi-class data. With two classes there is one latent function and
// labels 0/1 become y = ∓1: S = Φ(yμ/√(A+ν)) in closed form (the paper's
// eqs. 8 and 9). With C > 2 there are C latent functions and S is a
// one-dimensional Gaussian integral (eqs. 18 and 19), computed by
// RobustMax's Gauss–Hermite rule on the variances ν + A, so that A = 0 is
// robust-max exactly.
//
// δ is learned (the paper's choice: a fixed δ inflates the latent
// variances and worsens the predictive) unless Delta is Fixed.
type Additive struct {
	// A is the variance of the noise added to each latent function; it is
	// not learnable because the bound only grows as A shrinks (the paper's
	// Appendix B), so a learned A would collapse to 0.
	A float64
	// Delta stores logit(δ) (Identity transform): δ stays in (0, 1) without
	// constraints, and log δ, log(1−δ) come out as softplus terms that do
	// not lose precision for the small δ (about 1e-3) that matter.
	Delta *layers.Param
	// Points is the number of Gauss–Hermite nodes for the multi-class S.
	Points int
	// Multi keeps C latent functions for two classes too, so that A = 0 is
	// robust-max with a learned ε for every C ("robustmax-learned").
	Multi bool
	// Prior, when its entries are positive, is a Beta(Prior[0], Prior[1])
	// prior on δ: its log density joins the objective (LogPrior), so δ is
	// its posterior mode rather than its maximum-likelihood value, as the
	// robust paper's Beta(1, 9) on the outlier rate ("robustmax-beta").
	Prior [2]float64
	// readsDelta marks the likelihoods whose δ is Config.Delta (gpc1,
	// gpc2, gpc3); robustmax-learned and robustmax-beta start from
	// Config.Epsilon instead.
	readsDelta bool
}

// LogPrior implements Prior: (a−1)·log δ + (b−1)·log(1−δ), without the
// normaliser; nil without a prior or with δ fixed.
func (l *Additive) LogPrior(s *layers.Scope) (*G.Node, error) {
	a, b := l.Prior[0], l.Prior[1]
	if !(a > 0 && b > 0) || l.Delta.Fixed {
		return nil, nil
	}
	x, err := s.Node(l.Delta)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	logD := e.Do(G.Neg(e.Do(G.Softplus(e.Do(G.Neg(x))))))
	log1mD := e.Do(G.Neg(e.Do(G.Softplus(x))))
	lp := e.Do(G.Add(e.Do(G.HadamardProd(logD, G.NewConstant(a-1))), e.Do(G.HadamardProd(log1mD, G.NewConstant(b-1)))))
	return lp, e.Err
}

// NewAdditive returns the likelihood with noise variance a and a learned δ
// starting at delta, 20 quadrature points; its parameter is named
// name+"/logit-delta". Set Delta.Fixed to keep δ at delta.
func NewAdditive(name string, a, delta float64) *Additive {
	return &Additive{
		A:      a,
		Delta:  layers.NewParam(name+"/logit-delta", tensor.ScalarShape(), logit(delta), layers.Identity),
		Points: 20,
	}
}

// additive makes the registered factory of the likelihood with noise
// variance a; every model gets the same parameter name, so that saved
// models find δ again.
func additive(a float64) Factory {
	return func(c Config) Likelihood {
		l := NewAdditive("likelihood", a, c.Delta)
		l.Points, l.Delta.Fixed, l.readsDelta = c.Points, c.FixDelta, true
		return l
	}
}

func logit(p float64) float64 { return math.Log(p) - math.Log1p(-p) }

// ReadsDelta implements DeltaReader: true for gpc1, gpc2 and gpc3, whose
// δ is Config.Delta (fixed with Config.FixDelta).
func (l *Additive) ReadsDelta() bool { return l.readsDelta }

// DeltaValue returns the current δ.
func (l *Additive) DeltaValue() float64 { return 1 / (1 + math.Exp(-l.Delta.Data[0])) }

func (l *Additive) binary(classes int) bool { return classes == 2 && !l.Multi }

// Latent implements Likelihood: one latent function for two classes (unless
// Multi), else one per class.
func (l *Additive) Latent(classes int) int {
	if l.binary(classes) {
		return 1
	}
	return classes
}

// Targets implements Likelihood: ±1 for two classes (unless Multi), else
// one-hot rows.
func (l *Additive) Targets(labels []int, classes int) ([]float64, int) {
	if l.binary(classes) {
		return (&Bernoulli{}).Targets(labels, classes)
	}
	return oneHot(labels, classes), classes
}

// Params implements Likelihood: logit(δ), learned unless Fixed.
func (l *Additive) Params() []*layers.Param { return []*layers.Param{l.Delta} }

// withNoise returns v + A; for A = 0 it returns v itself, so that GPC-I is
// robust-max node for node.
func (l *Additive) withNoise(v *G.Node) (*G.Node, error) {
	if l.A == 0 {
		return v, nil
	}
	return G.Add(v, G.NewConstant(l.A))
}

// argmaxProb returns the n-vector S_i for n×C marginals and one-hot y, or
// for class own of every row when own ≥ 0 (see RobustMax.argmaxProb).
func (l *Additive) argmaxProb(s *layers.Scope, mu, v, y *G.Node, own int) (*G.Node, error) {
	va, err := l.withNoise(v)
	if err != nil {
		return nil, err
	}
	return (&RobustMax{Points: l.Points}).argmaxProb(s, mu, va, y, own)
}

// binaryProb returns the n-vector Φ(y μ/√(A+ν)) = Pr(y g > 0) for n×1
// marginals; a nil y gives Pr(g > 0), the probability of label 1.
func (l *Additive) binaryProb(mu, v, y *G.Node) (*G.Node, error) {
	m, vv, err := single(mu, v)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	z := e.Do(G.HadamardDiv(m, e.Do(G.Sqrt(e.Do(l.withNoise(vv))))))
	if y != nil {
		z = e.Do(G.HadamardProd(z, e.Do(Column(y, 0))))
	}
	p := e.Do(graph.NormCDF(z))
	return p, e.Err
}

// logs returns log(1−δ) = −softplus(x) and log(δ/(C−1)) = −softplus(−x) −
// log(C−1) as scalar nodes, x = logit δ.
func (l *Additive) logs(s *layers.Scope, classes int) (hit, miss *G.Node, err error) {
	x, err := s.Node(l.Delta)
	if err != nil {
		return nil, nil, err
	}
	e := &graph.Chain{}
	hit = e.Do(G.Neg(e.Do(G.Softplus(x))))
	miss = e.Do(G.Neg(e.Do(G.Softplus(e.Do(G.Neg(x))))))
	if classes > 2 {
		miss = e.Do(G.Sub(miss, G.NewConstant(math.Log(float64(classes-1)))))
	}
	return hit, miss, e.Err
}

// ExpectedLogLik implements Likelihood: log(1−δ)·S + log(δ/(C−1))·(1−S),
// which for two classes is the paper's log((1−δ)/δ)·Φ(yμ/√(A+ν)) + log δ.
func (l *Additive) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	if mu.Dims() != 2 || y.Dims() != 2 || y.Shape()[1] != mu.Shape()[1] {
		return nil, fmt.Errorf("likelihoods.Additive: marginals %v and targets %v", mu.Shape(), y.Shape())
	}
	c := mu.Shape()[1]
	var p *G.Node
	var err error
	if c == 1 && !l.Multi {
		p, err = l.binaryProb(mu, v, y)
		c = 2
	} else {
		p, err = l.argmaxProb(s, mu, v, y, -1)
	}
	if err != nil {
		return nil, err
	}
	hit, miss, err := l.logs(s, c)
	if err != nil {
		return nil, err
	}
	// miss + S·(hit − miss), in RobustMax's order so that A = 0 agrees with it.
	e := &graph.Chain{}
	ell := e.Do(G.Add(e.Do(G.HadamardProd(p, e.Do(G.Sub(hit, miss)))), miss))
	return ell, e.Err
}

// Predict implements Likelihood: the probability of each class is
// (1−δ)·S + δ/(C−1)·(1−S) (eqs. 9 and 19). The multi-class rows are divided
// by their sums, as RobustMax's are: the separate quadratures for the C
// classes' S sum to one only to the rule's accuracy (within 2.3e-8 at 20
// points in the tests).
func (l *Additive) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	if mu.Dims() != 2 {
		return nil, fmt.Errorf("likelihoods.Additive: marginals %v", mu.Shape())
	}
	x, err := s.Node(l.Delta)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	delta := e.Do(G.Sigmoid(x))
	c := mu.Shape()[1]
	if c == 1 && !l.Multi {
		p := e.Do(l.binaryProb(mu, v, nil))
		scale := e.Do(G.Sub(G.NewConstant(1.0), e.Do(G.HadamardProd(delta, G.NewConstant(2.0)))))
		p1 := e.Do(G.Add(e.Do(G.HadamardProd(p, scale)), delta))
		p0 := e.Do(G.Sub(G.NewConstant(1.0), p1))
		out := e.Do(Columns(p0, p1))
		return out, e.Err
	}
	if c < 2 {
		return nil, fmt.Errorf("likelihoods.Additive: %d latent functions", c)
	}
	// p = a·S + b with a = 1 − δC/(C−1), b = δ/(C−1).
	b := e.Do(G.HadamardProd(delta, G.NewConstant(1/float64(c-1))))
	a := e.Do(G.Sub(G.NewConstant(1.0), e.Do(G.HadamardProd(b, G.NewConstant(float64(c))))))
	if e.Err != nil {
		return nil, e.Err
	}
	cols := make([]*G.Node, c)
	for j := range cols {
		cols[j] = e.Do(G.Add(e.Do(G.HadamardProd(e.Do(l.argmaxProb(s, mu, v, nil, j)), a)), b))
	}
	p := e.Do(Columns(cols...))
	if e.Err != nil {
		return nil, e.Err
	}
	return normalizeRows(p)
}

// GumbelSoftmax is GPCsm (Liu et al. 2019, Sec. III-D): the softmax
// likelihood written as argmax over f + Gumbel noise, with the noise kept
// in the variational family as q(ε_i) = Gumbel(log θ_i, 1). At the optimal
// θ_i = 1 + P_i the bound on E[log softmax_y(f)] is −log(1 + P_i) with
//
//	P_i = exp(ν_y/2 − μ_y) Σ_{c≠y} exp(μ_c + ν_c/2),
//
// in closed form, without δ, quadrature or sampling. It is Jensen's bound
// −log E[Σ_c exp(f_c − f_y)], exact when the variances vanish.
// Prediction has no closed form and averages the softmax over Draws
// Gaussian draws shared by all test points.
type GumbelSoftmax struct {
	// Draws is the number of Monte Carlo draws for Predict (0 means 1000,
	// the authors' code's number).
	Draws int
	// Seed fixes the draws, so that predictions are reproducible and
	// differences between test points are not sampling noise.
	Seed uint64
}

// NewGumbelSoftmax returns GPCsm with 1000 prediction draws and seed 1.
func NewGumbelSoftmax() *GumbelSoftmax { return &GumbelSoftmax{Draws: 1000, Seed: 1} }

// Latent implements Likelihood: one latent function per class.
func (l *GumbelSoftmax) Latent(classes int) int { return classes }

// Targets implements Likelihood: one-hot rows.
func (l *GumbelSoftmax) Targets(labels []int, classes int) ([]float64, int) {
	return oneHot(labels, classes), classes
}

// Params implements Likelihood: none; θ_i is optimised analytically.
func (l *GumbelSoftmax) Params() []*layers.Param { return nil }

func (l *GumbelSoftmax) draws() int {
	if l.Draws > 0 {
		return l.Draws
	}
	return 1000
}

func sameMatrices(who string, ns ...*G.Node) error {
	s := ns[0].Shape()
	for _, n := range ns {
		if t := n.Shape(); len(t) != 2 || !t.Eq(s) {
			return fmt.Errorf("likelihoods.%s: shapes %v and %v, want equal n×C matrices", who, s, t)
		}
	}
	return nil
}

// ExpectedLogLik implements Likelihood: −log(1 + P_i) as the log-sum-exp of
// {0} ∪ {μ_c − μ_y + (ν_c + ν_y)/2}_{c≠y}, which cannot overflow where the
// authors' direct log(1 + P) does (large means or variances).
func (l *GumbelSoftmax) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	if err := sameMatrices("GumbelSoftmax", mu, v, y); err != nil {
		return nil, err
	}
	nc := mu.Shape()
	e := &graph.Chain{}
	muY := e.Do(graph.BroadcastTo(e.Do(rowDot(mu, y)), nc, []int{1}))
	vY := e.Do(graph.BroadcastTo(e.Do(rowDot(v, y)), nc, []int{1}))
	d := e.Do(G.Add(e.Do(G.Sub(mu, muY)), e.Do(G.HadamardProd(e.Do(G.Add(v, vY)), G.NewConstant(0.5)))))
	// Zero in y's own column is the 1 of 1 + P.
	d = e.Do(G.HadamardProd(d, e.Do(G.Sub(G.NewConstant(1.0), y))))
	if e.Err != nil {
		return nil, e.Err
	}
	lse, err := logSumExpRows(d)
	if err != nil {
		return nil, err
	}
	return G.Neg(lse)
}

// logSumExpRows returns log Σ_j exp(x_ij) for each row. The row maximum is
// subtracted to avoid overflow; it enters through an op with no gradient,
// which is exact because the value does not depend on the shift: treating
// it as a constant gives every derivative of log-sum-exp itself, where
// differentiating through a max would only add terms that cancel.
func logSumExpRows(x *G.Node) (*G.Node, error) {
	s := x.Shape()
	m, err := G.ApplyOp(rowMaxOp{n: s[0], c: s[1]}, x)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	mb := e.Do(graph.BroadcastTo(m, s, []int{1}))
	sum := e.Do(G.Sum(e.Do(graph.Exp(e.Do(G.Sub(x, mb)))), 1))
	out := e.Do(G.Add(e.Do(G.Log(sum)), m))
	return out, e.Err
}

// Predict implements Likelihood: the mean of softmax(μ + √ν ∘ t_k) over the
// draws t_k ~ N(0, I), held in the graph as a constant input built from Seed.
// The average is one op that streams over the draws: as graph nodes it
// would hold n × Draws × C values per intermediate (some 50 MB each for a
// 256-row prediction batch with 26 classes). It has no gradient, which no
// caller of Predict needs.
func (l *GumbelSoftmax) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	if err := sameMatrices("GumbelSoftmax", mu, v); err != nil {
		return nil, err
	}
	n, c := mu.Shape()[0], mu.Shape()[1]
	k := l.draws()
	rng := rand.New(rand.NewPCG(l.Seed, 0x6770_6373_6d)) // "gpcsm"
	t := make([]float64, k*c)
	for i := range t {
		t[i] = rng.NormFloat64()
	}
	tn := constant(s.G, fmt.Sprintf("gpcsm/draws/%dx%d/seed%d", k, c, l.Seed), tensor.Shape{k, c}, t)
	return G.ApplyOp(mcSoftmaxOp{n: n, c: c, k: k}, mu, v, tn)
}

// noGradOp holds the Op methods shared by this file's forward-only ops;
// String must name every parameter, since it is also the hash by which
// Gorgonia merges nodes.
type noGradOp struct{}

func (noGradOp) ReturnsPtr() bool     { return false }
func (noGradOp) CallsExtern() bool    { return false }
func (noGradOp) OverwritesInput() int { return -1 }

func hashString(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

var errNoGrad = errors.New("likelihoods: op has no gradient")

var (
	matType = G.TensorType{Dims: 2, Of: tensor.Float64}
	vecType = G.TensorType{Dims: 1, Of: tensor.Float64}
)

// rowMaxOp is the row-wise maximum of an n×c matrix, with no gradient (see
// logSumExpRows).
type rowMaxOp struct {
	noGradOp
	n, c int
}

func (op rowMaxOp) Arity() int                                     { return 1 }
func (op rowMaxOp) Type() hm.Type                                  { return hm.NewFnType(matType, vecType) }
func (op rowMaxOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return tensor.Shape{op.n}, nil }
func (op rowMaxOp) String() string                                 { return fmt.Sprintf("RowMaxNoGrad{%dx%d}", op.n, op.c) }
func (op rowMaxOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op rowMaxOp) Hashcode() uint32                               { return hashString(op.String()) }
func (op rowMaxOp) DiffWRT(int) []bool                             { return []bool{false} }
func (op rowMaxOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, errNoGrad
}

func (op rowMaxOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := graph.Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	if len(x) != op.n*op.c {
		return nil, fmt.Errorf("likelihoods: %v got %d values", op, len(x))
	}
	out := make([]float64, op.n)
	for i := range out {
		m := math.Inf(-1)
		for _, v := range x[i*op.c : (i+1)*op.c] {
			m = max(m, v)
		}
		out[i] = m
	}
	return graph.NewValue(tensor.Shape{op.n}, out), nil
}

// mcSoftmaxOp averages softmax(μ_i + √ν_i ∘ t_k) over the k rows of t
// (inputs μ, ν: n×c; t: k×c), with no gradient (see GumbelSoftmax.Predict).
type mcSoftmaxOp struct {
	noGradOp
	n, c, k int
}

func (op mcSoftmaxOp) Arity() int    { return 3 }
func (op mcSoftmaxOp) Type() hm.Type { return hm.NewFnType(matType, matType, matType, matType) }
func (op mcSoftmaxOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.c}, nil
}
func (op mcSoftmaxOp) String() string {
	return fmt.Sprintf("MCSoftmax{%dx%d,%d}", op.n, op.c, op.k)
}
func (op mcSoftmaxOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op mcSoftmaxOp) Hashcode() uint32      { return hashString(op.String()) }
func (op mcSoftmaxOp) DiffWRT(int) []bool    { return []bool{false, false, false} }
func (op mcSoftmaxOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, errNoGrad
}

func (op mcSoftmaxOp) Do(vs ...G.Value) (G.Value, error) {
	var in [3][]float64
	for i := range in {
		var err error
		if in[i], err = graph.Float64s(vs[i]); err != nil {
			return nil, err
		}
	}
	mu, v, t := in[0], in[1], in[2]
	n, c, k := op.n, op.c, op.k
	if len(mu) != n*c || len(v) != n*c || len(t) != k*c {
		return nil, fmt.Errorf("likelihoods: %v got %d, %d and %d values", op, len(mu), len(v), len(t))
	}
	out := make([]float64, n*c)
	rows := func(lo, hi int) {
		sd, f := make([]float64, c), make([]float64, c)
		for i := lo; i < hi; i++ {
			m, acc := mu[i*c:(i+1)*c], out[i*c:(i+1)*c]
			for j := range sd {
				sd[j] = math.Sqrt(v[i*c+j])
			}
			for d := 0; d < k; d++ {
				td := t[d*c : (d+1)*c]
				top := math.Inf(-1)
				for j := range f {
					f[j] = m[j] + sd[j]*td[j]
					top = max(top, f[j])
				}
				var z float64
				for j := range f {
					f[j] = math.Exp(f[j] - top)
					z += f[j]
				}
				for j := range f {
					acc[j] += f[j] / z
				}
			}
			for j := range acc {
				acc[j] /= float64(k)
			}
		}
	}
	// Rows are independent; split them across cores when there is enough
	// work (from 2^16 class-node terms, at about 4 ns each).
	graph.ParallelFor(n, 1, float64(c*k)*4, rows)
	return graph.NewValue(tensor.Shape{n, c}, out), nil
}
