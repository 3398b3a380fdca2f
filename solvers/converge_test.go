package solvers

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

// TestPlateau: a loss falling geometrically towards a floor is called
// converged once its smoothed fall per epoch drops below the tolerance,
// never before two windows, and never with a tolerance of zero.
func TestPlateau(t *testing.T) {
	p := Plateau{Tol: 1e-3}
	stopped := 0
	for e := 1; e <= 500; e++ {
		p.Add(100 + 50*math.Pow(0.9, float64(e)))
		if p.Converged() {
			stopped = e
			break
		}
	}
	// The smoothed fall at epoch e is about 50·0.9^(e−10)·(1−0.9^10)/10;
	// relative to 100 it crosses 1e-3 near epoch 47, and has stayed
	// below it for ten epochs at 57.
	if stopped < 52 || stopped > 62 {
		t.Fatalf("stopped at epoch %d, want about 57", stopped)
	}
	rise, rel, ok := p.Rate()
	if !ok || !(rise > 0) || !(rel < 1e-3) {
		t.Fatalf("rate %v %v %v", rise, rel, ok)
	}
	short := Plateau{Tol: 1}
	for range 3*DefaultPlateauWindow - 2 {
		short.Add(1)
	}
	if short.Converged() {
		t.Fatal("converged before two windows")
	}
	never := Plateau{}
	for range 100 {
		never.Add(1)
	}
	if never.Converged() {
		t.Fatal("converged with a zero tolerance")
	}
}

// TestLBFGSProgressAndLastChange: the progress writer gets a first
// iteration line and a last line, and LastChange is the last relative
// decrease of f.
func TestLBFGSProgressAndLastChange(t *testing.T) {
	// f(x) = Σ (x_i − i)², from 0, stopped by its iteration cap.
	f := func(x, g []float64) (float64, error) {
		s := 0.0
		for i, v := range x {
			d := v - float64(i) - 1
			s += d*d + 0.1*d*d*d*d
			g[i] = 2*d + 0.4*d*d*d
		}
		return s, nil
	}
	var prog bytes.Buffer
	res, err := MinimizeLBFGS(context.Background(), f, make([]float64, 5), LBFGSSettings{MaxIterations: 3, Progress: &prog, ProgressName: ""})
	if err != nil {
		t.Fatal(err)
	}
	out := prog.String()
	if !strings.HasPrefix(out, "L-BFGS iteration 1/3  objective ") || !strings.Contains(out, "L-BFGS stopped after 3 iterations") {
		t.Fatalf("progress %q", out)
	}
	if res.Status != IterationLimit || !(res.LastChange > 0) || res.LastChange >= 1 {
		t.Fatalf("status %s, last change %v", res.Status, res.LastChange)
	}
}
