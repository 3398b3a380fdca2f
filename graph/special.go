package graph

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"github.com/gpc-dev/gpc/graph/internal/normtail"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Special functions of the standard normal distribution as elementwise ops.
// Gorgonia has no erf, so probit likelihoods need these. Each SymDiff is built
// from nodes that are themselves differentiable (stock elementwise ops or the
// ops of this file), so Grad can be applied to their gradients:
//
//	Φ' = φ,   φ' = −xφ,   (log Φ)' = λ,   λ' = −λ(x + λ),
//
// where λ = φ/Φ is the inverse Mills ratio.

// specialFn selects the function a specialOp computes.
type specialFn int

const (
	fnNormCDF specialFn = iota
	fnNormPDF
	fnLogNormCDF
	fnInvMills
	fnMillsGap
	fnExp
)

func (f specialFn) String() string {
	switch f {
	case fnNormCDF:
		return "NormCDF"
	case fnNormPDF:
		return "NormPDF"
	case fnLogNormCDF:
		return "LogNormCDF"
	case fnInvMills:
		return "InvMills"
	case fnMillsGap:
		return "MillsGap"
	case fnExp:
		return "Exp"
	}
	return fmt.Sprintf("specialFn(%d)", int(f))
}

func (f specialFn) eval(x float64) float64 {
	switch f {
	case fnNormCDF:
		return normCDF(x)
	case fnNormPDF:
		return normPDF(x)
	case fnLogNormCDF:
		return logNormCDF(x)
	case fnInvMills:
		return invMills(x)
	case fnMillsGap:
		return millsGap(x)
	case fnExp:
		return exp(x)
	}
	panic(fmt.Sprintf("graph: unknown special function %d", int(f)))
}

// specialOp applies a specialFn elementwise to a value of d dimensions
// (d = 0 for a scalar); d is part of the op because it fixes the op's type.
type specialOp struct {
	pureOp
	fn specialFn
	d  int
}

// NormCDF returns Φ(x) elementwise: the probit link, which Gorgonia cannot
// build (it has no erf). Below x = −5 it avoids erfc, whose rounded argument
// would cost up to x²ε relative accuracy, and stays exact to a few ulps until
// Φ underflows near x = −38; likelihoods should use LogNormCDF, which never
// underflows. Its gradient is NormPDF, so it can be differentiated twice.
func NormCDF(x *G.Node) (*G.Node, error) { return applySpecial(fnNormCDF, x) }

// NormPDF returns φ(x) = exp(−x²/2)/√(2π) elementwise as one op, so that its
// gradient −xφ(x) reuses the output node instead of rebuilding the exponential.
func NormPDF(x *G.Node) (*G.Node, error) { return applySpecial(fnNormPDF, x) }

// LogNormCDF returns log Φ(x) elementwise. Use it instead of Log(NormCDF(x)),
// which becomes −Inf below x ≈ −38 with a NaN gradient (φ/Φ = 0/0), and
// rounds to 0 above x ≈ 8: a continued fraction for the Mills ratio keeps
// full relative precision in the lower tail (log Φ(−40) = −804.608…), and
// log1p keeps it in the upper tail. Its gradient is InvMills, which stays
// finite and accurate in both tails.
func LogNormCDF(x *G.Node) (*G.Node, error) { return applySpecial(fnLogNormCDF, x) }

// InvMills returns the inverse Mills ratio λ(x) = φ(x)/Φ(x) elementwise, the
// derivative of log Φ. It is computed without forming φ/Φ in the lower tail,
// where both underflow; there λ(x) ≈ −x. Its gradient −λ(x + λ) takes x + λ
// from a separate op (millsGapNode) because forming it by addition would
// cancel in the lower tail, where x + λ ≈ −1/x.
func InvMills(x *G.Node) (*G.Node, error) { return applySpecial(fnInvMills, x) }

// millsGapNode returns x + λ(x) elementwise, computed without cancellation.
// Its gradient is 1 + λ' = 1 − λ(x + λ).
func millsGapNode(x *G.Node) (*G.Node, error) { return applySpecial(fnMillsGap, x) }

// Exp returns eˣ elementwise, within 3 ulp of math.Exp and, four lanes at a
// time in AVX2, about four times as fast (see expSlice). Unlike gorgonia.Exp
// it splits a large input across cores and does not first copy the input;
// its gradient ḡ ⊙ eˣ reuses the output node.
func Exp(x *G.Node) (*G.Node, error) { return applySpecial(fnExp, x) }

