package likelihoods

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// Flip says where a flipped label goes in the robust-max likelihood.
type Flip int

const (
	// FlipOther moves a flipped label to one of the other C−1 classes:
	// p(y|f) = 1−ε if y = argmax f, else ε/(C−1) (the paper's eq. 2 and the
	// noisy-input models' code).
	FlipOther Flip = iota
	// FlipUniform draws a flipped label from all C classes: p(y|f) = 1−ε+ε/C
	// if y = argmax f, else ε/C (the original MGP baseline's code).
	FlipUniform
)

// RobustMax is the multi-class likelihood y = argmax_c f_c with label-flip
// probability Epsilon. The probability P_i that f_{y_i} exceeds every other
// f_c is a one-dimensional integral over f_{y_i}, computed by Gauss–Hermite
// quadrature with Points nodes; given P, E[log p(y|f)] is exact because
// log p(y|f) takes only two values.
type RobustMax struct {
	Epsilon float64
	Points  int
	Flip    Flip
	// Plain selects the rule centred on f_y with its own variance (the
	// original code's, which used 200 points); the default adaptive rule is
	// accurate to ~1e-7 with 20 points where the plain one errs by ~1e-4.
	Plain bool
	// Newton is the number of Newton steps locating the integrand's mode (default 2).
	Newton int
}

// NewRobustMax returns the paper's setting: ε = 1e-3, 20 quadrature points, FlipOther.
func NewRobustMax() *RobustMax { return &RobustMax{Epsilon: 1e-3, Points: 20, Flip: FlipOther} }

// Latent implements Likelihood: one latent function per class.
func (l *RobustMax) Latent(classes int) int { return classes }

// Targets implements Likelihood: one-hot rows.
func (l *RobustMax) Targets(labels []int, classes int) ([]float64, int) {
	return oneHot(labels, classes), classes
}

// Params implements Likelihood.
func (l *RobustMax) Params() []*layers.Param { return nil }

// logs returns log p(y|f) when y is the argmax and when it is not.
func (l *RobustMax) logs(classes int) (hit, miss float64) {
	c := float64(classes)
	if l.Flip == FlipUniform {
		return math.Log(1 - l.Epsilon + l.Epsilon/c), math.Log(l.Epsilon / c)
	}
	return math.Log(1 - l.Epsilon), math.Log(l.Epsilon / (c - 1))
}

// probs returns p(y) when y is the argmax with probability P: a·P + b.
func (l *RobustMax) probs(classes int) (a, b float64) {
	c := float64(classes)
	if l.Flip == FlipUniform {
		return 1 - l.Epsilon, l.Epsilon / c
	}
	return 1 - l.Epsilon - l.Epsilon/(c-1), l.Epsilon / (c - 1)
}

func (l *RobustMax) check(mu, v *G.Node) (n, c int, err error) {
	ms, vs := mu.Shape(), v.Shape()
	if len(ms) != 2 || len(vs) != 2 || ms[0] != vs[0] || ms[1] != vs[1] {
		return 0, 0, fmt.Errorf("likelihoods.RobustMax: means %v and variances %v must be equal n×C matrices", ms, vs)
	}
	if ms[1] < 2 {
		return 0, 0, fmt.Errorf("likelihoods.RobustMax: needs at least 2 classes, got %d", ms[1])
	}
	if l.Points < 1 {
		return 0, 0, fmt.Errorf("likelihoods.RobustMax: %d quadrature points", l.Points)
	}
	return ms[0], ms[1], nil
}

// argmaxProb returns the n-vector P_i = Pr(f_{y_i} > f_c for all c ≠ y_i) for
// one-hot targets y (n×C), or for class own of every row when own ≥ 0.
// With targets it is one op per row with its own reverse pass
// (trainRows); the class-of-every-row form, and the reference the op is
// tested against, is argmaxProbGraph.
func (l *RobustMax) argmaxProb(s *layers.Scope, mu, v, y *G.Node, own int) (*G.Node, error) {
	if own >= 0 {
		return l.argmaxProbGraph(s, mu, v, y, own)
	}
	n, c, err := l.check(mu, v)
	if err != nil {
		return nil, err
	}
	if ys := y.Shape(); len(ys) != 2 || ys[0] != n || ys[1] != c {
		return nil, fmt.Errorf("likelihoods.RobustMax: targets of shape %v, want %d×%d one-hot rows", ys, n, c)
	}
	p, err := graph.Rows(l.trainRows(c), mu, v, y)
	if err != nil {
		return nil, err
	}
	return graph.Reshape(p, tensor.Shape{n})
}

