package solvers

import (
	"math"
	"testing"
)

// Two steps by hand from climin's update rule (decay 0.9, offset 1e-4,
// step rate 0.1), for one coordinate with gradients 2 then −1.
func TestAdadeltaMatchesClimin(t *testing.T) {
	a := NewAdadelta(0.1)
	x := []float64{1}
	p := []Param{{Name: "x", Data: x}}
	var gms, sms, want float64 = 0, 0, 1
	for _, g := range []float64{2, -1, 0.5} {
		if err := a.Step(p, [][]float64{{g}}); err != nil {
			t.Fatal(err)
		}
		gms = 0.9*gms + 0.1*g*g
		step := math.Sqrt(sms+1e-4) / math.Sqrt(gms+1e-4) * g * 0.1
		want -= step
		sms = 0.9*sms + 0.1*step*step
		if math.Abs(x[0]-want) > 1e-15 {
			t.Fatalf("x = %v, climin's rule gives %v", x[0], want)
		}
	}
}

// Adadelta descends a quadratic to within its noise floor (it does not
// converge exactly: its steps scale with past steps, not with the gradient).
func TestAdadeltaMinimises(t *testing.T) {
	a := NewAdadelta(0.1)
	x := []float64{3, -2}
	p := []Param{{Name: "x", Data: x}}
	f := func() float64 { return x[0]*x[0] + 4*x[1]*x[1] }
	f0 := f()
	for range 3000 {
		if err := a.Step(p, [][]float64{{2 * x[0], 8 * x[1]}}); err != nil {
			t.Fatal(err)
		}
	}
	if f() > 1e-3*f0 {
		t.Fatalf("x = %v, f = %v after 3000 steps on x² + 4y² (from %v)", x, f(), f0)
	}
	if err := NewAdadelta(0).Step(p, [][]float64{{1, 1}}); err == nil {
		t.Fatal("step rate 0 accepted")
	}
}