func applySpecial(fn specialFn, x *G.Node) (*G.Node, error) {
	if x.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("graph.%v: %v has dtype %v, want float64", fn, x.Name(), x.Dtype())
	}
	return applyOp(specialOp{fn: fn, d: x.Dims()}, x)
}

func (op specialOp) Arity() int    { return 1 }
func (op specialOp) Type() hm.Type { return fnType(op.d, op.d) }
func (op specialOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return shapeOf(in[0])
}
func (op specialOp) String() string        { return fmt.Sprintf("%v{%dd}", op.fn, op.d) }
func (op specialOp) WriteHash(h hash.Hash) { writeHash(h, op) }
func (op specialOp) Hashcode() uint32      { return hashOf(op) }
func (op specialOp) DiffWRT(int) []bool    { return []bool{true} }

func (op specialOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	out := op.buf.take(len(x))
	cost := 30.0 // ns per element: erfc, or a continued fraction in the tail
	if op.fn == fnExp {
		cost = 1.5 // expSlice
	}
	if splits(len(x), 1, cost) {
		parallelFor(len(x), 1, cost, func(lo, hi int) { op.fn.evalRange(x[lo:hi], out[lo:hi]) })
	} else {
		op.fn.evalRange(x, out)
	}
	return op.buf.owned(vs[0].Shape(), out), nil
}

// evalRange sets out[i] = f(x[i]).
func (f specialFn) evalRange(x, out []float64) {
	out = out[:len(x)]
	if f == fnExp { // the common case, four at a time
		expSlice(out, x)
		return
	}
	for i, v := range x {
		out[i] = f.eval(v)
	}
}

func (op specialOp) SymDiff(in G.Nodes, out, g *G.Node) (G.Nodes, error) {
	x := in[0]
	var d *G.Node // dy/dx
	var err error
	switch op.fn {
	case fnNormCDF:
		d, err = NormPDF(x)
	case fnLogNormCDF:
		d, err = InvMills(x)
	case fnNormPDF: // −x φ
		if d, err = G.HadamardProd(x, out); err == nil {
			d, err = G.Neg(d)
		}
	case fnInvMills: // −λ (x + λ)
		if d, err = millsGapNode(x); err == nil {
			if d, err = G.HadamardProd(out, d); err == nil {
				d, err = G.Neg(d)
			}
		}
	case fnExp:
		d = out
	case fnMillsGap: // 1 − λ (x + λ)
		if d, err = InvMills(x); err == nil {
			if d, err = G.HadamardProd(d, out); err == nil {
				d, err = G.Sub(G.NewConstant(1.0, G.WithName("1")), d)
			}
		}
	default:
		err = fmt.Errorf("graph: no derivative for %v", op.fn)
	}
	if err != nil {
		return nil, err
	}
	if sameShape(d.Shape(), g.Shape()) && d.Dims() == 2 {
		r, err := Map(product, d, g) // one pass, split across cores
		return G.Nodes{r}, err
	}
	r, err := G.HadamardProd(d, g)
	return G.Nodes{r}, err
}

const (
	invSqrt2   = 0.70710678118654752440 // 1/√2
	invSqrt2Pi = 0.39894228040143267794 // 1/√(2π)
	logSqrt2Pi = 0.91893853320467274178 // log √(2π)
	tailCut    = -5.0                   // at and below this, the continued fraction is used
)

// normPDF is φ(x). x² is split as hi² + lo(x + hi) with hi² exact, because
// the rounding of x² would reach the exponent and cost up to x²ε relative.
// The small factor e^y, y = −lo(x + hi)/2 and |y| < 1.5e-8·x² ≤ 2.3e-5, is
// its Taylor polynomial to y⁴ (the remainder is below 1e-25): one
// exponential where there were two. Beyond |x| = 39, φ underflows to 0.
func normPDF(x float64) float64 {
	if math.Abs(x) >= 39 {
		return 0
	}
	hi := normPDFHi(x)
	return normPDFFrom(x, hi, math.Exp(-0.5*hi*hi))
}

// normPDFHi is x with the low 27 bits of its significand cleared, so that
// hi² is exact.
func normPDFHi(x float64) float64 { return math.Float64frombits(math.Float64bits(x) &^ (1<<27 - 1)) }

// normPDFFrom is φ(x) from hi = normPDFHi(x) and e = e^(−hi²/2), times
// the small factor's Taylor polynomial.
func normPDFFrom(x, hi, e float64) float64 {
	y := -0.5 * (x - hi) * (x + hi)
	return invSqrt2Pi * e * (1 + y*(1+y*0.5*(1+y*(1.0/3)*(1+y*0.25))))
}

