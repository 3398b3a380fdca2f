// Package normtail computes, in 320-bit arithmetic, the Gaussian upper
// tail Q(t) = 1 − Φ(t) and the tables of local polynomials from which the
// graph package evaluates Φ in double precision without an exponential,
// log Φ without a logarithm, and the remainder v(t) of the Mills ratio's
// continued fraction without the fraction's chain of divisions.
//
// Why a table: Φ through math.Erfc costs two exponentials and a rational
// function per value, and Φ is most of a robust-max prediction (twenty
// quadrature nodes per class pair per row) and of the probit and additive
// noise likelihoods. On an interval of width 1/Scale, Q is its Taylor
// polynomial about the interval's centre to within a part in 10¹⁷, since
// Q' = −φ and φ's derivatives are Hermite polynomials times φ, so the
// coefficients follow from φ and Q at the centre alone. Those two are
// computed here with series of positive terms (e^x and Marsaglia's
// Φ(t) = ½ + φ(t)·Σ t^(2n+1)/(2n+1)!!), whose cancellation in ½ − φS is
// harmless at this precision.
package normtail

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
)

// The table's layout: Intervals intervals of width 1/Scale from 0, each
// with Degree+1 coefficients of the polynomial in u = (t − centre)·2·Scale
// ∈ [−1, 1].
const (
	Scale     = 16
	Intervals = 133 // covers [0, 8.3125); Φ(t) rounds to 1 from t ≈ 8.2924
	Degree    = 13
	prec      = 320
)

func newF(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }

// pi to 110 digits, more than prec bits.
const piDigits = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651"

// expBig returns e^x for 0 ≤ x ≤ 40 by its Taylor series.
func expBig(x *big.Float) *big.Float {
	sum, term := newF(1), newF(1)
	eps := new(big.Float).SetMantExp(newF(1), -prec)
	for n := 1; ; n++ {
		term.Mul(term, x)
		term.Quo(term, newF(float64(n)))
		sum.Add(sum, term)
		if term.Cmp(new(big.Float).Mul(sum, eps)) < 0 {
			return sum
		}
	}
}

// phiBig returns φ(t) = e^(−t²/2)/√(2π).
func phiBig(t *big.Float) *big.Float {
	pi, _, _ := big.ParseFloat(piDigits, 10, prec, big.ToNearestEven)
	root := new(big.Float).SetPrec(prec).Sqrt(new(big.Float).Mul(pi, newF(2)))
	half := new(big.Float).Mul(t, t)
	half.Quo(half, newF(2))
	e := expBig(half)
	return new(big.Float).Quo(newF(1), e.Mul(e, root))
}

// qBig returns Q(t) = 1 − Φ(t) = ½ − φ(t)·Σ_n t^(2n+1)/(2n+1)!! for t ≥ 0,
// and φ(t).
func qBig(t float64) (q, phi *big.Float) {
	tb := newF(t)
	t2 := new(big.Float).Mul(tb, tb)
	sum, term := newF(t), newF(t)
	eps := new(big.Float).SetMantExp(newF(1), -prec)
	for n := 1; t != 0; n++ {
		term.Mul(term, t2)
		term.Quo(term, newF(float64(2*n+1)))
		sum.Add(sum, term)
		if term.Cmp(new(big.Float).Mul(sum, eps)) < 0 {
			break
		}
	}
	phi = phiBig(tb)
	q = new(big.Float).Sub(newF(0.5), new(big.Float).Mul(phi, sum))
	return q, phi
}

// Q returns 1 − Φ(t) for t ≥ 0, correctly rounded but for the last bit: the
// reference against which the table is tested.
func Q(t float64) float64 {
	q, _ := qBig(t)
	f, _ := q.Float64()
	return f
}

// Pdf returns φ(x) = e^(−x²/2)/√(2π), correctly rounded but for the last bit.
func Pdf(x float64) float64 {
	f, _ := phiBig(newF(math.Abs(x))).Float64()
	return f
}

// Phi returns Φ(x) to the same accuracy as Q.
func Phi(x float64) float64 {
	q, _ := qBig(math.Abs(x))
	if x < 0 {
		f, _ := q.Float64()
		return f
	}
	f, _ := new(big.Float).Sub(newF(1), q).Float64()
	return f
}

