package models

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// The mean-field bound (eq. 12, closed forms of the truncated Gaussians,
// Woodbury forms) equals its definition E_q[log N(g | 0, Q+I)] −
// E_q[log q(g)] − ½tr(K − Q), estimated by Monte Carlo from draws of the
// truncated-Gaussian factors q(g_n) with plain matrices.
func TestMeanFieldBoundMatchesDefinition(t *testing.T) {
	train := blobs(6, 21)
	m, err := New(opts("mfsp", 3, 1, 6, 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.initialize(train, io.Discard); err != nil {
		t.Fatal(err)
	}
	o, err := newMFObjective(m, train)
	if err != nil {
		t.Fatal(err)
	}
	n, M := train.N, m.post.M
	rng := rand.New(rand.NewPCG(3, 3))
	a := make([]float64, n)
	for i := range a {
		a[i] = 0.7 * rng.NormFloat64()
	}
	bound, err := o.eval(a)
	if err != nil {
		t.Fatal(err)
	}
	kzz, _ := o.prog.Float64s(o.kzz)
	kzx, _ := o.prog.Float64s(o.kzx)
	Kmm := mat.NewSymDense(M, append([]float64(nil), kzz...))
	Kmn := mat.NewDense(M, n, append([]float64(nil), kzx...))
	var ch mat.Cholesky
	ch.Factorize(Kmm)
	var kinv mat.Dense
	ch.SolveTo(&kinv, Kmn)
	var Q mat.Dense
	Q.Mul(Kmn.T(), &kinv)
	C := mat.NewSymDense(n, nil)
	var trace float64
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			C.SetSym(i, j, 0.5*(Q.At(i, j)+Q.At(j, i)))
		}
		C.SetSym(i, i, C.At(i, i)+1)
		trace += priorVar(t, m, train.X[i*train.D:(i+1)*train.D]) - Q.At(i, i)
	}
	var cc mat.Cholesky
	cc.Factorize(C)
	var Ci mat.SymDense
	cc.InverseTo(&Ci)
	sd := make([]float64, n)
	for i := range sd {
		sd[i] = 1 / math.Sqrt(Ci.At(i, i))
	}
	std := distuv.Normal{Mu: 0, Sigma: 1}
	const draws = 400000
	g := mat.NewVecDense(n, nil)
	var sum, sum2 float64
	for k := 0; k < draws; k++ {
		var logq float64
		for i := 0; i < n; i++ {
			s := 2*float64(train.Y[i]) - 1
			alpha := s * a[i] / sd[i]
			// t ~ N(0,1) truncated to s·(a + σ̃t) > 0, i.e. s·t > −α.
			lo := std.CDF(-alpha)
			u := lo + (1-lo)*rng.Float64()
			tt := s * std.Quantile(u)
			gi := a[i] + sd[i]*tt
			g.SetVec(i, gi)
			logq += math.Log(std.Prob((gi-a[i])/sd[i])/sd[i]) - math.Log(1-lo)
		}
		var cg mat.VecDense
		cg.SolveVec(C, g)
		logp := -0.5*mat.Dot(g, &cg) - 0.5*cc.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi)
		v := logp - logq - 0.5*trace
		sum += v
		sum2 += v * v
	}
	mean := sum / draws
	se := math.Sqrt((sum2/draws - mean*mean) / draws)
	t.Logf("bound %.5f, Monte Carlo %.5f ± %.5f", bound, mean, se)
	if math.Abs(bound-mean) > 4*se+1e-9 {
		t.Errorf("mean-field bound %.6f, its definition by Monte Carlo %.6f ± %.6f", bound, mean, se)
	}
}

// MFSp learns the blobs through prediction option (ii), the Gaussian
// approximation stored as q(u).
func TestMFSpTrains(t *testing.T) {
	train, test := blobs(80, 22), blobs(200, 23)
	m, err := New(opts("mfsp", 8, 30, 80, 5))
	if err != nil {
		t.Fatal(err)
	}
	var bound float64
	if err := m.Fit(context.Background(), train, FitConfig{Callback: func(e Epoch) error { bound = -e.Loss; return nil }}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := Score(p, test.Y, 2)
	t.Logf("MFSp: bound %.3f, test error %.3f, NLL %.3f", bound, sc.Error, sc.NLL)
	if sc.Error > 0.13 || sc.NLL > 0.4 {
		t.Errorf("MFSp test error %.3f, NLL %.3f on blobs (Bayes error 0.067)", sc.Error, sc.NLL)
	}
}

// Prediction option (i) averages over draws of q(g): it stays close to the
// Gaussian approximation (ii) without equalling it, classifies as well,
// and survives Save/Load.
func TestMFSpSampledPrediction(t *testing.T) {
	train, test := blobs(60, 24), blobs(100, 25)
	preds := map[int][]float64{}
	for _, S := range []int{0, 300} {
		o := opts("mfsp", 6, 20, 60, 5)
		o.Posterior.MeanSamples = S
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
		if sc := Score(p, test.Y, 2); sc.Error > 0.15 {
			t.Errorf("S = %d: test error %.3f", S, sc.Error)
		}
		path := filepath.Join(t.TempDir(), "m.json")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		l, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := l.Predict(test.X, test.N, nil)
		if !slices.Equal(p, q) {
			t.Errorf("S = %d: predictions changed through Save/Load", S)
		}
		preds[S] = p
	}
	var maxDiff float64
	for i := range preds[0] {
		maxDiff = math.Max(maxDiff, math.Abs(preds[0][i]-preds[300][i]))
	}
	t.Logf("largest difference between options (i) and (ii): %.4f", maxDiff)
	if maxDiff == 0 || maxDiff > 0.2 {
		t.Errorf("options (i) and (ii) differ by %v at most", maxDiff)
	}
}