// millsTail returns v(t) = 1/R(t) − t for t ≥ 0, R(t) = (1 − Φ(t))/φ(t)
// the Mills ratio: Laplace's continued fraction R = 1/(t + v), v = 1/(t +
// 2/(t + 3/(t + …))). At x = −t the inverse Mills ratio is λ = t + v and
// x + λ = v, with no cancellation.
//
// Below t = 40 v comes from a table of local polynomials (package
// normtail, 80 intervals of width ½ from 0), within 2 ulp of v computed in
// 320-bit arithmetic (TestMillsTableAccuracy). The fraction's terms are a
// chain of dependent divisions, 21–32 of them for 5 ≤ t ≤ 10, each waiting
// on the last: ~50 ns a value where the polynomial takes under 10
// (BenchmarkMillsTail), and the deep tail is where robust-max's wrong
// classes and a confident class's log Φ(x) at large x (through
// Q = φ/(x + v)) sit. Below 5, where the fraction converges slowly, λ and
// x + λ came from φ(x)/Φ(x), an exponential and a division, with x + λ
// cancelling to 1e-13. From 40 on, the fraction needs 11 terms.
func millsTail(t float64) float64 {
	if t < millsEnd {
		// t − MillsStart is exact: MillsStart is an integer and t < 2⁵³.
		return tablePoly(millsV[:], (t-normtail.MillsStart)*normtail.MillsScale)
	}
	return millsFraction(t)
}

// millsFraction is v by the continued fraction, to as many terms as t
// needs. It converges faster as t grows (to full precision in 27 terms at
// t = 5, 14 at t = 10, 7 at t = 30); millsTerms keeps four to eight terms
// above that at the start of each range. Against 60 terms everywhere the
// value is the same to within 1.4 ulp (33 of 600 000 points from 5 to 2000
// differ at all, by rounding order), checked by TestMillsTermsEnough.
func millsFraction(t float64) float64 {
	v := 0.0
	for k := millsTerms(t); k >= 2; k-- {
		v = float64(k) / (t + v)
	}
	return 1 / (t + v)
}

// millsTerms is the number of terms millsTail evaluates at t ≥ 5.
func millsTerms(t float64) int {
	switch {
	case t < 6:
		return 32
	case t < 8:
		return 26
	case t < 10:
		return 21
	case t < 14:
		return 18
	case t < 20:
		return 15
	case t < 40:
		return 13
	}
	return 11
}

// normCDF is Φ(x). In the lower tail Φ = φ(x)/(t + v) avoids erfc, whose
// argument −x/√2 is rounded before the exponential amplifies the error.
func normCDF(x float64) float64 {
	switch {
	case x <= tailCut:
		t := -x
		return normPDF(x) / (t + millsTail(t))
	case x < 0:
		return upperTail(-x)
	case x < normTailEnd:
		return 1 - upperTail(x)
	case x >= normTailEnd:
		return 1 // 1 − Q rounds to 1 from t ≈ 8.2924
	}
	return x // NaN
}

// normTailEnd is the end of normTail's range.
const normTailEnd = float64(normtail.Intervals) / normtail.Scale

// upperTail's Estrin scheme is written for degree 13.
const _ = uint(normtail.Degree-13) + uint(13-normtail.Degree)

// upperTail is Q(t) = 1 − Φ(t) for 0 ≤ t < normTailEnd, from the table of
// local polynomials generated by package normtail: within 2 ulp of the
// correctly rounded value (TestUpperTailAccuracy), about four times as fast
// as math.Erfc, which takes two exponentials. The polynomial is evaluated
// by Estrin's scheme, whose short dependency chains let the evaluations of
// neighbouring elements overlap.
func upperTail(t float64) float64 {
	return tablePoly(normTail[:], t*normtail.Scale) // exact: Scale is a power of two
}

// tablePoly evaluates a table of local polynomials of degree 13 at s, in
// units of its intervals' width from the table's start: interval i = ⌊s⌋'s
// b[0] + b[1]u + … + b[13]u¹³ at u = 2(s − i − ½) ∈ [−1, 1], by Estrin's
// scheme.
func tablePoly(tab [][normtail.Degree + 1]float64, s float64) float64 {
	i := int(s)
	b := &tab[i]
	u := (s - (float64(i) + 0.5)) * 2
	u2 := u * u
	u4 := u2 * u2
	q0 := (b[0] + b[1]*u) + (b[2]+b[3]*u)*u2
	q1 := (b[4] + b[5]*u) + (b[6]+b[7]*u)*u2
	q2 := (b[8] + b[9]*u) + (b[10]+b[11]*u)*u2
	q3 := b[12] + b[13]*u
	return (q0 + q1*u4) + (q2+q3*u4)*(u4*u4)
}

