package likelihoods

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// τ must be the hyperbolic-secant quantile of Φ(g): F₁(τ(g)) = Φ(g), with
// F₁(f) = (2/π) arctan(exp(πf/2)), checked where it can be formed directly.
func TestTauIsSechQuantile(t *testing.T) {
	for _, g := range []float64{-6, -2.5, -1, -0.3, 0, 0.2, 1, 3, 7} {
		f := tau(g)
		u := (2 / math.Pi) * math.Atan(math.Exp(math.Pi*f/2))
		phi := 0.5 * math.Erfc(-g/math.Sqrt2)
		if math.Abs(u-phi) > 1e-13 {
			t.Errorf("g=%v: F(τ(g)) = %v, Φ(g) = %v", g, u, phi)
		}
	}
	// Far tails: τ(g) ≈ (2/π)(−log(π/2) − log Φ(−g)) with no overflow.
	if v := tau(40); math.IsInf(v, 0) || math.IsNaN(v) || v < 500 {
		t.Errorf("τ(40) = %v", v)
	}
	if v := tau(-40); v != -tau(40) {
		t.Errorf("τ not odd at 40: %v vs %v", v, tau(40))
	}
}

// Each derivative against a central difference of the previous one, and
// against the direct formula τ' = 2φ/sin(πΦ) where that is accurate.
func TestTauDerivatives(t *testing.T) {
	for _, g := range []float64{-9, -4, -1.7, -0.4, 0, 0.05, 0.6, 2.2, 5, 12} {
		for k := 1; k <= maxTauDeriv; k++ {
			h := 1e-4 * math.Max(1, math.Abs(g))
			num := (tauDeriv(k-1, g+h) - tauDeriv(k-1, g-h)) / (2 * h)
			num2 := (tauDeriv(k-1, g+h/2) - tauDeriv(k-1, g-h/2)) / h
			num = (4*num2 - num) / 3 // Richardson
			ana := tauDeriv(k, g)
			if d := math.Abs(num - ana); d > 1e-7*math.Max(1, math.Abs(ana)) {
				t.Errorf("g=%v k=%d: analytic %v, numeric %v", g, k, ana, num)
			}
		}
		if math.Abs(g) < 3 { // beyond, sin(πΦ(g)) itself loses digits
			phi := math.Exp(-g*g/2) / math.Sqrt(2*math.Pi)
			direct := 2 * phi / math.Sin(math.Pi*0.5*math.Erfc(-g/math.Sqrt2))
			if d := math.Abs(direct - tauDeriv(1, g)); d > 1e-12*direct {
				t.Errorf("g=%v: τ' = %v, direct %v", g, tauDeriv(1, g), direct)
			}
		}
	}
}

// The op differentiates through graph.Grad to second order (and the check
// itself differentiates a third time, through τ⁽³⁾).
func TestTauOpGrad(t *testing.T) {
	g := G.NewGraph()
	x := graph.Input(g, "x", tensor.Shape{2, 3}, []float64{-2, -0.5, 0.1, 0.7, 1.5, 3})
	w := graph.Input(g, "w", tensor.Shape{2, 3}, []float64{1, -2, 0.5, 3, -1, 0.25})
	y, err := tauNode(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	y2, _ := G.HadamardProd(y, y)
	p, _ := G.HadamardProd(y2, w)
	cost, _ := G.Sum(p)
	r1, err := graph.CheckGrad(cost, G.Nodes{x}, graph.CheckOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := graph.CheckGrad2(cost, G.Nodes{x}, graph.CheckOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r1.MaxRelErr > 1e-7 || r2.MaxRelErr > 1e-7 {
		t.Errorf("relative errors: first order %g, second order %g", r1.MaxRelErr, r2.MaxRelErr)
	}
}
