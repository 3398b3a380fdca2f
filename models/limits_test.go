package models

import (
	"io"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/solvers"
)

// With a Gaussian likelihood and Z = X (the "full" family), the ELBO at
// the exact posterior q(u) = p(f | y) equals the exact log marginal
// likelihood log N(y | 0, K + σ²I), and is a maximum over q(u): the
// composed SVI objective contains exact GP regression as a limit.
func TestGaussianFullPosteriorIsExact(t *testing.T) {
	ds := syntheticSet(25, 2, 2, 8)
	const noise = 0.3
	o := Options{Likelihood: LikelihoodOptions{Custom: likelihoods.NewGaussian("g", noise)}, Posterior: PosteriorOptions{Family: "full"}}
	// σ₀² (e⁻²⁰) and the jitter enter k(x,x) and K_ZZ but not the cross
	// covariance K_xZ, so Z = X is exact only as they vanish.
	o.Train.Batch, o.Posterior.Jitter = ds.N, 1e-8
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.initialize(ds, io.Discard); err != nil {
		t.Fatal(err)
	}
	se := m.kernels[0].(*kernels.SE)
	n, D := ds.N, ds.D
	jit := m.post.JitterParam.Data[0]
	K := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			var s float64
			for d := 0; d < D; d++ {
				r := ds.X[i*D+d] - ds.X[j*D+d]
				s += r * r / se.Lengthscales.Value(d)
			}
			v := se.Variance.Value(0) * math.Exp(-0.5*s)
			if i == j {
				v += se.WhiteNoise.Value(0) + jit
			}
			K.SetSym(i, j, v)
		}
	}
	y := mat.NewVecDense(n, nil)
	for i, l := range ds.Y {
		y.SetVec(i, float64(l))
	}
	// A = K + σ²I; posterior mean K A⁻¹ y, covariance K − K A⁻¹ K.
	A := mat.NewSymDense(n, nil)
	A.AddSym(K, mat.NewDiagDense(n, nil))
	for i := 0; i < n; i++ {
		A.SetSym(i, i, A.At(i, i)+noise)
	}
	var ca mat.Cholesky
	if !ca.Factorize(A) {
		t.Fatal("K + σ²I not positive definite")
	}
	var aiy mat.VecDense
	if err := ca.SolveVecTo(&aiy, y); err != nil {
		t.Fatal(err)
	}
	var mean mat.VecDense
	mean.MulVec(K, &aiy)
	var aiK mat.Dense
	if err := ca.SolveTo(&aiK, K); err != nil {
		t.Fatal(err)
	}
	var kaik mat.Dense
	kaik.Mul(K, &aiK)
	S := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			S.SetSym(i, j, K.At(i, j)-0.5*(kaik.At(i, j)+kaik.At(j, i)))
		}
	}
	var cs mat.Cholesky
	if !cs.Factorize(S) {
		t.Fatal("posterior covariance not positive definite")
	}
	var L mat.TriDense
	cs.LTo(&L)
	l := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			l[i*n+j] = L.At(i, j)
		}
		m.post.Mean[0].Data[i] = mean.AtVec(i)
	}
	if err := m.post.SetL(0, l); err != nil {
		t.Fatal(err)
	}
	exact := -0.5*mat.Dot(y, &aiy) - 0.5*ca.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi)

	obj, err := m.newObjective(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	loss, _, err := obj.Step(solvers.FullBatch(n))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(-loss-exact) > 1e-6*math.Abs(exact) {
		t.Errorf("ELBO at the exact posterior %.10f, log marginal likelihood %.10f", -loss, exact)
	}
	// Moving q(u) either way along any of several directions lowers the
	// ELBO: the exact posterior is its maximum. (The gradient itself is not
	// compared with zero: K_ZZ⁻¹ at a 1e-8 jitter amplifies round-off.)
	for _, p := range []struct {
		data []float64
		i    int
		h    float64
	}{{m.post.Mean[0].Data, 3, 0.05}, {m.post.Mean[0].Data, 11, 0.05}, {m.post.LRaw[0].Data, 0, 0.05}, {m.post.LRaw[0].Data, 6*n + 2, 0.05}} {
		for _, h := range []float64{p.h, -p.h} {
			old := p.data[p.i]
			p.data[p.i] += h
			worse, _, err := obj.Step(solvers.FullBatch(n))
			p.data[p.i] = old
			if err != nil {
				t.Fatal(err)
			}
			if !(worse > loss) {
				t.Errorf("moving q(u) element %d by %g did not lower the ELBO (%v → %v)", p.i, h, -loss, -worse)
			}
		}
	}
}