// argmaxProbGraph is argmaxProb built from graph ops. With f_y = μ_y + σ_y z,
//
//	P = ∫ φ(z) Π_{c≠y} Φ(a_c + b_c z) dz,  a_c = (μ_y − μ_c)/σ_c,  b_c = σ_y/σ_c.
//
// When some σ_c is small or C is large the product is much steeper than φ and
// a rule centred on f_y (the original code's, kept as Plain) needs hundreds of
// nodes. The adaptive rule centres and scales the nodes at the integrand's
// mode and curvature, found by Newton steps on its log, which is concave.
// Every step is a smooth graph function, so gradients are those of the
// estimate itself.
//
// own ≥ 0 says that every row's class is own (y is then not read): the
// factors are formed for the other C − 1 classes only, where for targets
// from data the class's own column is computed and multiplied by zero. The
// two give the same numbers (adding the zero terms changes no sum). Predict
// no longer builds this form (its rows are one op, argmaxProbRow), nor
// does training (trainRows); the additive-noise likelihoods' predictions
// do, and the tests hold both ops to it.
func (l *RobustMax) argmaxProbGraph(s *layers.Scope, mu, v, y *G.Node, own int) (*G.Node, error) {
	n, c, err := l.check(mu, v)
	if err != nil {
		return nil, err
	}
	k := l.Points
	e := &graph.Chain{}
	var muY, sdY, other *G.Node
	if own >= 0 {
		muY = e.Do(graph.Column(mu, own))
		sdY = e.Do(G.Sqrt(e.Do(graph.Column(v, own))))
		mu, v = e.Do(dropColumn(mu, own)), e.Do(dropColumn(v, own))
		c--
	} else {
		muY = e.Do(rowDot(mu, y))
		sdY = e.Do(G.Sqrt(e.Do(rowDot(v, y))))
	}
	nc, nk, nck := tensor.Shape{n, c}, tensor.Shape{n, k}, tensor.Shape{n, c, k}
	sd := e.Do(G.Sqrt(v))
	a := e.Do(G.HadamardDiv(e.Do(G.Sub(e.Do(graph.BroadcastTo(muY, nc, []int{1})), mu)), sd))
	b := e.Do(G.HadamardDiv(e.Do(graph.BroadcastTo(sdY, nc, []int{1})), sd))
	ob := b
	if own < 0 {
		other = e.Do(G.Sub(G.NewConstant(1.0), y))
		ob = e.Do(G.HadamardProd(other, b))
	}
	ob2 := e.Do(G.HadamardProd(ob, b))
	if e.Err != nil {
		return nil, e.Err
	}
	var z, scale *G.Node // mode and width of the rule in z; nil means 0 and 1
	if !l.Plain {
		for it := 0; it <= l.newton(); it++ {
			x := a
			if z != nil {
				x = e.Do(G.Add(a, e.Do(G.HadamardProd(b, e.Do(graph.BroadcastTo(z, nc, []int{1}))))))
			}
			lam := e.Do(graph.InvMills(x))
			d1 := e.Do(G.Sum(e.Do(G.HadamardProd(ob, lam)), 1))
			if z != nil {
				d1 = e.Do(G.Sub(d1, z))
			}
			curv := e.Do(G.Sum(e.Do(G.HadamardProd(ob2, e.Do(G.HadamardProd(lam, e.Do(graph.MillsGap(x)))))), 1))
			negD2 := e.Do(G.Add(curv, G.NewConstant(1.0))) // −(d²/dz²) log g ≥ 1
			if e.Err != nil {
				return nil, e.Err
			}
			if it == l.newton() {
				scale = e.Do(G.Inverse(e.Do(G.Sqrt(negD2))))
				break
			}
			step := e.Do(G.HadamardDiv(d1, negD2))
			if z == nil {
				z = step
			} else {
				z = e.Do(G.Add(z, step))
			}
		}
	}
	// Nodes Z_ik = z_i + √2 s_i t_k and log-weights
	// log w_k + t_k² + log(√2 s_i) − Z²/2 − ½ log 2π, so P ≈ Σ_k exp(L_ik + Σ_c log Φ).
	t, ck := hermiteLogWeights(k)
	tB := e.Do(graph.BroadcastTo(constant(s.G, fmt.Sprintf("gh%d/t", k), tensor.Shape{k}, t), nk, []int{0}))
	L := e.Do(graph.BroadcastTo(constant(s.G, fmt.Sprintf("gh%d/logw", k), tensor.Shape{k}, ck), nk, []int{0}))
	Z := e.Do(G.HadamardProd(tB, G.NewConstant(math.Sqrt2)))
	if scale != nil {
		Z = e.Do(G.HadamardProd(Z, e.Do(graph.BroadcastTo(scale, nk, []int{1}))))
		L = e.Do(G.Add(L, e.Do(graph.BroadcastTo(e.Do(G.Log(scale)), nk, []int{1}))))
	}
	if z != nil {
		Z = e.Do(G.Add(Z, e.Do(graph.BroadcastTo(z, nk, []int{1}))))
	}
	L = e.Do(G.Sub(L, e.Do(G.HadamardProd(e.Do(G.Square(Z)), G.NewConstant(0.5)))))
	x3 := e.Do(G.Add(e.Do(graph.BroadcastTo(a, nck, []int{2})),
		e.Do(G.HadamardProd(e.Do(graph.BroadcastTo(b, nck, []int{2})), e.Do(graph.BroadcastTo(Z, nck, []int{1}))))))
	if own >= 0 {
		// Prediction, with every remaining class another: Σ_k e^L Π_c Φ
		// takes one erfc per element where e^(L + Σ_c log Φ) took a
		// logarithm more, 2.6 times the time of Φ alone, and Φ's of the
		// quadrature were a quarter of an MC prediction. The two forms
		// differ only where the result is below about 1e-300.
		ph := e.Do(graph.NormCDF(x3))
		prod := e.Do(graph.Reshape(e.Do(graph.Take(ph, 1, 0, 1)), nk))
		for j := 1; j < c; j++ {
			prod = e.Do(G.HadamardProd(prod, e.Do(graph.Reshape(e.Do(graph.Take(ph, 1, j, j+1)), nk))))
		}
		return e.Do(G.Sum(e.Do(G.HadamardProd(e.Do(G.Exp(L)), prod)), 1)), e.Err
	}
	lp := e.Do(graph.LogNormCDF(x3))
	if other != nil {
		lp = e.Do(G.HadamardProd(lp, e.Do(graph.BroadcastTo(other, nck, []int{2}))))
	}
	L = e.Do(G.Add(L, e.Do(G.Sum(lp, 1))))
	p := e.Do(G.Sum(e.Do(G.Exp(L)), 1))
	return p, e.Err
}