// Coefficients returns interval i's coefficients b_0 … b_Degree of
// Q(c + u/(2·Scale)), c = (i + ½)/Scale: b_0 = Q(c) and, for k ≥ 1,
// b_k = −φ^(k−1)(c)·h^k/k! with φ^(j) = (−1)^j He_j φ and h = 1/(2·Scale).
func Coefficients(i int) [Degree + 1]float64 { return round(coefficientsBig(i)) }

// coefficientsBig is Coefficients unrounded.
func coefficientsBig(i int) [Degree + 1]*big.Float {
	c := (float64(i) + 0.5) / Scale
	q, phi := qBig(c)
	var b [Degree + 1]*big.Float
	b[0] = q
	cb := newF(c)
	heM, he := newF(0), newF(1) // He_{j−1}, He_j at j = 0
	hk := newF(1)               // h^k / k!
	h := newF(1.0 / (2 * Scale))
	for k := 1; k <= Degree; k++ {
		j := k - 1 // the derivative of φ in b_k
		hk.Mul(hk, h)
		hk.Quo(hk, newF(float64(k)))
		v := new(big.Float).Mul(he, phi)
		v.Mul(v, hk)
		if j%2 == 0 { // −(−1)^j
			v.Neg(v)
		}
		b[k] = v
		// He_{j+1} = t·He_j − j·He_{j−1}
		next := new(big.Float).Mul(cb, he)
		next.Sub(next, new(big.Float).Mul(newF(float64(j)), heM))
		heM, he = he, next
	}
	return b
}

// round rounds a table row's coefficients to float64.
func round(b [Degree + 1]*big.Float) [Degree + 1]float64 {
	var f [Degree + 1]float64
	for k, v := range b {
		f[k], _ = v.Float64()
	}
	return f
}

// The log tables share the Q table's intervals: LogPhiIntervals of them for
// log Φ(t) = log(1 − Q(t)) on [0, normTailEnd) and LogQIntervals for
// log Q(t) on [0, 5), log Φ(−t), the lower side down to the continued
// fraction's cut.
const (
	LogPhiIntervals = Intervals
	LogQIntervals   = 5 * Scale
)

// logBig returns log y for 0 < y ≤ 1: with y = m·2^e, m ∈ [½, 1), log y =
// e·log 2 + log m, each by the series −Σ r^n/n in r = 1 − m ≤ ½.
func logBig(y *big.Float) *big.Float {
	m := new(big.Float)
	e := y.MantExp(m)
	return new(big.Float).Add(log1mBig(new(big.Float).Sub(newF(1), m)),
		new(big.Float).Mul(newF(float64(e)), new(big.Float).Neg(log1mBig(newF(0.5)))))
}

// log1mBig returns log(1 − r) = −Σ r^n/n for 0 ≤ r ≤ ½.
func log1mBig(r *big.Float) *big.Float {
	sum, pow := newF(0), newF(1)
	eps := new(big.Float).SetMantExp(newF(1), -prec-8)
	for n := 1; r.Sign() != 0; n++ {
		pow.Mul(pow, r)
		term := new(big.Float).Quo(pow, newF(float64(n)))
		sum.Sub(sum, term)
		if term.Cmp(eps) < 0 {
			break
		}
	}
	return sum
}

// logSeries returns the coefficients of log g for the power series g with
// g_0 > 0, from g·(log g)' = g': n·f_n·g_0 = n·g_n − Σ_(k=1…n−1) k·f_k·g_(n−k).
func logSeries(g [Degree + 1]*big.Float, f0 *big.Float) [Degree + 1]*big.Float {
	var f [Degree + 1]*big.Float
	f[0] = f0
	for n := 1; n <= Degree; n++ {
		sum := new(big.Float).Mul(newF(float64(n)), g[n])
		for k := 1; k < n; k++ {
			t := new(big.Float).Mul(newF(float64(k)), f[k])
			sum.Sub(sum, t.Mul(t, g[n-k]))
		}
		sum.Quo(sum, g[0])
		f[n] = sum.Quo(sum, newF(float64(n)))
	}
	return f
}