// With a Gaussian likelihood and M < N inducing inputs, the ELBO at the
// optimal q(u) — S = K_mm(K_mm + σ⁻²K_mn K_nm)⁻¹K_mm, m = σ⁻²S K_mm⁻¹K_mn y —
// equals Titsias's collapsed bound
// log N(y | 0, Q_nn + σ²I) − tr(K_nn − Q_nn)/(2σ²), and is a maximum.
func TestGaussianSparseOptimumIsTitsias(t *testing.T) {
	ds := syntheticSet(40, 2, 2, 9)
	const noise, M = 0.25, 7
	o := Options{Likelihood: LikelihoodOptions{Custom: likelihoods.NewGaussian("g", noise)}}
	o.Posterior.Inducing, o.Train.Batch = M, ds.N
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.initialize(ds, io.Discard); err != nil {
		t.Fatal(err)
	}
	n := ds.N
	z := m.post.Z[0].Data
	Kmm := mat.NewSymDense(M, nil)
	for i := 0; i < M; i++ {
		row := crossCov(t, m, z[i*m.D:(i+1)*m.D], z)
		for j := i; j < M; j++ {
			Kmm.SetSym(i, j, row[j])
		}
		Kmm.SetSym(i, i, priorVar(t, m, z[i*m.D:(i+1)*m.D]))
	}
	Knm := mat.NewDense(n, M, nil)
	kdiag := make([]float64, n)
	for i := 0; i < n; i++ {
		Knm.SetRow(i, crossCov(t, m, ds.X[i*m.D:(i+1)*m.D], z))
		kdiag[i] = priorVar(t, m, ds.X[i*m.D:(i+1)*m.D])
	}
	y := mat.NewVecDense(n, nil)
	for i, l := range ds.Y {
		y.SetVec(i, float64(l))
	}
	// Titsias: Q = Knm Kmm⁻¹ Kmn.
	var cm mat.Cholesky
	if !cm.Factorize(Kmm) {
		t.Fatal("K_mm not positive definite")
	}
	var kinvKmn mat.Dense
	if err := cm.SolveTo(&kinvKmn, Knm.T()); err != nil {
		t.Fatal(err)
	}
	var Q mat.Dense
	Q.Mul(Knm, &kinvKmn)
	C := mat.NewSymDense(n, nil)
	var trace float64
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			C.SetSym(i, j, 0.5*(Q.At(i, j)+Q.At(j, i)))
		}
		trace += kdiag[i] - Q.At(i, i)
		C.SetSym(i, i, C.At(i, i)+noise)
	}
	var cc mat.Cholesky
	if !cc.Factorize(C) {
		t.Fatal("Q + σ²I not positive definite")
	}
	var ciy mat.VecDense
	cc.SolveVecTo(&ciy, y)
	titsias := -0.5*mat.Dot(y, &ciy) - 0.5*cc.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi) - trace/(2*noise)
	// Optimal q(u).
	var kmnknm mat.Dense
	kmnknm.Mul(Knm.T(), Knm)
	P := mat.NewSymDense(M, nil)
	for i := 0; i < M; i++ {
		for j := i; j < M; j++ {
			P.SetSym(i, j, Kmm.At(i, j)+0.5*(kmnknm.At(i, j)+kmnknm.At(j, i))/noise)
		}
	}
	var cp mat.Cholesky
	if !cp.Factorize(P) {
		t.Fatal("K_mm + σ⁻²K_mn K_nm not positive definite")
	}
	var pinvK mat.Dense
	cp.SolveTo(&pinvK, Kmm)
	var Sd mat.Dense
	Sd.Mul(Kmm, &pinvK)
	S := mat.NewSymDense(M, nil)
	for i := 0; i < M; i++ {
		for j := i; j < M; j++ {
			S.SetSym(i, j, 0.5*(Sd.At(i, j)+Sd.At(j, i)))
		}
	}
	var kmny, pinv mat.VecDense
	kmny.MulVec(Knm.T(), y)
	cp.SolveVecTo(&pinv, &kmny)
	var mean mat.VecDense
	mean.MulVec(Kmm, &pinv) // σ⁻²S K_mm⁻¹K_mn y = K_mm P⁻¹ K_mn y / σ²
	mean.ScaleVec(1/noise, &mean)
	copy(m.post.Mean[0].Data, mean.RawVector().Data)
	if err := m.post.SetL(0, cholOf(S, M)); err != nil {
		t.Fatal(err)
	}
	obj, err := m.newObjective(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	loss, _, err := obj.Step(solvers.FullBatch(n))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(-loss-titsias) > 1e-8*math.Abs(titsias) {
		t.Errorf("ELBO at the optimal q(u) %.10f, Titsias's bound %.10f", -loss, titsias)
	}
	for _, h := range []float64{0.05, -0.05} {
		m.post.Mean[0].Data[2] += h
		worse, _, err := obj.Step(solvers.FullBatch(n))
		m.post.Mean[0].Data[2] -= h
		if err != nil {
			t.Fatal(err)
		}
		if !(worse > loss) {
			t.Errorf("moving m by %g did not lower the ELBO", h)
		}
	}
}