// hermiteLogWeights returns the k Gauss–Hermite nodes t and the constant
// part of each node's log-weight, log w_k + t_k² + ½ log 2 − ½ log 2π, shared
// by the graph form and the row ops.
func hermiteLogWeights(k int) (t, ck []float64) {
	t, w := Hermite(k)
	ck = make([]float64, k)
	for i := range ck {
		ck[i] = math.Log(w[i]) + t[i]*t[i] - 0.5*math.Log(2*math.Pi) + 0.5*math.Log(2)
	}
	return t, ck
}

// ruleSteps is the row ops' Newton steps: l.newton(), or −1 for the plain
// rule.
func (l *RobustMax) ruleSteps() int {
	if l.Plain {
		return -1
	}
	return l.newton()
}

func (l *RobustMax) newton() int {
	if l.Newton > 0 {
		return l.Newton
	}
	return 2
}

// dropColumn returns the n×(C−1) matrix of x's columns other than j.
func dropColumn(x *G.Node, j int) (*G.Node, error) {
	c := x.Shape()[1]
	switch {
	case j == 0:
		return graph.Take(x, 1, 1, c)
	case j == c-1:
		return graph.Take(x, 1, 0, c-1)
	}
	left, err := graph.Take(x, 1, 0, j)
	if err != nil {
		return nil, err
	}
	right, err := graph.Take(x, 1, j+1, c)
	if err != nil {
		return nil, err
	}
	return G.Concat(1, left, right)
}

