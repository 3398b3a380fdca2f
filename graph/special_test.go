package graph

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gpc-dev/gpc/graph/internal/normtail"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// High-precision references for φ and Φ, computed with math/big so the test
// does not depend on any float64 erf: Φ(x) = 1/2 + φ(x) Σ x^{2n+1}/(2n+1)!!
// (Marsaglia's series, exact for every x), with 2400 bits so that the
// cancellation at x = −40 (Φ ≈ 1e−350 from terms ≈ 1e+347) leaves > 500 digits.

const refPrec = 2400

func bigF(v float64) *big.Float { return new(big.Float).SetPrec(refPrec).SetFloat64(v) }

// bigPi uses Machin's formula π = 16 atan(1/5) − 4 atan(1/239).
func bigPi() *big.Float {
	atanInv := func(k int64) *big.Float {
		kk := bigF(float64(k))
		k2 := new(big.Float).SetPrec(refPrec).Mul(kk, kk)
		pw := new(big.Float).SetPrec(refPrec).Quo(bigF(1), kk)
		sum := bigF(0)
		for n := int64(0); pw.MantExp(nil) > -refPrec-16; n++ {
			term := new(big.Float).SetPrec(refPrec).Quo(pw, bigF(float64(2*n+1)))
			if n%2 == 0 {
				sum.Add(sum, term)
			} else {
				sum.Sub(sum, term)
			}
			pw.Quo(pw, k2)
		}
		return sum
	}
	a := atanInv(5)
	a.Mul(a, bigF(16))
	b := atanInv(239)
	b.Mul(b, bigF(4))
	return a.Sub(a, b)
}

// bigExp computes e^y as (Taylor series of e^{y/2^m})^(2^m).
func bigExp(y *big.Float) *big.Float {
	const m = 20
	r := new(big.Float).SetPrec(refPrec).SetMantExp(y, -m)
	sum, term := bigF(1), bigF(1)
	for n := 1; term.Sign() != 0 && term.MantExp(nil) > -refPrec-16; n++ {
		term.Mul(term, r)
		term.Quo(term, bigF(float64(n)))
		sum.Add(sum, term)
	}
	for i := 0; i < m; i++ {
		sum.Mul(sum, sum)
	}
	return sum
}

var (
	refSqrt2Pi     *big.Float
	refSqrt2PiOnce sync.Once
)

// refNormal returns φ(x) and Φ(x) to far more than float64 precision.
func refNormal(x float64) (pdf, cdf *big.Float) {
	refSqrt2PiOnce.Do(func() {
		p := bigPi()
		p.Mul(p, bigF(2))
		refSqrt2Pi = new(big.Float).SetPrec(refPrec).Sqrt(p)
	})
	X := bigF(x)
	x2 := new(big.Float).SetPrec(refPrec).Mul(X, X)
	e := bigExp(new(big.Float).SetPrec(refPrec).Quo(new(big.Float).Neg(x2), bigF(2)))
	pdf = new(big.Float).SetPrec(refPrec).Quo(e, refSqrt2Pi)
	sum := bigF(0)
	term := new(big.Float).SetPrec(refPrec).Set(X)
	for n := 0; term.Sign() != 0; n++ {
		sum.Add(sum, term)
		term.Mul(term, x2)
		term.Quo(term, bigF(float64(2*n+3)))
		if n > 10 && sum.Sign() != 0 && term.MantExp(nil) < sum.MantExp(nil)-refPrec-16 {
			break
		}
	}
	cdf = new(big.Float).SetPrec(refPrec).Mul(pdf, sum)
	cdf.Add(cdf, bigF(0.5))
	return pdf, cdf
}

// bigLog returns log v as a float64 (v may be far outside float64's range).
func bigLog(v *big.Float) float64 {
	mant := new(big.Float)
	e := v.MantExp(mant)
	f, _ := mant.Float64()
	return math.Log(f) + float64(e)*math.Ln2
}

type specialRef struct {
	x                          float64
	pdf, cdf, logCDF, invMills float64
	gap                        float64 // x + λ(x)
}

