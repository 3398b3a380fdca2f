package models

import (
	"context"
	"errors"
	"io"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"

	"github.com/gpc-dev/gpc/solvers"
)

// The EP evidence's gradient from the graph at the fixed point matches
// central finite differences of the converged evidence (EP rerun to
// convergence at each perturbed point), for full EP (kernel
// hyper-parameters) and EP-FITC (also Z).
func TestEPEvidenceGradient(t *testing.T) {
	train := blobs(30, 5)
	for _, preset := range []string{"ep", "ep-fitc"} {
		o := opts(preset, 5, 1, 30, 2)
		o.EP.Tol = 1e-12
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.initialize(train, io.Discard); err != nil {
			t.Fatal(err)
		}
		obj, err := newEPObjective(m, train)
		if err != nil {
			t.Fatal(err)
		}
		_, g, err := obj.Step(solvers.FullBatch(train.N))
		if err != nil {
			t.Fatal(err)
		}
		grads := make([][]float64, len(g))
		for i := range g {
			grads[i] = append([]float64(nil), g[i]...)
		}
		checked := 0
		for i, p := range obj.params {
			for j := 0; j < len(p.Data); j += 1 + len(p.Data)/4 {
				const h = 1e-5
				old := p.Data[j]
				p.Data[j] = old + h
				fp, _, err := obj.Step(solvers.FullBatch(train.N))
				if err != nil {
					t.Fatal(err)
				}
				p.Data[j] = old - h
				fm, _, err := obj.Step(solvers.FullBatch(train.N))
				if err != nil {
					t.Fatal(err)
				}
				p.Data[j] = old
				fd := (fp - fm) / (2 * h)
				if math.Abs(fd-grads[i][j]) > 1e-5*math.Max(1, math.Abs(fd)) {
					t.Errorf("%s: ∂(−log Z_EP)/∂%s[%d] = %.8g from the graph, %.8g by finite differences", preset, p.Name, j, grads[i][j], fd)
				}
				checked++
			}
		}
		if checked < 3 {
			t.Fatalf("%s: only %d gradient entries checked", preset, checked)
		}
	}
}