// rowDot returns Σ_c a_ic b_ic for each row i.
func rowDot(a, b *G.Node) (*G.Node, error) {
	p, err := G.HadamardProd(a, b)
	if err != nil {
		return nil, err
	}
	return G.Sum(p, 1)
}

// ExpectedLogLik implements Likelihood.
func (l *RobustMax) ExpectedLogLik(s *layers.Scope, mu, v, y *G.Node) (*G.Node, error) {
	p, err := l.argmaxProb(s, mu, v, y, -1)
	if err != nil {
		return nil, err
	}
	hit, miss := l.logs(mu.Shape()[1])
	// P·hit + (1−P)·miss = miss + P·(hit − miss)
	e, err := G.HadamardProd(p, G.NewConstant(hit-miss))
	if err != nil {
		return nil, err
	}
	return G.Add(e, G.NewConstant(miss))
}

// Predict implements Likelihood. Each row is divided by its sum, which
// differs from one only by the quadrature error (~1e-7 at 20 points), so that
// the probabilities are exactly normalised; the original code did not.
//
// The probabilities are one op (graph.Rows) computing, per row and class,
// what argmaxProb builds from graph ops (the tests' predictGraph keeps that
// form, and TestRobustMaxPredictMatchesGraph holds the two to rounding): forty-odd
// ops over n×(C−1)×k intermediates per class were two fifths of a Monte
// Carlo prediction of the noisy-input models. The node has no gradient.
func (l *RobustMax) Predict(s *layers.Scope, mu, v *G.Node) (*G.Node, error) {
	_, c, err := l.check(mu, v)
	if err != nil {
		return nil, err
	}
	return graph.Rows(l.predictRows(c), mu, v)
}

// predictRows is the per-row predictive of Predict for c classes.
func (l *RobustMax) predictRows(c int) *graph.RowFunc {
	k := l.Points
	t, ck := hermiteLogWeights(k)
	pa, pb := l.probs(c)
	newton := l.ruleSteps()
	o := c - 1
	return &graph.RowFunc{
		Name:    fmt.Sprintf("robustmax(C=%d,k=%d,newton=%d,a=%v,b=%v)", c, k, newton, pa, pb),
		Out:     c,
		Scratch: 3*o + 2*k,
		Cost:    float64(c*o*(k+2*newton+2)) * 15,
		F: func(in [][]float64, out, scratch []float64) {
			mu, v := in[0], in[1]
			a, b, sd := scratch[:o], scratch[o:2*o], scratch[2*o:3*o]
			zs, ls := scratch[3*o:3*o+k], scratch[3*o+k:3*o+2*k]
			sum := 0.0
			for j := range c {
				muY, sdY := mu[j], math.Sqrt(v[j])
				q := 0
				for cc := range c {
					if cc == j {
						continue
					}
					sd[q] = math.Sqrt(v[cc])
					a[q] = (muY - mu[cc]) / sd[q]
					b[q] = sdY / sd[q]
					q++
				}
				p := argmaxProbRow(a, b, t, ck, newton, zs, ls)
				out[j] = p*pa + pb
				sum += out[j]
			}
			for j := range out {
				out[j] /= sum
			}
		},
	}
}