func specialRefs(xs ...float64) []specialRef {
	out := make([]specialRef, len(xs))
	for i, x := range xs {
		pdf, cdf := refNormal(x)
		r := specialRef{x: x}
		r.pdf, _ = pdf.Float64()
		r.cdf, _ = cdf.Float64()
		if x > 0 { // log(1 − Q) with Q = 1 − Φ formed exactly in big
			q := new(big.Float).SetPrec(refPrec).Sub(bigF(1), cdf)
			qf, _ := q.Float64()
			r.logCDF = math.Log1p(-qf)
		} else {
			r.logCDF = bigLog(cdf)
		}
		lam := new(big.Float).SetPrec(refPrec).Quo(pdf, cdf)
		r.invMills, _ = lam.Float64()
		r.gap, _ = lam.Add(lam, bigF(x)).Float64()
		out[i] = r
	}
	return out
}

var specialPoints = []float64{-40, -30, -20, -10, -5.5, -5, -4.5, -3, -1, -0.5, 0, 0.5, 1, 3, 5, 10}

// relTo is |got − want| / |want| (0 when both are 0).
func relTo(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestSpecialReferenceSanity(t *testing.T) {
	// Independent checks of the reference itself: the value quoted for
	// log Φ(−40) and the identities Φ(0) = 1/2, Φ(x) + Φ(−x) = 1.
	r := specialRefs(-40, 0)
	if r[0].logCDF != -804.6084420137538 {
		t.Errorf("reference log Φ(−40) = %.17g, want -804.6084420137538", r[0].logCDF)
	}
	if r[1].cdf != 0.5 || r[1].pdf != 1/math.Sqrt(2*math.Pi) {
		t.Errorf("reference Φ(0) = %v, φ(0) = %v", r[1].cdf, r[1].pdf)
	}
	_, a := refNormal(1.5)
	_, b := refNormal(-1.5)
	if s, _ := new(big.Float).Add(a, b).Float64(); s != 1 {
		t.Errorf("reference Φ(1.5) + Φ(−1.5) = %v", s)
	}
}

// TestSpecialForward compares the float64 kernels and the graph ops (on a
// vector, a matrix and scalars) with the high-precision references.
func TestSpecialForward(t *testing.T) {
	refs := specialRefs(specialPoints...)
	type fn struct {
		name string
		f    func(float64) float64
		op   func(*G.Node) (*G.Node, error)
		ref  func(specialRef) float64
		tol  float64
	}
	fns := []fn{
		{"NormCDF", normCDF, NormCDF, func(r specialRef) float64 { return r.cdf }, 4e-15},
		{"NormPDF", normPDF, NormPDF, func(r specialRef) float64 { return r.pdf }, 4e-15},
		{"LogNormCDF", logNormCDF, LogNormCDF, func(r specialRef) float64 { return r.logCDF }, 4e-15},
		{"InvMills", invMills, InvMills, func(r specialRef) float64 { return r.invMills }, 4e-15},
		// x + λ would cancel for x < 0 (at x = −4.5 λ ≈ 4.7, x + λ ≈ 0.2);
		// there it is the Mills remainder v, within 2 ulp.
		{"millsGap", millsGap, millsGapNode, func(r specialRef) float64 { return r.gap }, 4e-15},
	}
	xs := make([]float64, len(refs))
	for i, r := range refs {
		xs[i] = r.x
	}
	for _, f := range fns {
		worst := 0.0
		for _, r := range refs {
			got, want := f.f(r.x), f.ref(r)
			e := relTo(got, want)
			worst = math.Max(worst, e)
			if !(e <= f.tol) {
				t.Errorf("%s(%v) = %.17g, want %.17g (relative error %.2g)", f.name, r.x, got, want, e)
			}
		}
		t.Logf("%-10s max relative error %.2g over %v", f.name, worst, xs)

		// Through the graph: a vector, a matrix and a scalar input.
		g := G.NewGraph()
		v := param(g, "v", tensor.Shape{len(xs)}, xs...)
		m := param(g, "m", tensor.Shape{2, len(xs) / 2}, xs...)
		s := param(g, "s", nil, -40)
		yv, ym, ys := must(f.op(v)), must(f.op(m)), must(f.op(s))
		if !sameShape(yv.Shape(), v.Shape()) || !sameShape(ym.Shape(), m.Shape()) || !ys.IsScalar() {
			t.Fatalf("%s: shapes %v %v %v", f.name, yv.Shape(), ym.Shape(), ys.Shape())
		}
		p := run(t, g, yv, ym, ys)
		for _, y := range []*G.Node{yv, ym} {
			got, err := p.Float64s(y)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range refs {
				if got[i] != f.f(r.x) {
					t.Errorf("%s node %v[%d] = %v, want %v", f.name, y.Shape(), i, got[i], f.f(r.x))
				}
			}
		}
		if got, err := p.Scalar(ys); err != nil || got != f.f(-40) {
			t.Errorf("%s scalar node = %v (%v), want %v", f.name, got, err, f.f(-40))
		}
	}
}

// Far beyond any reference, the asymptotic expansions are exact to float64.
func TestSpecialFarTail(t *testing.T) {
	for _, x := range []float64{-1e3, -1e5, -1e8} {
		u := 1 / (x * x)
		wantLam := -x * (1 + u*(1-u*(2-10*u)))
		wantLog := -0.5*x*x - math.Log(-x) - logSqrt2Pi + math.Log1p(-u*(1-u*(2.5-u*37.0/3)))
		if e := relTo(invMills(x), wantLam); e > 4e-16 {
			t.Errorf("InvMills(%g) = %.17g, want %.17g", x, invMills(x), wantLam)
		}
		if e := relTo(logNormCDF(x), wantLog); e > 4e-16 {
			t.Errorf("LogNormCDF(%g) = %.17g, want %.17g", x, logNormCDF(x), wantLog)
		}
	}
	if v := invMills(math.Inf(-1)); !math.IsInf(v, 1) {
		t.Errorf("InvMills(−Inf) = %v, want +Inf", v)
	}
	if v := logNormCDF(math.Inf(-1)); !math.IsInf(v, -1) {
		t.Errorf("LogNormCDF(−Inf) = %v, want −Inf", v)
	}
	if v := logNormCDF(math.Inf(1)); v != 0 {
		t.Errorf("LogNormCDF(+Inf) = %v, want 0", v)
	}
	if v := invMills(math.Inf(1)); v != 0 {
		t.Errorf("InvMills(+Inf) = %v, want 0", v)
	}
	if !math.IsNaN(logNormCDF(math.NaN())) || !math.IsNaN(invMills(math.NaN())) {
		t.Error("NaN must propagate")
	}
	// The two branches meet at the tail cut without a visible step.
	lo, hi := math.Nextafter(tailCut, math.Inf(-1)), math.Nextafter(tailCut, math.Inf(1))
	for name, f := range map[string]func(float64) float64{"LogNormCDF": logNormCDF, "InvMills": invMills} {
		if e := relTo(f(hi), f(lo)); e > 4e-15 {
			t.Errorf("%s jumps by %.2g (relative) across x = %v", name, e, tailCut)
		}
	}
}

type specialOpCase struct {
	name string
	op   func(*G.Node) (*G.Node, error)
	f    func(float64) float64
	xs   []float64
	step float64 // finite-difference step; φ-like functions in the tail need a small one
}

var specialOpCases = []specialOpCase{
	{"NormCDF", NormCDF, normCDF, []float64{-3, -1, 0, 0.7, 2.5}, 0},
	{"NormCDF/tail", NormCDF, normCDF, []float64{-30, -10, -5}, 1e-5},
	{"NormPDF", NormPDF, normPDF, []float64{-2, -0.5, 0, 0.3, 1.5, 4}, 0},
	{"NormPDF/tail", NormPDF, normPDF, []float64{-30, -10}, 1e-5},
	{"LogNormCDF", LogNormCDF, logNormCDF, []float64{-40, -30, -20, -10, -5, -3, -1, 0, 3}, 0},
	{"LogNormCDF/upper tail", LogNormCDF, logNormCDF, []float64{6, 10}, 1e-5},
	{"InvMills", InvMills, invMills, []float64{-40, -30, -20, -10, -5, -3, -1, 0, 3}, 0},
	{"InvMills/upper tail", InvMills, invMills, []float64{6, 10}, 1e-5},
	{"millsGap", millsGapNode, millsGap, []float64{-40, -30, -10, -5, -3, -1, 0, 3, 10}, 0},
	{"Exp", Exp, exp, []float64{-20, -3, -0.5, 0, 1, 4}, 0},
}

// specialCost is Σ w ⊙ op(θ) with fixed weights w_k/|op(θ_k)|: scaling each
// term to order one makes the checker's relative error meaningful for
// values such as Φ(−30) ≈ 5e−198 or log Φ(10) ≈ −8e−24.
func specialCost(c specialOpCase, x *G.Node) (*G.Node, error) {
	y, err := c.op(x)
	if err != nil {
		return nil, err
	}
	xs, err := Float64s(x.Value())
	if err != nil {
		return nil, err
	}
	ws := weights(len(xs))
	for k, v := range xs {
		ws[k] /= math.Abs(c.f(v))
	}
	w := param(x.Graph(), "w", x.Shape(), ws...)
	if y, err = G.HadamardProd(w, y); err != nil {
		return nil, err
	}
	return G.Sum(y)
}

// TestSpecialGrad checks first and second derivatives of each op at each
// point separately (a scalar parameter), and once on a vector of all the
// points.
func TestSpecialGrad(t *testing.T) {
	for _, c := range specialOpCases {
		check := func(t *testing.T, shape tensor.Shape, xs []float64) {
			for order, checker := range []func(*G.Node, G.Nodes, CheckOptions) (CheckReport, error){CheckGrad, CheckGrad2} {
				g := G.NewGraph()
				x := param(g, "x", shape, xs...)
				cost, err := specialCost(c, x)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := checker(cost, G.Nodes{x}, CheckOptions{Step: c.step, Seed: 3})
				if err != nil {
					t.Fatalf("order %d: %v", order+1, err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					p := rep.Params[0]
					t.Errorf("order %d at %v: relative error %.3g; analytic %v, numeric %v", order+1, xs, rep.MaxRelErr, p.Analytic, p.Numeric)
				} else {
					t.Logf("order %d at %v: relative error %.2g", order+1, xs, rep.MaxRelErr)
				}
			}
		}
		t.Run(c.name, func(t *testing.T) {
			for _, x := range c.xs {
				check(t, nil, []float64{x})
			}
			check(t, tensor.Shape{len(c.xs)}, c.xs)
			check(t, tensor.Shape{1, len(c.xs)}, c.xs) // a matrix: the fused adjoint
		})
	}
}

// TestInvMillsSlopeFarTail checks the graph's λ' = −λ(x + λ) where forming
// x + λ by addition would have lost most or all digits: for x ≤ −1e3 the
// asymptotic series λ' = −(1 − u + 6u² − 50u³), u = 1/x², is exact to float64.
func TestInvMillsSlopeFarTail(t *testing.T) {
	xs := []float64{-1e3, -1e4, -1e6}
	g := G.NewGraph()
	x := param(g, "x", tensor.Shape{len(xs)}, xs...)
	d, err := Grad(must(G.Sum(must(InvMills(x)))), x)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, d[0])
	got, _ := p.Float64s(d[0])
	for i, v := range xs {
		u := 1 / (v * v)
		want := -(1 - u*(1-u*(6-50*u)))
		if e := relTo(got[i], want); e > 1e-15 {
			t.Errorf("λ'(%g) = %.17g, want %.17g (relative error %.2g)", v, got[i], want, e)
		}
	}
}

// TestProbitLikelihoodSecondOrder differentiates a probit log-likelihood
// Σ log Φ(y ⊙ f) twice with respect to the latent f, including a point deep
// in the tail, and checks the Hessian diagonal in closed form:
// ∂²/∂f² log Φ(yf) = −λ(yf)(yf + λ(yf)) (y² = 1).
func TestProbitLikelihoodSecondOrder(t *testing.T) {
	fs := []float64{-25, -2, 0.3, 1.7, 6}
	ys := []float64{1, -1, 1, -1, -1}
	g := G.NewGraph()
	f := param(g, "f", tensor.Shape{len(fs)}, fs...)
	y := param(g, "y", tensor.Shape{len(ys)}, ys...)
	z := must(G.HadamardProd(y, f))
	ll := must(G.Sum(must(LogNormCDF(z))))
	gf, err := Grad(ll, f)
	if err != nil {
		t.Fatal(err)
	}
	// The Hessian is diagonal, so the gradient of Σ ∂ll/∂f_i is its diagonal.
	diag, err := Grad(must(G.Sum(gf[0])), f)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, gf[0], diag[0])
	g1, _ := p.Float64s(gf[0])
	g2, _ := p.Float64s(diag[0])
	for i := range fs {
		zi := ys[i] * fs[i]
		lam := invMills(zi)
		if e := relTo(g1[i], ys[i]*lam); e > 1e-14 {
			t.Errorf("∂ll/∂f[%d] = %v, want %v", i, g1[i], ys[i]*lam)
		}
		want := -lam * (zi + lam)
		if e := relTo(g2[i], want); e > 1e-12 {
			t.Errorf("∂²ll/∂f[%d]² = %v, want %v", i, g2[i], want)
		}
	}
	for _, order := range []int{1, 2} {
		g := G.NewGraph()
		f := param(g, "f", tensor.Shape{len(fs)}, fs...)
		y := param(g, "y", tensor.Shape{len(ys)}, ys...)
		ll := must(G.Sum(must(LogNormCDF(must(G.HadamardProd(y, f))))))
		check := CheckGrad
		if order == 2 {
			check = CheckGrad2
		}
		rep, err := check(ll, G.Nodes{f}, CheckOptions{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !(rep.MaxRelErr <= 1e-6) {
			t.Errorf("order %d: relative error %.3g", order, rep.MaxRelErr)
		}
	}
}

func TestSpecialOpHashes(t *testing.T) {
	// Distinct functions and ranks must not be merged by hash-consing.
	seen := map[uint32]string{}
	for _, fn := range []specialFn{fnNormCDF, fnNormPDF, fnLogNormCDF, fnInvMills} {
		for d := 0; d < 3; d++ {
			op := specialOp{fn: fn, d: d}
			if prev, ok := seen[op.Hashcode()]; ok {
				t.Errorf("%v and %v hash equal", op, prev)
			}
			seen[op.Hashcode()] = fmt.Sprint(op)
		}
	}
}

// A large input is split across cores; every element is still computed,
// once, by the scalar function.
func TestSpecialParallelValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	xs := make([]float64, 200*784+3)
	for i := range xs {
		xs[i] = 6 * rng.NormFloat64()
	}
	for _, c := range []specialOpCase{specialOpCases[4], specialOpCases[len(specialOpCases)-1]} {
		g := G.NewGraph()
		x := param(g, "x", tensor.Shape{len(xs)}, xs...)
		y := must(c.op(x))
		got, err := run(t, g, y).Float64s(y)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range xs {
			if got[i] != c.f(v) {
				t.Fatalf("%s: element %d of %d = %v, want %v", c.name, i, len(xs), got[i], c.f(v))
			}
		}
	}
}

// The Mills table is within 2 ulp of v computed in 320-bit arithmetic over
// its whole range and on both sides of its intervals' ends, and meets the
// continued fraction at its end; Φ, log Φ, λ and x + λ built on it stay
// within a few ulp of the fraction's values, which the accuracy tests above
// were written against.
func TestMillsTableAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	pts := []float64{0, 1e-300, -tailCut, math.Nextafter(millsEnd, 0)}
	for i := 1; i < normtail.MillsIntervals; i++ {
		e := normtail.MillsStart + float64(i)/normtail.MillsScale
		pts = append(pts, e, math.Nextafter(e, 0))
	}
	for range 3000 {
		pts = append(pts, rng.Float64()*millsEnd)
	}
	worst, worstFrac := 0.0, 0.0
	for _, x := range pts {
		want := normtail.MillsV(x)
		worst = max(worst, ulps(millsTail(x), want))
		if x >= -tailCut { // the fraction's range
			worstFrac = max(worstFrac, ulps(millsFraction(x), want))
		}
	}
	t.Logf("largest error of v: table %.2f ulp, continued fraction (from 5) %.2f ulp", worst, worstFrac)
	if worst > 2 {
		t.Errorf("largest error of the Mills table: %.2f ulp, want at most 2", worst)
	}
	if u := ulps(millsTail(millsEnd), normtail.MillsV(millsEnd)); u > 2 {
		t.Errorf("v at the table's end (the fraction's start): %.2f ulp", u)
	}
	worstPhi := 0.0
	for range 200 {
		x := tailCut - rng.Float64()*(millsEnd+tailCut-2) // Φ is subnormal below −37.5
		_, cdf := refNormal(x)
		want, _ := cdf.Float64()
		worstPhi = max(worstPhi, ulps(normCDF(x), want))
	}
	t.Logf("largest error of Φ in the lower tail: %.2f ulp", worstPhi)
	if worstPhi > 4 {
		t.Errorf("largest error of Φ in the lower tail: %.2f ulp, want at most 4", worstPhi)
	}
	// log Φ(x) = −Q(x) beyond the Q table, through φ/(x + v).
	far := []float64{normTailEnd, 9, 20, 37.9}
	for range 100 {
		far = append(far, normTailEnd+rng.Float64()*(37.9-normTailEnd))
	}
	worstLog := 0.0
	for _, r := range specialRefs(far...) {
		worstLog = max(worstLog, ulps(logNormCDF(r.x), r.logCDF))
	}
	t.Logf("largest error of log Φ beyond %v: %.2f ulp", normTailEnd, worstLog)
	if worstLog > 4 {
		t.Errorf("largest error of log Φ beyond %v: %.2f ulp, want at most 4", normTailEnd, worstLog)
	}
}

