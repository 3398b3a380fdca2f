package models

import (
	"context"
	"io"
	"math"
	"testing"

	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// hidden is a likelihood that shows only the Likelihood and ClassCounter
// methods of the one it wraps: EP must find its tilted moments itself, as
// for a likelihood a user wrote.
type hidden struct {
	likelihoods.Likelihood
	likelihoods.ClassCounter
}

// EP on a likelihood without tilted moments integrates its log p(y|f) by
// quadrature; on the probit it reproduces the closed form's fit, and on
// the logit the likelihood's own quadrature, to 1e-9 in a probability. One
// L-BFGS iteration of the evidence: further iterations amplify the
// moments' 1e-7 differences along the path (ten leave 0.005 apart), a
// property of the unconverged optimiser, not of the moments.
func TestEPByQuadrature(t *testing.T) {
	skipSequentialUnderRace(t)
	ds := syntheticSet(60, 2, 2, 11)
	for i := range ds.N { // a label that depends on the inputs
		ds.Y[i] = 0
		if ds.X[2*i]+0.5*ds.X[2*i+1] > 0.2*math.Sin(7*float64(i)) {
			ds.Y[i] = 1
		}
	}
	for _, link := range []string{"probit", "logit"} {
		var probs [2][]float64
		for i, wrap := range []bool{false, true} {
			lik, err := likelihoods.New(link, likelihoods.Config{})
			if err != nil {
				t.Fatal(err)
			}
			// The parts of the ep preset, with either likelihood.
			o := Options{Inputs: InputOptions{Model: "observed"}, Posterior: PosteriorOptions{Family: "full"}, Inference: "ep", Train: TrainOptions{Epochs: 1}}
			if wrap {
				o.Likelihood.Custom = hidden{lik, lik.(likelihoods.ClassCounter)}
			} else {
				o.Likelihood.Name = link
			}
			m, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := tiltedFor(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, quad := tl.(*quadTilted); quad != wrap {
				t.Fatalf("%s (wrapped %v): tilted moments by quadrature: %v", link, wrap, quad)
			}
			if err := m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
				t.Fatalf("%s (wrapped %v): %v", link, wrap, err)
			}
			if probs[i], err = m.Predict(ds.X, ds.N, nil); err != nil {
				t.Fatal(err)
			}
		}
		worst := 0.0
		for j := range probs[0] {
			worst = math.Max(worst, math.Abs(probs[0][j]-probs[1][j]))
		}
		if worst > 1e-9 {
			t.Errorf("%s: EP by quadrature differs from the likelihood's own moments by %.3g in a probability", link, worst)
		}
		if lo, hi := probs[1][0], probs[1][0]; true {
			for _, p := range probs[1] {
				lo, hi = math.Min(lo, p), math.Max(hi, p)
			}
			if hi-lo < 0.3 {
				t.Errorf("%s: probabilities span only [%.3f, %.3f]: EP learned nothing", link, lo, hi)
			}
		}
		t.Logf("%s: largest difference %.3g", link, worst)
	}
}

// The quadrature's moments match the probit's closed form to 1e-6 (relative) over a
// range of cavities agreeing and disagreeing with y, narrow and wide (at a
// variance of 50 the probit is a step over the cavity's spread).
func TestQuadTiltedMoments(t *testing.T) {
	lik, _ := likelihoods.New("probit", likelihoods.Config{})
	q, err := newQuadTilted(lik, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := lik.(interface {
		TiltedMoments(y, m, v float64) (float64, float64, float64)
	})
	for _, y := range []float64{-1, 1} {
		for _, m := range []float64{-6, -1, 0, 0.5, 4} {
			for _, v := range []float64{1e-4, 0.3, 2, 50} {
				z, mu, s2 := q.TiltedMoments(y, m, v)
				wz, wmu, ws2 := want.TiltedMoments(y, m, v)
				tol := 1e-6
				if math.Abs(z-wz) > tol*(1+math.Abs(wz)) || math.Abs(mu-wmu) > tol*(1+math.Abs(wmu)) || math.Abs(s2-ws2) > tol*(1+ws2) {
					t.Errorf("y %v, cavity N(%v, %v): quadrature (%v, %v, %v), closed form (%v, %v, %v)", y, m, v, z, mu, s2, wz, wmu, ws2)
				}
			}
		}
	}
	if q.Err() != nil {
		t.Fatal(q.Err())
	}
}
