package normtail

import (
	"math"
	"math/big"
	"testing"
)

// The continued fraction of millsTerms terms has converged far below a
// double's rounding where it takes over from Q/φ, where it converges
// slowest: twice the terms change R by less than 2⁻¹²⁰ of it.
func TestMillsConverged(t *testing.T) {
	for _, x := range []float64{millsFractionFrom, millsFractionFrom + 0.25, 10} {
		a, b := millsRBig(x, millsTerms), millsRBig(x, 2*millsTerms)
		d := new(big.Float).Sub(a, b)
		d.Quo(d, b)
		if d.Abs(d).Cmp(new(big.Float).SetMantExp(big.NewFloat(1), -120)) > 0 {
			t.Errorf("t = %v: %d and %d terms differ by %v relative", x, millsTerms, 2*millsTerms, d)
		}
	}
	// Below 5 R is Q/φ; where the two sources meet they agree.
	for _, x := range []float64{millsFractionFrom, 6} {
		q, phi := qBig(x)
		a, b := new(big.Float).Quo(q, phi), millsRBig(x, millsTerms)
		d := new(big.Float).Sub(a, b)
		d.Quo(d, b)
		if d.Abs(d).Cmp(new(big.Float).SetMantExp(big.NewFloat(1), -120)) > 0 {
			t.Errorf("t = %v: Q/φ and the fraction differ by %v relative", x, d)
		}
	}
}

// At an interval's centre the polynomial is its constant term, which must
// be MillsV there; at its ends the series is summed in big arithmetic and
// must round to within one ulp of MillsV (the coefficients' own rounding;
// the truncation the layout allows is near 1e-21).
func TestMillsCoefficientsAgree(t *testing.T) {
	for _, i := range []int{0, 1, 9, 10, 35, MillsIntervals - 1} {
		b := MillsCoefficients(i)
		c := MillsStart + (float64(i)+0.5)/MillsScale
		if want := MillsV(c); b[0] != want {
			t.Errorf("interval %d: constant term %v, v(centre) %v", i, b[0], want)
		}
		for _, u := range []float64{-1, 1} {
			sum, un := newF(0), newF(1)
			for _, bk := range b {
				sum.Add(sum, new(big.Float).Mul(newF(bk), un))
				un.Mul(un, newF(u))
			}
			got, _ := sum.Float64()
			x := c + u/(2*MillsScale)
			want := MillsV(x)
			if got != want && math.Nextafter(got, want) != want {
				t.Errorf("interval %d at t = %v: series %v, v %v", i, x, got, want)
			}
		}
	}
}

// logBig agrees with math.Log to a double's rounding, and the log tables'
// series, summed in big arithmetic at their intervals' centres and ends,
// round to within 3 ulp of LogPhi (the coefficients' own rounding, which
// the Q table's own test allows 2 ulp).
func TestLogCoefficientsAgree(t *testing.T) {
	for _, y := range []float64{1, 0.75, 0.5, 1e-7, 3e-300} {
		got, _ := logBig(newF(y)).Float64()
		if want := math.Log(y); math.Abs(got-want) > 2e-16*math.Abs(want) {
			t.Errorf("logBig(%v) = %v, math.Log %v", y, got, want)
		}
	}
	check := func(name string, b [Degree + 1]float64, c float64, sign float64) {
		for _, u := range []float64{-1, 0, 1} {
			sum, un := newF(0), newF(1)
			for _, bk := range b {
				sum.Add(sum, new(big.Float).Mul(newF(bk), un))
				un.Mul(un, newF(u))
			}
			got, _ := sum.Float64()
			x := sign * (c + u/(2*Scale))
			want := LogPhi(x)
			w := math.Abs(want)
			if math.Abs(got-want) > 3*(math.Nextafter(w, 2*w)-w) {
				t.Errorf("%s at x = %v: series %v, log Φ %v", name, x, got, want)
			}
		}
	}
	for _, i := range []int{0, 1, 40, LogQIntervals - 1} {
		check("log Q", LogQCoefficients(i), (float64(i)+0.5)/Scale, -1)
	}
	for _, i := range []int{0, 1, 60, LogPhiIntervals - 1} {
		check("log(1 − Q)", LogPhiCoefficients(i), (float64(i)+0.5)/Scale, 1)
	}
}