// argmaxProbRow is one row of argmaxProb for a class against the others,
// in the same order of operations: the rule's mode z and scale by newton
// Newton steps (none for a negative newton, the plain rule), then
// Σ_k e^(L_k) Π_c Φ(a_c + b_c Z_k) (e^(L_k) by graph.ExpValues, within 3
// ulp of the graph's math.Exp).
func argmaxProbRow(a, b, t, ck []float64, newton int, zs, ls []float64) float64 {
	z, scale := placeRule(a, b, newton, nil)
	centred := newton >= 0
	logScale := math.Log(scale) // once per row, as the graph's broadcast
	for i := range t {
		zk, lk := t[i]*math.Sqrt2, ck[i]
		if centred {
			zk *= scale
			lk += logScale
			zk += z
		}
		zs[i] = zk
		ls[i] = lk - zk*zk*0.5
	}
	graph.ExpValues(ls, ls)
	p := 0.0
	for i, zk := range zs {
		prod := 1.0
		for q := range a {
			ph := graph.NormCDFValue(a[q] + b[q]*zk)
			if q == 0 {
				prod = ph
			} else {
				prod *= ph
			}
		}
		p += ls[i] * prod
	}
	return p
}

// trainRows is argmaxProb for one-hot targets as one op per row: P_i from
// the row's means, variances and targets, and its gradient with respect to
// the means and variances by a reverse pass written out below, through the
// quadrature and the Newton steps that place it (the same function as the
// graph form's, so the gradient is the estimate's own; second derivatives
// go through the graph form). Built from graph ops, the rule was forty-odd
// passes over n×C×k intermediates and their adjoints: an eighth of the
// synthetic tables' step, and most of the step's work for many classes.
func (l *RobustMax) trainRows(c int) *graph.RowFunc {
	k := l.Points
	t, ck := hermiteLogWeights(k)
	newton := l.ruleSteps()
	o := c - 1
	per := float64(o*(k+newton+1)) * 20
	return &graph.RowFunc{
		Name:    fmt.Sprintf("robustmax-train(C=%d,k=%d,newton=%d)", c, k, newton),
		Out:     1,
		Saved:   rmSaved(o, newton, k),
		Scratch: 2*o + k*o,
		Cost:    per,
		VJPCost: 0.3 * per,
		F: func(in [][]float64, out, scratch []float64) {
			r := newRMRow(out[1:], scratch, o, newton, k)
			out[0] = r.forward(in[0], in[1], hotIndex(in[2]), t, ck, scratch[2*o:])
		},
		VJP: func(in [][]float64, g []float64, grad [][]float64, scratch []float64) {
			r := newRMRow(in[3], scratch, o, newton, k)
			r.reverse(g[0], in[1], hotIndex(in[2]), t, grad[0], grad[1])
		},
		Graph: func(args []*G.Node) (*G.Node, error) {
			p, err := l.argmaxProbGraph(layers.NewScope(args[0].Graph()), args[0], args[1], args[2], -1)
			if err != nil {
				return nil, err
			}
			return graph.Reshape(p, tensor.Shape{p.Shape()[0], 1})
		},
	}
}

// hotIndex is the class of a one-hot row (its largest entry).
func hotIndex(y []float64) int {
	best := 0
	for j, v := range y {
		if v > y[best] {
			best = j
		}
	}
	return best
}

// rmRow is one row's state, kept by the forward pass for the reverse one:
// for the other classes q (in class order, skipping y) a_q = (μ_y − μ_q)/σ_q,
// b_q = σ_y/σ_q and σ_q; per Newton iterate j the inverse Mills ratios λ
// and gaps x + λ at x = a + b z_j, z_j, −d²/dz² log g and the step's d1;
// per node Z_k and its weight e^(ℓ_k), λ at each node and class, and the
// rule's scale. The adjoints of a and b are the reverse pass's scratch.
type rmRow struct {
	o, newton, k     int
	a, b, sd         []float64
	lam, gap         []float64 // (newton+1)·o
	z, negD2, d1     []float64 // newton+1
	nodes, wts, lamK []float64 // k, k, k·o
	scale            []float64 // 1
	abar, bbar       []float64
}