// log Φ between the continued fraction's cut and the end of the Q table
// comes from the log tables, within 2 ulp of the 320-bit value, at random
// points and on both sides of every interval's end, and the shared
// evaluation (log Φ, λ and x + λ together) gives the same log Φ.
func TestLogPhiTableAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	pts := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, math.Nextafter(tailCut, 0), math.Nextafter(normTailEnd, 0)}
	for i := 1; i < normtail.Intervals; i++ {
		e := float64(i) / normtail.Scale
		pts = append(pts, e, math.Nextafter(e, 0))
		if e < -tailCut {
			pts = append(pts, -e, math.Nextafter(-e, 0))
		}
	}
	for range 3000 {
		pts = append(pts, tailCut+rng.Float64()*(normTailEnd-tailCut))
	}
	worst := 0.0
	for _, x := range pts {
		if x <= tailCut || x >= normTailEnd {
			continue
		}
		got := logNormCDF(x)
		worst = max(worst, ulps(got, normtail.LogPhi(x)))
		if lp, _, _ := logNormCDFInvMills(x); lp != got {
			t.Fatalf("x = %v: log Φ %v alone, %v with λ", x, got, lp)
		}
	}
	t.Logf("largest error of log Φ on (%v, %v): %.2f ulp", tailCut, normTailEnd, worst)
	if worst > 2 {
		t.Errorf("largest error of log Φ on (%v, %v): %.2f ulp, want at most 2", tailCut, normTailEnd, worst)
	}
}

