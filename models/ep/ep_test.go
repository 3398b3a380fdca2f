package ep

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// seKernel is an SE Gram matrix on random 1-D inputs plus a small nugget.
func seKernel(n int, seed uint64) (*mat.SymDense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n)
	for i := range x {
		x[i] = 4 * rng.Float64()
	}
	K := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := 1.3 * math.Exp(-0.5*(x[i]-x[j])*(x[i]-x[j])/0.5)
			if i == j {
				v += 1e-6
			}
			K.SetSym(i, j, v)
		}
	}
	return K, x
}

// On a Gaussian likelihood EP is exact: the posterior is the GP regression
// posterior and the evidence the log marginal likelihood, for sequential
// and parallel schedules, damped or not.
func TestEPOnGaussianIsExact(t *testing.T) {
	const n, noise = 30, 0.2
	K, x := seKernel(n, 1)
	y := make([]float64, n)
	for i := range y {
		y[i] = math.Sin(2*x[i]) + 0.3*math.Cos(7*float64(i))
	}
	A := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			A.SetSym(i, j, K.At(i, j))
		}
		A.SetSym(i, i, A.At(i, i)+noise)
	}
	var ch mat.Cholesky
	ch.Factorize(A)
	var aiy mat.VecDense
	ch.SolveVecTo(&aiy, mat.NewVecDense(n, y))
	exact := -0.5*mat.Dot(mat.NewVecDense(n, y), &aiy) - 0.5*ch.LogDet() - 0.5*n*math.Log(2*math.Pi)
	var wantMean mat.VecDense
	wantMean.MulVec(K, &aiy)
	lik := likelihoods.NewGaussian("g", noise)
	for _, cfg := range []Config{{}, {Parallel: true}, {Damping: 0.5}, {Parallel: true, Damping: 0.7}} {
		res, err := Run(K, y, lik, NewSites(n), cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if math.Abs(res.LogZ-exact) > 1e-8*math.Abs(exact) {
			t.Errorf("%+v: log Z_EP %.10f, exact %.10f", cfg, res.LogZ, exact)
		}
		for i := range res.Mean {
			if math.Abs(res.Mean[i]-wantMean.AtVec(i)) > 1e-8 {
				t.Fatalf("%+v: posterior mean %d = %v, exact %v", cfg, i, res.Mean[i], wantMean.AtVec(i))
			}
		}
		if cfg.Damping == 0 && !cfg.Parallel && res.Sweeps > 2 {
			t.Errorf("undamped sequential EP took %d sweeps on a Gaussian likelihood (exact after one)", res.Sweeps)
		}
	}
}

// Probit tilted moments against quadrature of the tilted density.
func TestProbitTiltedMoments(t *testing.T) {
	links := map[string]func(y, f float64) float64{
		"probit": func(y, f float64) float64 { return 0.5 * math.Erfc(-y*f/math.Sqrt2) },
		"logit":  func(y, f float64) float64 { return 1 / (1 + math.Exp(-y*f)) },
	}
	cases := []struct{ y, m, v float64 }{{1, 0.3, 0.8}, {-1, 2, 0.1}, {1, -6, 2}, {-1, -1, 5}, {1, -3, 9}, {-1, 4, 16}}
	for name, lik := range links {
		l := &likelihoods.Bernoulli{Link: name, Points: 20}
		for _, c := range cases {
			lz, mean, v := l.TiltedMoments(c.y, c.m, c.v)
			// Trapezoid quadrature on a wide grid.
			var z0, z1, z2 float64
			sd := math.Sqrt(c.v)
			const k = 40000
			for i := 0; i <= k; i++ {
				f := c.m - 14*sd + 28*sd*float64(i)/k
				p := lik(c.y, f) * math.Exp(-(f-c.m)*(f-c.m)/(2*c.v)) / math.Sqrt(2*math.Pi*c.v)
				w := 28 * sd / k
				if i == 0 || i == k {
					w /= 2
				}
				z0 += w * p
				z1 += w * p * f
				z2 += w * p * f * f
			}
			qm := z1 / z0
			qv := z2/z0 - qm*qm
			if math.Abs(lz-math.Log(z0)) > 1e-7 || math.Abs(mean-qm) > 1e-6*(1+math.Abs(qm)) || math.Abs(v-qv) > 1e-6*(1+qv) {
				t.Errorf("%s %+v: (%v, %v, %v), quadrature (%v, %v, %v)", name, c, lz, mean, v, math.Log(z0), qm, qv)
			}
		}
	}
}

// Probit EP on a separable-ish problem converges, its posterior mean has
// the labels' signs, and warm-starting from converged sites takes one
// sweep.
func TestProbitEPConvergesAndWarmStarts(t *testing.T) {
	const n = 40
	K, x := seKernel(n, 2)
	y := make([]float64, n)
	for i := range y {
		y[i] = 1
		if x[i] < 2 {
			y[i] = -1
		}
	}
	s := NewSites(n)
	res, err := Run(K, y, likelihoods.NewProbit(), s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for i := range y {
		if res.Mean[i]*y[i] < 0 {
			wrong++
		}
	}
	if wrong > 2 {
		t.Errorf("%d of %d posterior means have the wrong sign", wrong, n)
	}
	again, err := Run(K, y, likelihoods.NewProbit(), s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Sweeps != 1 || math.Abs(again.LogZ-res.LogZ) > 1e-9 {
		t.Errorf("warm start: %d sweeps, log Z %v vs %v", again.Sweeps, again.LogZ, res.LogZ)
	}
	par, err := Run(K, y, likelihoods.NewProbit(), NewSites(n), Config{Parallel: true, Damping: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(par.LogZ-res.LogZ) > 1e-6 {
		t.Errorf("parallel damped EP log Z %v, sequential %v", par.LogZ, res.LogZ)
	}
}

// BenchmarkProbitEP is one cold EP run on 400 points (a Table 1 size).
func BenchmarkProbitEP(b *testing.B) {
	const n = 400
	K, x := seKernel(n, 3)
	y := make([]float64, n)
	for i := range y {
		y[i] = 1
		if math.Sin(3*x[i]) < 0 {
			y[i] = -1
		}
	}
	for i := 0; i < b.N; i++ {
		res, err := Run(K, y, likelihoods.NewProbit(), NewSites(n), Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Sweeps), "sweeps")
	}
}