// rmSaved is the length of a row's kept state.
func rmSaved(o, newton, k int) int {
	it := max(newton+1, 0)
	return 3*o + 2*it*o + 3*it + 2*k + k*o + 1
}

func newRMRow(kept, scratch []float64, o, newton, k int) rmRow {
	it := max(newton+1, 0)
	r := rmRow{o: o, newton: newton, k: k}
	take := func(n int) []float64 {
		v := kept[:n:n]
		kept = kept[n:]
		return v
	}
	r.a, r.b, r.sd = take(o), take(o), take(o)
	r.lam, r.gap = take(it*o), take(it*o)
	r.z, r.negD2, r.d1 = take(it), take(it), take(it)
	r.nodes, r.wts, r.lamK = take(k), take(k), take(k*o)
	r.scale = take(1)
	r.abar, r.bbar = scratch[:o:o], scratch[o:2*o:2*o]
	return r
}

// forward computes P for the row with target y in the order of
// operations of argmaxProbGraph, keeping what reverse needs; xs is scratch
// for the k·o arguments of Φ. The densities φ at those arguments and the
// nodes' weights are exponentials taken four at a time (graph.NormPDFValues,
// graph.ExpValues: within 3 ulp of math.Exp), which one at a time were half
// the row's cost.
func (r *rmRow) forward(mu, v []float64, y int, t, ck, xs []float64) float64 {
	muY, sdY := mu[y], math.Sqrt(v[y])
	q := 0
	for c := range mu {
		if c == y {
			continue
		}
		r.sd[q] = math.Sqrt(v[c])
		r.a[q] = (muY - mu[c]) / r.sd[q]
		r.b[q] = sdY / r.sd[q]
		q++
	}
	z, scale := placeRule(r.a, r.b, r.newton, r)
	r.scale[0] = scale
	centred := r.newton >= 0
	logScale := math.Log(scale)
	o := r.o
	xs = xs[:r.k*o]
	for i := range r.k {
		zk, lk := t[i]*math.Sqrt2, ck[i]
		if centred {
			zk *= scale
			lk += logScale
			zk += z
		}
		r.nodes[i] = zk
		r.wts[i] = lk - zk*zk*0.5
		for q := range o {
			xs[i*o+q] = r.a[q] + r.b[q]*zk
		}
	}
	// lamK holds φ until λ replaces it.
	graph.NormPDFValues(r.lamK, xs)
	for i := range r.k {
		sum := 0.0
		for q := range o {
			lp, lam, _ := graph.LogNormCDFInvMillsGiven(xs[i*o+q], r.lamK[i*o+q])
			r.lamK[i*o+q] = lam
			sum += lp
		}
		r.wts[i] += sum
	}
	graph.ExpValues(r.wts, r.wts)
	p := 0.0
	for _, w := range r.wts {
		p += w
	}
	return p
}

// reverse adds pbar times the gradient of P with respect to the row's
// means and variances to gmu and gv, from the state forward kept.
func (r *rmRow) reverse(pbar float64, v []float64, y int, t, gmu, gv []float64) {
	o := r.o
	clear(r.abar)
	clear(r.bbar)
	centred := r.newton >= 0
	s := r.scale[0]
	zbar, sbar := 0.0, 0.0
	// ℓ_k = L_k + Σ_q log Φ(a_q + b_q Z_k), L_k = c_k + log s − Z_k²/2,
	// Z_k = √2 t_k s + z.
	for i := range r.k {
		wk := pbar * r.wts[i]
		zk := r.nodes[i]
		zb := 0.0
		for q := range o {
			lam := r.lamK[i*o+q]
			r.abar[q] += wk * lam
			r.bbar[q] += wk * lam * zk
			zb += lam * r.b[q]
		}
		zb = wk * (zb - zk)
		if centred {
			sbar += wk/s + zb*math.Sqrt2*t[i]
			zbar += zb
		}
	}
	if centred {
		n := r.newton
		// s = (−d²)^(−1/2) at the last iterate.
		nbar := -0.5 * sbar * s * s * s
		r.iterateBar(n, 0, nbar, &zbar)
		for it := n - 1; it >= 0; it-- {
			// z_{it+1} = z_it + d1_it/negD2_it (z_0 = 0).
			negD2, d1 := r.negD2[it], r.d1[it]
			d1bar := zbar / negD2
			nbar := -zbar * d1 / (negD2 * negD2)
			if it > 0 {
				zbar -= d1bar // d1_it = Σ b λ − z_it
			} else {
				zbar = 0
			}
			r.iterateBar(it, d1bar, nbar, &zbar)
		}
	}
	// a_q = (μ_y − μ_q)/σ_q, b_q = σ_y/σ_q, σ = √v.
	sdY := math.Sqrt(v[y])
	sdYbar := 0.0
	q := 0
	for c := range v {
		if c == y {
			continue
		}
		sd := r.sd[q]
		gmu[y] += r.abar[q] / sd
		gmu[c] -= r.abar[q] / sd
		sdbar := -(r.abar[q]*r.a[q] + r.bbar[q]*r.b[q]) / sd
		sdYbar += r.bbar[q] / sd
		gv[c] += sdbar / (2 * sd)
		q++
	}
	gv[y] += sdYbar / (2 * sdY)
}

