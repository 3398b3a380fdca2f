package likelihoods

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// PredictJoint with diagonal covariances is Predict's marginal rule on the
// same draws, so the two agree to round-off; rows sum to one.
func TestHTPCPredictJointMatchesMarginal(t *testing.T) {
	const n, c = 4, 3
	l := NewHeavyTailed()
	l.Draws = 256
	l.Latent(c)
	for k := range c {
		l.B.Set(k, 0.5+float64(k))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mu, v := make([]float64, n*c), make([]float64, n*c)
	chol := make([]float64, n*c*c)
	for i := range mu {
		mu[i] = rng.NormFloat64()
		v[i] = 0.1 + rng.Float64()
	}
	for i := range n {
		for k := range c {
			chol[i*c*c+k*c+k] = math.Sqrt(v[i*c+k])
		}
	}
	joint, err := l.PredictJoint(mu, chol, n, c)
	if err != nil {
		t.Fatal(err)
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	mn := graph.Input(g, "mu", tensor.Shape{n, c}, mu)
	vn := graph.Input(g, "v", tensor.Shape{n, c}, v)
	p, err := l.Predict(s, mn, vn)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := graph.Compile(g, p)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := prog.Run(); err != nil {
		t.Fatal(err)
	}
	marg, _ := prog.Float64s(p)
	for i := range n {
		var sum float64
		for k := range c {
			if d := math.Abs(joint[i*c+k] - marg[i*c+k]); d > 1e-12 {
				t.Errorf("row %d class %d: joint %v, marginal %v", i, k, joint[i*c+k], marg[i*c+k])
			}
			sum += joint[i*c+k]
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("row %d sums to %v", i, sum)
		}
	}
	// A strong positive correlation between two classes changes the
	// probabilities: the cross-covariances are not decoration.
	corr := append([]float64(nil), chol...)
	for i := range n {
		// Class 1 = class 0's draw: S = [[v0, v0], [v0, v0]] in that block.
		corr[i*c*c+1*c+0] = chol[i*c*c+0]
		corr[i*c*c+1*c+1] = 1e-6
	}
	joint2, err := l.PredictJoint(mu, corr, n, c)
	if err != nil {
		t.Fatal(err)
	}
	var diff float64
	for i := range joint2 {
		diff = math.Max(diff, math.Abs(joint2[i]-joint[i]))
	}
	if diff < 1e-3 {
		t.Errorf("correlated and independent predictives differ by only %g", diff)
	}
}