// tablePoly2 is tablePoly on two tables of the same layout at once, the
// pair of polynomials sharing u's powers (Q and log Q, say): each value is
// bit for bit tablePoly's.
func tablePoly2(ta, tb [][normtail.Degree + 1]float64, s float64) (a, b float64) {
	i := int(s)
	x, y := &ta[i], &tb[i]
	u := (s - (float64(i) + 0.5)) * 2
	u2 := u * u
	u4 := u2 * u2
	u8 := u4 * u4
	x0 := (x[0] + x[1]*u) + (x[2]+x[3]*u)*u2
	y0 := (y[0] + y[1]*u) + (y[2]+y[3]*u)*u2
	x1 := (x[4] + x[5]*u) + (x[6]+x[7]*u)*u2
	y1 := (y[4] + y[5]*u) + (y[6]+y[7]*u)*u2
	x2 := (x[8] + x[9]*u) + (x[10]+x[11]*u)*u2
	y2 := (y[8] + y[9]*u) + (y[10]+y[11]*u)*u2
	x3 := x[12] + x[13]*u
	y3 := y[12] + y[13]*u
	return (x0 + x1*u4) + (x2+x3*u4)*u8, (y0 + y1*u4) + (y2+y3*u4)*u8
}

// millsEnd is the end of the Mills table's range.
const millsEnd = normtail.MillsStart + float64(normtail.MillsIntervals)/normtail.MillsScale

// logNormCDF is log Φ(x). In the lower tail log Φ = −x²/2 − log√(2π) −
// log(t + v) never forms Φ, which underflows below x ≈ −38. Between the
// tail cut and the end of the Q table it is a table of its own local
// polynomials (log Q(−x) below 0, log(1 − Q(x)) above, package normtail),
// within 2 ulp as math.Log and math.Log1p of the Q table were, in under half
// their time (BenchmarkLogNormCDFTable); the upper side keeps the tiny
// values that log(1 − Q) would round to 0. Beyond the table, −φ/(x + v)
// (logNormCDFFar).
func logNormCDF(x float64) float64 {
	switch {
	case x <= tailCut:
		t := -x
		return -0.5*x*x - logSqrt2Pi - math.Log(t+millsTail(t))
	case x > 0 && x < normTailEnd:
		return tablePoly(logPhiTail[:], x*normtail.Scale)
	case x > 0:
		return logNormCDFFar(x, normPDF(x))
	case x <= 0:
		return tablePoly(logQTail[:], -x*normtail.Scale)
	}
	return x // NaN
}

// logNormCDFFar is log Φ(x) = log(1 − Q) for x ≥ normTailEnd given pdf =
// φ(x): Q = φ/(x + v) by the Mills remainder, and log(1 − Q) = −Q(1 + Q/2 +
// …) is −Q to within a quarter of an ulp, since Q < 6e-17. It was math.Erfc
// and math.Log1p, two exponentials and a logarithm where a confident
// class's term needs none beyond φ.
func logNormCDFFar(x, pdf float64) float64 {
	return -(pdf / (x + millsTail(x)))
}

// invMills is λ(x) = φ(x)/Φ(x); for x ≤ 0 λ = t + v, which stays accurate
// (≈ −x) where φ and Φ both underflow.
func invMills(x float64) float64 {
	lam, _ := invMillsGap(x)
	return lam
}

// millsGap is x + λ(x) > 0, the factor in λ' = −λ(x + λ). Forming it as
// x + invMills(x) would cancel for x < 0, catastrophically in the lower tail
// (x + λ ≈ −1/x), so there it is the remainder v itself.
func millsGap(x float64) float64 {
	_, gap := invMillsGap(x)
	return gap
}

// invMillsGap is λ(x) and x + λ(x) together, one computation serving both
// (for x ≤ 0, λ = t + v and x + λ = v).
func invMillsGap(x float64) (lam, gap float64) {
	if x <= 0 {
		t := -x
		v := millsTail(t)
		return t + v, v
	}
	lam = normPDF(x) / normCDF(x)
	return lam, x + lam
}