// millsFraction's term counts by range give the 60-term value (twice what
// t = 5 needs) to within 2 ulp from the tail cut to far beyond it.
func TestMillsTermsEnough(t *testing.T) {
	full := func(x float64) float64 {
		v := 0.0
		for k := 60; k >= 2; k-- {
			v = float64(k) / (x + v)
		}
		return 1 / (x + v)
	}
	for x := -tailCut; x < 1e4; x *= 1.0001 {
		got, want := millsFraction(x), full(x)
		if math.Abs(got-want) > 2*0x1p-52*want {
			t.Fatalf("t = %v: %d terms give %v, 60 give %v", x, millsTerms(x), got, want)
		}
	}
}

// The shared evaluation gives exactly the separate functions' values, in
// both tails, at the branch points and at NaN.
func TestLogNormCDFInvMillsMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	xs := []float64{-40, -5, math.Nextafter(-5, 0), -1e-300, 0, 1e-300, normTailEnd, math.Nextafter(normTailEnd, 0), 40, math.Inf(1), math.Inf(-1)}
	for range 20000 {
		xs = append(xs, 12*rng.NormFloat64())
	}
	for _, x := range xs {
		lp, lam, gap := logNormCDFInvMills(x)
		wl, wg := invMillsGap(x)
		if !sameFloat(lp, logNormCDF(x)) || !sameFloat(lam, wl) || !sameFloat(gap, wg) {
			t.Fatalf("x = %v: (%v, %v, %v), separately (%v, %v, %v)", x, lp, lam, gap, logNormCDF(x), wl, wg)
		}
	}
	lp, lam, gap := logNormCDFInvMills(math.NaN())
	if !math.IsNaN(lp) || !math.IsNaN(lam) || !math.IsNaN(gap) {
		t.Fatalf("NaN gave (%v, %v, %v)", lp, lam, gap)
	}
}

