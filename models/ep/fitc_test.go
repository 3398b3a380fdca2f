package ep

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/layers/likelihoods"
)

// fitcPrior is a FITC prior on random 1-D inputs with M inducing inputs,
// some inputs placed on inducing points (λ = 0 there, up to the nugget).
func fitcPrior(n, m int, seed uint64) (LowRank, *mat.SymDense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := make([]float64, n)
	z := make([]float64, m)
	for i := range z {
		z[i] = 4 * rng.Float64()
	}
	for i := range x {
		x[i] = 4 * rng.Float64()
		if i < 2 {
			x[i] = z[i]
		}
	}
	k := func(a, b float64) float64 { return 1.3 * math.Exp(-0.5*(a-b)*(a-b)/0.5) }
	Kzz := mat.NewSymDense(m, nil)
	for i := 0; i < m; i++ {
		for j := i; j < m; j++ {
			v := k(z[i], z[j])
			if i == j {
				v += 1e-6
			}
			Kzz.SetSym(i, j, v)
		}
	}
	Kzx := mat.NewDense(m, n, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			Kzx.Set(i, j, k(z[i], x[j]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(Kzz) {
		panic("Kzz")
	}
	var L mat.TriDense
	ch.LTo(&L)
	var V mat.Dense
	if err := V.Solve(&L, Kzx); err != nil {
		panic(err)
	}
	lam := make([]float64, n)
	dense := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		var q float64
		for a := 0; a < m; a++ {
			q += V.At(a, i) * V.At(a, i)
		}
		lam[i] = math.Max(k(x[i], x[i])+1e-6-q, 0)
		for j := i; j < n; j++ {
			var qij float64
			for a := 0; a < m; a++ {
				qij += V.At(a, i) * V.At(a, j)
			}
			if i == j {
				qij += lam[i]
			}
			dense.SetSym(i, j, qij)
		}
	}
	y := make([]float64, n)
	for i := range y {
		y[i] = 1
		if math.Sin(2*x[i])+0.3*rng.NormFloat64() < 0 {
			y[i] = -1
		}
	}
	return LowRank{Lambda: lam, V: &V}, dense, y
}

// RunFITC is EP on the dense matrix Λ + VᵀV done in O(nM²): the same sites,
// marginals and evidence as Run on that matrix, sequential and parallel.
func TestRunFITCEqualsDenseRun(t *testing.T) {
	p, K, y := fitcPrior(60, 7, 3)
	lik := likelihoods.NewProbit()
	for _, cfg := range []Config{{}, {Parallel: true, Damping: 0.5}} {
		sd, sf := NewSites(60), NewSites(60)
		d, err := Run(K, y, lik, sd, cfg)
		if err != nil {
			t.Fatal(err)
		}
		f, err := RunFITC(p, y, lik, sf, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.Sweeps != f.Sweeps || !f.Converged {
			t.Errorf("parallel %v: sweeps dense %d, FITC %d (converged %v)", cfg.Parallel, d.Sweeps, f.Sweeps, f.Converged)
		}
		if math.Abs(d.LogZ-f.LogZ) > 1e-8*(1+math.Abs(d.LogZ)) {
			t.Errorf("parallel %v: log Z dense %.12g, FITC %.12g", cfg.Parallel, d.LogZ, f.LogZ)
		}
		for i := range y {
			if math.Abs(d.Mean[i]-f.Mean[i]) > 1e-7 || math.Abs(d.Var[i]-f.Var[i]) > 1e-7 ||
				math.Abs(sd.Tau[i]-sf.Tau[i]) > 1e-6*(1+sd.Tau[i]) || math.Abs(sd.Nu[i]-sf.Nu[i]) > 1e-6*(1+math.Abs(sd.Nu[i])) {
				t.Fatalf("parallel %v, site %d: dense μ %g v %g τ̃ %g ν̃ %g; FITC μ %g v %g τ̃ %g ν̃ %g", cfg.Parallel, i,
					d.Mean[i], d.Var[i], sd.Tau[i], sd.Nu[i], f.Mean[i], f.Var[i], sf.Tau[i], sf.Nu[i])
			}
		}
	}
}

// The inducing posterior is the conjugate update of v = L_ZZ⁻¹u ~ N(0, I)
// by the converged Gaussian sites, each observing f_i = v_iᵀv + N(0, λ_i)
// through the pseudo-observation ν̃_i/τ̃_i with noise 1/τ̃_i.
func TestInducingPosteriorIsConjugate(t *testing.T) {
	p, _, y := fitcPrior(40, 5, 4)
	s := NewSites(40)
	if _, err := RunFITC(p, y, likelihoods.NewProbit(), s, Config{}); err != nil {
		t.Fatal(err)
	}
	mean, cov, err := InducingPosterior(p, s)
	if err != nil {
		t.Fatal(err)
	}
	// Conjugate update by hand: site i observes f_i = v_iᵀv + ε_i,
	// ε_i ~ N(0, λ_i), with pseudo-observation μ̃_i = ν̃_i/τ̃_i and noise 1/τ̃_i.
	m, n := p.V.Dims()
	prec := mat.NewSymDense(m, nil)
	rhs := make([]float64, m)
	for a := 0; a < m; a++ {
		prec.SetSym(a, a, 1)
	}
	for i := 0; i < n; i++ {
		if s.Tau[i] == 0 {
			continue
		}
		noise := p.Lambda[i] + 1/s.Tau[i]
		obs := s.Nu[i] / s.Tau[i]
		for a := 0; a < m; a++ {
			rhs[a] += p.V.At(a, i) * obs / noise
			for c := a; c < m; c++ {
				prec.SetSym(a, c, prec.At(a, c)+p.V.At(a, i)*p.V.At(c, i)/noise)
			}
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(prec) {
		t.Fatal("precision")
	}
	var want mat.SymDense
	if err := ch.InverseTo(&want); err != nil {
		t.Fatal(err)
	}
	var wm mat.VecDense
	wm.MulVec(&want, mat.NewVecDense(m, rhs))
	for a := 0; a < m; a++ {
		if math.Abs(wm.AtVec(a)-mean[a]) > 1e-8 {
			t.Fatalf("mean %d: %g, want %g", a, mean[a], wm.AtVec(a))
		}
		for c := 0; c < m; c++ {
			if math.Abs(want.At(a, c)-cov.At(a, c)) > 1e-8 {
				t.Fatalf("cov %d,%d: %g, want %g", a, c, cov.At(a, c), want.At(a, c))
			}
		}
	}
}

func BenchmarkRunFITC(b *testing.B) {
	p, _, y := fitcPrior(700, 21, 5)
	lik := likelihoods.NewProbit()
	for b.Loop() {
		if _, err := RunFITC(p, y, lik, NewSites(700), Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