// LogPhiCoefficients returns interval i's coefficients of log Φ(c + u·h) =
// log(1 − Q), c and h as in Coefficients: the logarithm of the series
// 1 − Q, its constant term by log1mBig (Q ≤ ½), which keeps log Φ's relative
// accuracy where it is as small as −Q ≈ −5e-17.
func LogPhiCoefficients(i int) [Degree + 1]float64 {
	q := coefficientsBig(i)
	var g [Degree + 1]*big.Float
	g[0] = new(big.Float).Sub(newF(1), q[0])
	for k := 1; k <= Degree; k++ {
		g[k] = new(big.Float).Neg(q[k])
	}
	return round(logSeries(g, log1mBig(q[0])))
}

// LogQCoefficients returns interval i's coefficients of log Q(c + u·h).
func LogQCoefficients(i int) [Degree + 1]float64 {
	q := coefficientsBig(i)
	return round(logSeries(q, logBig(q[0])))
}

// LogPhi returns log Φ(x) for −5 < x < 8.3125, correctly rounded but for
// the last bit: the reference against which the log tables are tested.
func LogPhi(x float64) float64 {
	q, _ := qBig(math.Abs(x))
	var f float64
	if x < 0 {
		f, _ = logBig(q).Float64()
	} else {
		f, _ = log1mBig(q).Float64()
	}
	return f
}

// The Mills table's layout: MillsIntervals intervals of width 1/MillsScale
// from MillsStart, each with Degree+1 coefficients of v(t) as a polynomial
// in u = (t − centre)·2·MillsScale ∈ [−1, 1].
const (
	MillsStart     = 0
	MillsScale     = 2
	MillsIntervals = 80 // covers [0, 40)
	millsTerms     = 400
	// millsFractionFrom is where R is taken from the continued fraction
	// rather than from Q/φ.
	millsFractionFrom = 5
)

// millsR returns R(t) for t ≥ 0: Q(t)/φ(t) from qBig below 5, where the
// fraction converges slowly, and the fraction from 5 on, where qBig's
// series cancels.
func millsR(t float64) *big.Float {
	if t < millsFractionFrom {
		q, phi := qBig(t)
		return new(big.Float).Quo(q, phi)
	}
	return millsRBig(t, millsTerms)
}

// millsRBig returns the Mills ratio R(t) = (1 − Φ(t))/φ(t) for t ≥ 5 by
// Laplace's continued fraction 1/(t + 1/(t + 2/(t + …))) of n terms. Q
// itself is out of reach of qBig's series there (½ − φS cancels to 2⁻¹¹⁶⁰
// at t = 40), but R is of order 1/t and the fraction converges at any t > 0;
// TestMillsConverged checks that n terms and 2n agree far below a double's
// rounding.
func millsRBig(t float64, n int) *big.Float {
	tb := newF(t)
	v := newF(0)
	for k := n; k >= 1; k-- {
		d := new(big.Float).Add(tb, v)
		v = new(big.Float).Quo(newF(float64(k)), d)
	}
	return new(big.Float).Quo(newF(1), new(big.Float).Add(tb, v))
}

// MillsV returns v(t) = 1/R(t) − t, the remainder of the continued fraction
// (1 − Φ(t) = φ(t)/(t + v)), correctly rounded but for the last bit, for
// t ≥ 0: the reference against which the Mills table is tested. At x = −t
// it is x + λ(x), which formed as a sum cancels for −5 < x < 0.
func MillsV(t float64) float64 {
	r := millsR(t)
	v := new(big.Float).Quo(newF(1), r)
	f, _ := v.Sub(v, newF(t)).Float64()
	return f
}