func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// NormPDFValues is the scalar density but for its exponential (within 3
// ulp of math.Exp): within 1e-15 relative of normPDF everywhere it does
// not underflow, 0 beyond |x| = 39, NaN at NaN; and LogNormCDFInvMillsGiven
// with those densities is logNormCDFInvMills to the same relative error,
// bit for bit in the lower tail, which does not use φ.
func TestNormPDFValuesAndGivenDensity(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	xs := []float64{-40, -39, math.Nextafter(-39, 0), -5, math.Nextafter(-5, 0), 0, math.Copysign(0, -1), 1e-300,
		normTailEnd, math.Nextafter(normTailEnd, 0), 38.9, 39, math.Inf(1), math.Inf(-1), math.NaN()}
	for range 20000 {
		xs = append(xs, 10*rng.NormFloat64())
	}
	pdf := make([]float64, len(xs))
	NormPDFValues(pdf, xs)
	close := func(got, want float64) bool {
		return sameFloat(got, want) || math.Abs(got-want) <= 1e-15*math.Abs(want)
	}
	for i, x := range xs {
		if want := normPDF(x); !close(pdf[i], want) {
			t.Fatalf("φ(%v) = %v, the scalar density %v", x, pdf[i], want)
		}
		lp, lam, gap := LogNormCDFInvMillsGiven(x, pdf[i])
		wp, wl, wg := logNormCDFInvMills(x)
		if x <= tailCut && !(sameFloat(lp, wp) && sameFloat(lam, wl) && sameFloat(gap, wg)) {
			t.Fatalf("x = %v in the lower tail: (%v, %v, %v), not the scalar (%v, %v, %v)", x, lp, lam, gap, wp, wl, wg)
		}
		if !close(lp, wp) || !close(lam, wl) || math.Abs(gap-wg) > 1e-15*(math.Abs(x)+math.Abs(wl)) && !sameFloat(gap, wg) {
			t.Fatalf("x = %v: (%v, %v, %v), the scalar (%v, %v, %v)", x, lp, lam, gap, wp, wl, wg)
		}
	}
}