// A fitted full-EP model predicts what R&W Algorithm 3.6 gives from its
// sites: p(y=1) = Φ(μ*/√(1+σ*²)), μ* = k*ᵀ(ν̃ − S̃^½B⁻¹S̃^½Kν̃),
// σ*² = k** − ‖L⁻¹S̃^½k*‖²; and it classifies the blobs.
func TestEPPredictsAsAlgorithm36(t *testing.T) {
	train, test := blobs(60, 6), blobs(200, 7)
	o := opts("ep", 0, 30, 60, 3)
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := Score(p, test.Y, 2)
	t.Logf("EP on blobs: error %.3f, NLL %.3f", sc.Error, sc.NLL)
	if sc.Error > 0.1 {
		t.Errorf("EP test error %.3f on separated blobs", sc.Error)
	}
	// Algorithm 3.6 from the model's own prior and EP posterior.
	obj, err := newEPObjective(m, train)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := obj.Step(solvers.FullBatch(train.N)); err != nil {
		t.Fatal(err)
	}
	n := train.N
	K := mat.NewSymDense(n, obj.kData)
	sq := make([]float64, n)
	for i, tau := range obj.sites.Tau {
		sq[i] = math.Sqrt(tau)
	}
	B := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := sq[i] * K.At(i, j) * sq[j]
			if i == j {
				v++
			}
			B.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	ch.Factorize(B)
	var knu, tmp mat.VecDense
	knu.MulVec(K, mat.NewVecDense(n, obj.sites.Nu))
	for i := 0; i < n; i++ {
		knu.SetVec(i, sq[i]*knu.AtVec(i))
	}
	ch.SolveVecTo(&tmp, &knu)
	z := make([]float64, n)
	for i := range z {
		z[i] = obj.sites.Nu[i] - sq[i]*tmp.AtVec(i)
	}
	L := mat.NewTriDense(n, mat.Lower, nil)
	ch.LTo(L)
	mu, v, _, err := m.Marginals(test.X[:20*test.D], 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 20; r++ {
		// k* by the model's own marginals: compare μ*, σ*² with Algorithm 3.6
		// through the cross-covariance the model uses.
		ks := crossCov(t, m, test.X[r*test.D:(r+1)*test.D], train.X)
		var ms float64
		for i := range ks {
			ms += ks[i] * z[i]
		}
		w := mat.NewVecDense(n, nil)
		for i := range ks {
			w.SetVec(i, sq[i]*ks[i])
		}
		var vv mat.VecDense
		vv.SolveVec(L, w)
		prior := priorVar(t, m, test.X[r*test.D:(r+1)*test.D])
		vs := prior - mat.Dot(&vv, &vv)
		if math.Abs(mu[r]-ms) > 1e-6*math.Max(1, math.Abs(ms)) || math.Abs(v[r]-vs) > 1e-6*math.Max(1, vs) {
			t.Fatalf("test row %d: model μ*, σ*² = %v, %v; Algorithm 3.6 %v, %v", r, mu[r], v[r], ms, vs)
		}
		want := 0.5 * math.Erfc(-ms/math.Sqrt(1+vs)/math.Sqrt2)
		if math.Abs(p[2*r+1]-want) > 1e-6 {
			t.Fatalf("test row %d: p(y=1) = %v, Algorithm 3.6 %v", r, p[2*r+1], want)
		}
	}
}

// crossCov evaluates k(x, X) with the model's kernel (no nugget).
func crossCov(t *testing.T, m *Model, x, X []float64) []float64 {
	t.Helper()
	g := G.NewGraph()
	s := layers.NewScope(g)
	n := len(X) / m.D
	xn := graph.Input(g, "xs", tensor.Shape{1, m.D}, append([]float64(nil), x...))
	Xn := graph.Input(g, "X", tensor.Shape{n, m.D}, append([]float64(nil), X...))
	k, err := m.kernels[0].K(s, xn, Xn)
	if err != nil {
		t.Fatal(err)
	}
	return evalNode(t, g, s, k)
}

// priorVar evaluates k(x, x) + σ₀² + jitter.
func priorVar(t *testing.T, m *Model, x []float64) float64 {
	t.Helper()
	g := G.NewGraph()
	s := layers.NewScope(g)
	xn := graph.Input(g, "xs", tensor.Shape{1, m.D}, append([]float64(nil), x...))
	jit, _ := s.Node(m.post.JitterParam)
	k, err := kernels.KDiag(m.kernels[0], s, xn, jit)
	if err != nil {
		t.Fatal(err)
	}
	return evalNode(t, g, s, k)[0]
}

func evalNode(t *testing.T, g *G.ExprGraph, s *layers.Scope, n *G.Node) []float64 {
	t.Helper()
	prog, err := graph.Compile(g, n)
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
	v, err := prog.Float64s(n)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float64(nil), v...)
}

// BenchmarkEPFitcFit is one EP-FITC fit (30 L-BFGS iterations) on 140
// points with M = 8, a thyroid-sized Table 1 problem.
func BenchmarkEPFitcFit(b *testing.B) {
	train := blobs(140, 9)
	for i := 0; i < b.N; i++ {
		m, err := New(opts("ep-fitc", 8, 30, 140, 1))
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A failed EP run is the objective's error (a Cholesky failure, which the
// training loop answers with more jitter), never a nil result used later.
func TestEPStepReportsFailedRun(t *testing.T) {
	train := blobs(40, 3)
	for _, preset := range []string{"ep", "ep-fitc"} {
		m, err := New(opts(preset, 5, 3, 40, 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.initialize(train, io.Discard); err != nil {
			t.Fatal(err)
		}
		o, err := newEPObjective(m, train)
		if err != nil {
			t.Fatal(err)
		}
		o.sites.Tau[3] = -1 // no EP run accepts a negative site precision
		if _, _, err := o.Step(solvers.FullBatch(train.N)); !errors.Is(err, solvers.ErrNotPositiveDefinite) {
			t.Fatalf("%s: got %v, want a Cholesky-class error", preset, err)
		}
		if _, _, err := o.Step(solvers.FullBatch(train.N)); err != nil {
			t.Fatalf("%s: after the restarted sites: %v", preset, err)
		}
	}
}