// logNormCDFInvMills is log Φ(x), λ(x) and x + λ(x) together, each equal
// to what logNormCDF and invMillsGap return, sharing the tail evaluation
// that the three need.
func logNormCDFInvMills(x float64) (lp, lam, gap float64) {
	if x <= tailCut {
		return logNormCDFInvMillsTail(x)
	}
	return logNormCDFInvMillsAt(x, normPDF(x))
}

// logNormCDFInvMillsTail is logNormCDFInvMills at x ≤ tailCut, where the
// continued fraction gives all three without φ(x).
func logNormCDFInvMillsTail(x float64) (lp, lam, gap float64) {
	t := -x
	v := millsTail(t)
	return -0.5*x*x - logSqrt2Pi - math.Log(t+v), t + v, v
}

// logNormCDFInvMillsAt is logNormCDFInvMills above tailCut given pdf =
// φ(x), which only x > 0 uses.
func logNormCDFInvMillsAt(x, pdf float64) (lp, lam, gap float64) {
	switch {
	case x > 0 && x < normTailEnd:
		q, lp := tablePoly2(normTail[:], logPhiTail[:], x*normtail.Scale)
		lam = pdf / (1 - q)
		return lp, lam, x + lam
	case x > 0:
		lam = pdf
		return logNormCDFFar(x, pdf), lam, x + lam
	case x <= 0:
		t := -x
		v := millsTail(t)
		return tablePoly(logQTail[:], t*normtail.Scale), t + v, v
	}
	return x, x, x // NaN
}

// LogNormCDFInvMillsGiven is LogNormCDFInvMillsValue with φ(x) given, as
// NormPDFValues computes it for many numbers at once; at x ≤ 0, where λ is
// t + v from the Mills table, pdf is ignored.
func LogNormCDFInvMillsGiven(x, pdf float64) (lp, lam, gap float64) {
	if x <= tailCut {
		return logNormCDFInvMillsTail(x)
	}
	return logNormCDFInvMillsAt(x, pdf)
}

// NormPDFValues sets dst[i] = φ(x[i]) as the scalar density does (x² split
// so that its rounding does not reach the exponent) but with the
// exponentials four at a time (ExpValues, within 3 ulp of math.Exp): a
// per-row function that needs φ at many points gets them at a quarter of
// the exponentials' cost. dst must not overlap x.
func NormPDFValues(dst, x []float64) {
	x = x[:len(dst)]
	// dst first holds −hi²/2 (−∞ where φ underflows), then e^(−hi²/2).
	for i, v := range x {
		hi := normPDFHi(v)
		dst[i] = -0.5 * hi * hi
		if !(math.Abs(v) < 39) {
			dst[i] = math.Inf(-1)
		}
	}
	expSlice(dst, dst)
	for i, v := range x {
		if !(math.Abs(v) < 39) {
			dst[i] = 0
			if math.IsNaN(v) {
				dst[i] = v
			}
			continue
		}
		dst[i] = normPDFFrom(v, normPDFHi(v), dst[i])
	}
}

// LogNormCDFInvMillsValue is log Φ(x), λ(x) = φ(x)/Φ(x) and x + λ(x) for a
// number, as LogNormCDFValue, InvMillsValue and MillsGap compute them, in
// one evaluation of the tail they share (for per-row code with its own
// gradient, such as robust-max's quadrature).
func LogNormCDFInvMillsValue(x float64) (lp, lam, gap float64) { return logNormCDFInvMills(x) }

// MillsGap returns x + λ(x) elementwise without the cancellation that forming
// the sum suffers far in the lower tail. It is the curvature term of log Φ:
// d²/dx² log Φ(x) = −λ(x)(x + λ(x)).
func MillsGap(x *G.Node) (*G.Node, error) { return millsGapNode(x) }

func (op specialOp) withBuf(b *outBuf) G.Op { op.buf = b; return op }

// LogNormCDFValue is log Φ(x) for a number, with the ops' accuracy in both
// tails (for code outside graphs, such as EP's tilted moments).
func LogNormCDFValue(x float64) float64 { return logNormCDF(x) }

// InvMillsValue is φ(x)/Φ(x) for a number, stable for large negative x.
func InvMillsValue(x float64) float64 { return invMills(x) }

// NormCDFValue is Φ(x) for a number, as the NormCDF op computes it.
func NormCDFValue(x float64) float64 { return normCDF(x) }

// InvMillsGapValue returns λ(x) = φ(x)/Φ(x) and x + λ(x), each exactly as
// InvMills and MillsGap compute them, for the price of one: the pair is
// what a Newton step on log Φ needs.
func InvMillsGapValue(x float64) (lam, gap float64) { return invMillsGap(x) }
