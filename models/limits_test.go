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