// iterateBar propagates the adjoints d1bar of d1 = Σ_q b_q λ(x_q) and nbar
// of −d² = 1 + Σ_q b_q² λ(x_q)(x_q + λ(x_q)) at Newton iterate it, where
// x_q = a_q + b_q z_it (z_0 = 0), to a, b and *zbar (the adjoint of z_it).
// With λ' = −λ·gap and gap' = 1 − λ·gap, (λ·gap)' = λ(1 − gap(gap + λ)).
func (r *rmRow) iterateBar(it int, d1bar, nbar float64, zbar *float64) {
	lam, gap := r.lam[it*r.o:(it+1)*r.o], r.gap[it*r.o:(it+1)*r.o]
	z := r.z[it]
	for q := range r.o {
		b := r.b[q]
		h := lam[q] * gap[q]
		hp := lam[q] * (1 - gap[q]*(gap[q]+lam[q]))
		r.bbar[q] += d1bar*lam[q] + nbar*2*b*h
		xbar := -d1bar*b*h + nbar*b*b*hp
		r.abar[q] += xbar
		if it > 0 {
			r.bbar[q] += xbar * z
			*zbar += xbar * b
		}
	}
}

// placeRule runs the Newton steps that place the quadrature rule of a row
// (argmaxProbGraph's, in its order of operations): the mode z of the
// integrand's log and the scale 1/√(−d²) at the last iterate, or 0 and 1
// for the plain rule (newton < 0). With rec it keeps each iterate's λ,
// gaps, z, −d² and d1 for the reverse pass.
func placeRule(a, b []float64, newton int, rec *rmRow) (z, scale float64) {
	for it := 0; it <= newton; it++ {
		d1, curv := 0.0, 0.0
		for q := range a {
			x := a[q]
			if it > 0 {
				x = a[q] + b[q]*z
			}
			lam, gap := graph.InvMillsGapValue(x)
			if rec != nil {
				rec.lam[it*rec.o+q], rec.gap[it*rec.o+q] = lam, gap
			}
			d1 += b[q] * lam
			curv += b[q] * b[q] * (lam * gap)
		}
		if it > 0 {
			d1 -= z
		}
		negD2 := curv + 1
		if rec != nil {
			rec.z[it], rec.negD2[it], rec.d1[it] = z, negD2, d1
		}
		if it == newton {
			return z, 1 / math.Sqrt(negD2)
		}
		if it == 0 {
			z = d1 / negD2
		} else {
			z += d1 / negD2
		}
	}
	return 0, 1
}

// normalizeRows divides each row of a positive matrix by its sum.
func normalizeRows(p *G.Node) (*G.Node, error) {
	sum, err := G.Sum(p, 1)
	if err != nil {
		return nil, err
	}
	b, err := graph.BroadcastTo(sum, p.Shape(), []int{1})
	if err != nil {
		return nil, err
	}
	return G.HadamardDiv(p, b)
}
