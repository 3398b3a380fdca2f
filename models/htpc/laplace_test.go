package htpc

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"
)

// smallProblem draws n points in 2-D with labels from the nearest of l
// centres (some flipped, so the likelihood is not separable).
func smallProblem(t *testing.T, n, l int, seed uint64) *problem {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	const d = 2
	x := make([]float64, n*d)
	y := make([]int, n)
	for i := range n {
		c := i % l
		ang := 2 * math.Pi * float64(c) / float64(l)
		x[i*d] = 1.2*math.Cos(ang) + 0.8*rng.NormFloat64()
		x[i*d+1] = 1.2*math.Sin(ang) + 0.8*rng.NormFloat64()
		y[i] = c
	}
	p, err := newProblem(x, n, d, y, l, 1e-6, 1e-11, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

func testHyper(l int) Hyper {
	h := Hyper{LogEll: math.Log(1.3), LogSigma: math.Log(1.1)}
	for k := range l {
		h.LogB = append(h.LogB, math.Log(1.5+0.6*float64(k)))
	}
	return h
}

func TestKernelGraphMatchesGo(t *testing.T) {
	p := smallProblem(t, 6, 2, 1)
	h := testHyper(2)
	kv, err := p.kern.value(h)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(kv, seKernel(p.d2, h)); d > 1e-14 {
		t.Errorf("kernel graph differs from seKernel by %g", d)
	}
}

// Newton's mode is stationary: ‖∇_v Ψ‖₂ < 1e-8, with the gradient
// recomputed independently of the graph (refLik), and in g-space
// ∇ℓ(ĝ) = K⁻¹ĝ, i.e. ĝ = K ∇ℓ(ĝ).
func TestModeStationary(t *testing.T) {
	p := smallProblem(t, 12, 3, 2)
	h := testHyper(3)
	m, err := p.findMode(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, rg, _ := refLik(m.G, m.b, p.y, p.l)
	gv := p.whitenedGrad(m.L, rg, m.V)
	norm := math.Sqrt(dot(gv, gv))
	t.Logf("Newton iterations %d, ‖∇Ψ‖ = %.3g (independent: %.3g), Ψ = %.6f, E = %.6f", m.iters, m.gradNorm, norm, m.psi, m.evidence)
	if norm >= 1e-8 {
		t.Errorf("‖∇_v Ψ‖ = %g at the mode", norm)
	}
	n, l := p.n, p.l
	kv := seKernel(p.d2, h)
	for i := range n {
		kv[i*n+i] += p.jitter
	}
	var worst float64
	for i := range n {
		for k := range l {
			var s float64
			for j := range n {
				s += kv[i*n+j] * rg[j*l+k]
			}
			worst = math.Max(worst, math.Abs(s-m.G[i*l+k]))
		}
	}
	if worst > 1e-8 {
		t.Errorf("max |ĝ − K∇ℓ(ĝ)| = %g", worst)
	}
	if m.iters < 2 {
		t.Errorf("only %d Newton iterations from the prior mean: suspicious", m.iters)
	}
}

// The evidence gradient (analytic, graph-supplied likelihood derivatives)
// against central differences of the evidence with cold-started Newton.
func TestEvidenceGradient(t *testing.T) {
	for _, tc := range []struct {
		n, l int
		seed uint64
	}{{8, 3, 3}, {10, 2, 4}} {
		p := smallProblem(t, tc.n, tc.l, tc.seed)
		h := testHyper(tc.l)
		m, err := p.findMode(h, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, _, err := p.evidenceGrad(m)
		if err != nil {
			t.Fatal(err)
		}
		ev := func(h Hyper) float64 {
			m, err := p.findMode(h, nil)
			if err != nil {
				t.Fatal(err)
			}
			return m.evidence
		}
		fd := func(get func(*Hyper) *float64) float64 {
			const e = 1e-3 // Richardson-extrapolated: truncation O(e⁴); evaluation noise ~1e-12/e
			hp, hm := h.clone(), h.clone()
			*get(&hp) += e
			*get(&hm) -= e
			hp2, hm2 := h.clone(), h.clone()
			*get(&hp2) += e / 2
			*get(&hm2) -= e / 2
			d1 := (ev(hp) - ev(hm)) / (2 * e)
			d2 := (ev(hp2) - ev(hm2)) / e
			return (4*d2 - d1) / 3
		}
		check := func(name string, ana, num float64) {
			t.Logf("n=%d l=%d %s: analytic %.10f numeric %.10f", tc.n, tc.l, name, ana, num)
			if math.Abs(ana-num) > 1e-7*math.Max(1, math.Abs(num)) {
				t.Errorf("%s: analytic %v, numeric %v", name, ana, num)
			}
		}
		check("log ℓ", g.LogEll, fd(func(h *Hyper) *float64 { return &h.LogEll }))
		check("log σ", g.LogSigma, fd(func(h *Hyper) *float64 { return &h.LogSigma }))
		for k := range tc.l {
			check("log b", g.LogB[k], fd(func(h *Hyper) *float64 { return &h.LogB[k] }))
		}
	}
}

// The Laplace evidence by its own definition, in g-space and independently
// of the whitened Newton system and of the graph: log p(y|ĝ) + log N(ĝ|0,K)
// + (nl/2) log 2π − ½ log|K⁻¹ + W|, with W from refLik.
func laplaceByDefinition(t *testing.T, p *problem, m *mode) float64 {
	t.Helper()
	n, l := p.n, p.l
	N := n * l
	kv := seKernel(p.d2, m.hyp)
	for i := range n {
		kv[i*n+i] += p.jitter
	}
	K := mat.NewSymDense(n, kv)
	var chK mat.Cholesky
	if !chK.Factorize(K) {
		t.Fatal("K not PD")
	}
	var kinv mat.SymDense
	if err := chK.InverseTo(&kinv); err != nil {
		t.Fatal(err)
	}
	ll, _, rh := refLik(m.G, m.b, p.y, l)
	var quad float64
	for k := range l {
		for i := range n {
			for j := range n {
				quad += m.G[i*l+k] * kinv.At(i, j) * m.G[j*l+k]
			}
		}
	}
	logPrior := -0.5*quad - 0.5*float64(l)*chK.LogDet() - 0.5*float64(N)*math.Log(2*math.Pi)
	h := mat.NewSymDense(N, nil)
	for k := range l {
		for i := range n {
			for j := range n {
				h.SetSym(k*n+i, k*n+j, kinv.At(i, j))
			}
		}
	}
	for i := range n {
		for k := range l {
			for k2 := k; k2 < l; k2++ {
				h.SetSym(k*n+i, k2*n+i, h.At(k*n+i, k2*n+i)-rh[i*l*l+k*l+k2])
			}
		}
	}
	var chH mat.Cholesky
	if !chH.Factorize(h) {
		t.Fatal("K⁻¹ + W not PD at the mode")
	}
	return ll + logPrior + 0.5*float64(N)*math.Log(2*math.Pi) - 0.5*chH.LogDet()
}

// The evidence against its definition (tight) and against the exact
// log p(y|X) by brute-force Gauss–Hermite integration over the four latent
// values of n = 2, l = 2, as tight as Laplace can be: nearly exact when the
// scales b are small (the posterior is then nearly Gaussian), off by a few
// hundredths to a tenth in log when large b makes the likelihood saturate. The check can fail: dropping Laplace's −½ log|A| term misses the
// exact value by far more than the tolerance.
func TestEvidenceAgainstIntegral(t *testing.T) {
	x := []float64{-0.6, 0.2, 0.7, -0.1}
	y := []int{0, 1}
	const n, d, l = 2, 2, 2
	p, err := newProblem(x, n, d, y, l, 1e-6, 1e-11, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for _, tc := range []struct {
		h   Hyper
		tol float64
		// discriminates: the −½ log|A| term is much larger than tol here.
		discriminates bool
	}{
		// Vanishing scales: p(y|g) → 2⁻ⁿ, both sides → −2 log 2.
		{Hyper{LogEll: 0, LogSigma: 0, LogB: []float64{math.Log(1e-3), math.Log(2e-3)}}, 1e-5, false},
		// Small scales: Laplace is off at O(b²) because τ is nonlinear.
		{Hyper{LogEll: 0, LogSigma: 0, LogB: []float64{math.Log(0.3), math.Log(0.5)}}, 0.05, false},
		{Hyper{LogEll: math.Log(0.8), LogSigma: 0, LogB: []float64{math.Log(2), math.Log(3)}}, 0.05, true},
		{Hyper{LogEll: math.Log(1.5), LogSigma: math.Log(1.5), LogB: []float64{math.Log(4), math.Log(1)}}, 0.15, true},
	} {
		h := tc.h
		m, err := p.findMode(h, nil)
		if err != nil {
			t.Fatal(err)
		}
		def := laplaceByDefinition(t, p, m)
		if math.Abs(def-m.evidence) > 1e-9 {
			t.Errorf("evidence %v, by definition %v", m.evidence, def)
		}
		// Exact: E_v[p(y | g = L v)] over v ~ N(0, I₄) by a 60⁴-node
		// Gauss–Hermite product rule. With n = 2, g_0k = L₀₀v_k0 and
		// g_1k = L₁₀v_k0 + L₁₁v_k1, so f = b τ(g) is tabulated per class.
		const q = 60
		xs, ws := make([]float64, q), make([]float64, q)
		quad.Hermite{}.FixedLocations(xs, ws, math.Inf(-1), math.Inf(1))
		for i := range xs {
			xs[i] *= math.Sqrt2
			ws[i] /= math.Sqrt(math.Pi)
		}
		L, b := m.L, m.b
		var f0, f1 [l][]float64 // f0[k][a] at point 0, f1[k][a*q+c] at point 1
		for k := range l {
			f0[k] = make([]float64, q)
			f1[k] = make([]float64, q*q)
			for a := range q {
				f0[k][a] = b[k] * tau(L.At(0, 0)*xs[a])
				for c := range q {
					f1[k][a*q+c] = b[k] * tau(L.At(1, 0)*xs[a]+L.At(1, 1)*xs[c])
				}
			}
		}
		sig := func(u float64) float64 { return 1 / (1 + math.Exp(-u)) }
		var z float64
		for a0 := range q {
			for c0 := range q {
				w0 := ws[a0] * ws[c0]
				for a1 := range q {
					for c1 := range q {
						// y = (0, 1): point 0 prefers class 0, point 1 class 1.
						lik := sig(f0[0][a0]-f0[1][a1]) * sig(f1[1][a1*q+c1]-f1[0][a0*q+c0])
						z += w0 * ws[a1] * ws[c1] * lik
					}
				}
			}
		}
		exact := math.Log(z)
		t.Logf("b=%.3v ℓ=%.3v σ=%.3v: Laplace %.6f, by definition %.6f, exact %.6f (error %.2g), Ψ alone %.6f", b, math.Exp(h.LogEll), math.Exp(h.LogSigma), m.evidence, def, exact, m.evidence-exact, m.psi)
		if math.Abs(m.evidence-exact) > tc.tol {
			t.Errorf("Laplace evidence %v, exact %v", m.evidence, exact)
		}
		if tc.discriminates && math.Abs(m.psi-exact) < 5*tc.tol {
			t.Errorf("dropping −½ log|A| still matches (%v vs %v): the test cannot discriminate", m.psi, exact)
		}
	}
}

// minEigenvalue (inverse iteration on A's Cholesky factor) against a dense
// eigendecomposition of A.
func TestMinEigenvalue(t *testing.T) {
	p := smallProblem(t, 12, 3, 9)
	h := testHyper(3)
	h.LogB = []float64{math.Log(6), math.Log(9), math.Log(4)} // large scales: W indefinite
	m, err := p.findMode(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	N := p.n * p.l
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(N, p.negHessian(m.L, m.hess)), false) {
		t.Fatal("eigendecomposition failed")
	}
	vals := eig.Values(nil)
	t.Logf("λ_min(A): inverse iteration %.8f, dense %.8f (next %.4f)", m.minEig, vals[0], vals[1])
	if math.Abs(m.minEig-vals[0]) > 1e-5*vals[0] {
		t.Errorf("λ_min(A) = %v, dense eigenvalues give %v", m.minEig, vals[0])
	}
}