// MillsCoefficients returns Mills interval i's coefficients of v(c + u·h),
// c = MillsStart + (i + ½)/MillsScale, h = 1/(2·MillsScale). R's Taylor
// coefficients r_n about c follow from R' = tR − 1, whose derivatives give
// (n+1)·r_(n+1) = c·r_n + r_(n−1); the series of 1/R is their reciprocal
// series, and v = 1/R − t. All of it in 320-bit arithmetic, where the
// recurrence's cancellation and the subtraction of t are harmless. v is
// analytic well beyond the interval (1/R's nearest poles, the zeros of erfc,
// lie about 7 from t = 5 and 3.4 from t = 0), so degree 13 on a half-width
// of ¼ leaves a truncation error below 10⁻¹⁶ of v at the start and near
// 10⁻²¹ from 5 on.
func MillsCoefficients(i int) [Degree + 1]float64 {
	c := MillsStart + (float64(i)+0.5)/MillsScale
	cb := newF(c)
	var r [Degree + 1]*big.Float
	r[0] = millsR(c)
	r[1] = new(big.Float).Sub(new(big.Float).Mul(cb, r[0]), newF(1))
	for n := 1; n < Degree; n++ {
		next := new(big.Float).Mul(cb, r[n])
		next.Add(next, r[n-1])
		r[n+1] = next.Quo(next, newF(float64(n+1)))
	}
	h := newF(1.0 / (2 * MillsScale))
	hn := newF(1)
	for n := range r { // coefficients in u
		r[n].Mul(r[n], hn)
		hn = new(big.Float).Mul(hn, h)
	}
	var s [Degree + 1]*big.Float // 1/R in u
	s[0] = new(big.Float).Quo(newF(1), r[0])
	for n := 1; n <= Degree; n++ {
		sum := newF(0)
		for k := 1; k <= n; k++ {
			sum.Add(sum, new(big.Float).Mul(r[k], s[n-k]))
		}
		s[n] = sum.Neg(sum.Quo(sum, r[0]))
	}
	s[0].Sub(s[0], cb)
	s[1].Sub(s[1], h)
	var b [Degree + 1]float64
	for n := range s {
		b[n], _ = s[n].Float64()
	}
	return b
}

// Source returns the Go source of the table file in package graph.
func Source() []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// Code generated by go run ./graph/internal/normtail/gen; DO NOT EDIT.\n\n")
	fmt.Fprintf(&buf, "package graph\n\n")
	fmt.Fprintf(&buf, "// normTail holds, for t in [i/%d, (i+1)/%d), the coefficients of\n", Scale, Scale)
	fmt.Fprintf(&buf, "// Q(t) = 1 − Φ(t) as a polynomial in u = (t − (i+½)/%d)·%d (see package normtail).\n", Scale, 2*Scale)
	fmt.Fprintf(&buf, "var normTail = [%d][%d]float64{\n", Intervals, Degree+1)
	for i := range Intervals {
		writeRow(&buf, Coefficients(i))
	}
	fmt.Fprintf(&buf, "}\n\n")
	fmt.Fprintf(&buf, "// logPhiTail holds, on normTail's intervals, the coefficients of log Φ(t) = log(1 − Q(t)).\n")
	fmt.Fprintf(&buf, "var logPhiTail = [%d][%d]float64{\n", LogPhiIntervals, Degree+1)
	for i := range LogPhiIntervals {
		writeRow(&buf, LogPhiCoefficients(i))
	}
	fmt.Fprintf(&buf, "}\n\n")
	fmt.Fprintf(&buf, "// logQTail holds, on normTail's first %d intervals, the coefficients of log Q(t) = log Φ(−t).\n", LogQIntervals)
	fmt.Fprintf(&buf, "var logQTail = [%d][%d]float64{\n", LogQIntervals, Degree+1)
	for i := range LogQIntervals {
		writeRow(&buf, LogQCoefficients(i))
	}
	fmt.Fprintf(&buf, "}\n\n")
	fmt.Fprintf(&buf, "// millsV holds, for t in [%d + i/%d, %d + (i+1)/%d), the coefficients of\n", MillsStart, MillsScale, MillsStart, MillsScale)
	fmt.Fprintf(&buf, "// v(t) = 1/R(t) − t, R the Mills ratio, as a polynomial in u = (t − %d − (i+½)/%d)·%d (see package normtail).\n", MillsStart, MillsScale, 2*MillsScale)
	fmt.Fprintf(&buf, "var millsV = [%d][%d]float64{\n", MillsIntervals, Degree+1)
	for i := range MillsIntervals {
		writeRow(&buf, MillsCoefficients(i))
	}
	fmt.Fprintf(&buf, "}\n")
	return buf.Bytes()
}

// writeRow writes one interval's coefficients as a Go composite literal.
func writeRow(buf *bytes.Buffer, b [Degree + 1]float64) {
	fmt.Fprintf(buf, "\t{")
	for k, v := range b {
		if k > 0 {
			fmt.Fprintf(buf, ", ")
		}
		fmt.Fprintf(buf, "%s", formatFloat(v))
	}
	fmt.Fprintf(buf, "},\n")
}

func formatFloat(v float64) string { return fmt.Sprintf("%.17g", v) }