// BenchmarkMillsTail times v deep in the tail, where robust-max's wrong
// classes sit, by the table and by the continued fraction it replaced.
func BenchmarkMillsTail(b *testing.B) {
	xs := make([]float64, 40)
	for i := range xs {
		xs[i] = 5 + 0.2*float64(i)
	}
	sum := 0.0
	for _, f := range []struct {
		name string
		f    func(float64) float64
	}{{"table", millsTail}, {"fraction", millsFraction}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				for _, x := range xs {
					sum += f.f(x)
				}
			}
		})
	}
	_ = sum
}

// BenchmarkNormPDF times a robust-max row's densities (20 nodes × 2 other
// classes) one at a time and in one NormPDFValues call.
func BenchmarkNormPDF(b *testing.B) {
	xs := make([]float64, 40)
	for i := range xs {
		xs[i] = -3 + 0.15*float64(i)
	}
	dst := make([]float64, len(xs))
	b.Run("scalar", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				dst[i] = normPDF(x)
			}
		}
	})
	b.Run("values", func(b *testing.B) {
		for b.Loop() {
			NormPDFValues(dst, xs)
		}
	})
}

// BenchmarkLogNormCDFTable times log Φ between the tail cut and the Q
// table's end by its own tables and by the logarithm of the Q table they
// replaced.
func BenchmarkLogNormCDFTable(b *testing.B) {
	xs := make([]float64, 40)
	for i := range xs {
		xs[i] = -4.9 + 0.32*float64(i)
	}
	sum := 0.0
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sum += logNormCDF(x)
			}
		}
	})
	b.Run("log-of-Q", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				if x > 0 {
					sum += math.Log1p(-upperTail(x))
				} else {
					sum += math.Log(upperTail(-x))
				}
			}
		}
	})
	_ = sum
}
