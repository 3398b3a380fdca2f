package rmgpc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/kernels"
)

// synthData is n rows of three 2-D Gaussian clusters (s.d. 0.7, centres 3
// apart) with a fraction flip of the labels replaced by another class: a
// small problem with outliers.
func synthData(n int, flip float64, seed uint64) *datasets.Dataset {
	return synthDataSD(n, flip, 0.7, seed)
}

func synthDataSD(n int, flip, sd float64, seed uint64) *datasets.Dataset {
	r := rand.New(rand.NewPCG(seed, 3))
	centres := [][2]float64{{-1.5, 0}, {1.5, 0}, {0, 2}}
	ds := &datasets.Dataset{Name: "synth", N: n, D: 2, C: 3, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := 0; i < n; i++ {
		c := i % 3
		ds.X[2*i] = centres[c][0] + sd*r.NormFloat64()
		ds.X[2*i+1] = centres[c][1] + sd*r.NormFloat64()
		ds.Y[i] = c
		if r.Float64() < flip {
			ds.Y[i] = (c + 1 + r.IntN(2)) % 3
		}
	}
	return ds
}

// newTestFitter builds a model's evidence objective without fitting.
func newTestFitter(t *testing.T, ds *datasets.Dataset, cfg Config) *fitter {
	t.Helper()
	cfg = cfg.withDefaults()
	m := &Model{Config: cfg, D: ds.D, C: ds.C, N: ds.N, Y: ds.Y, X: append([]float64(nil), ds.X...)}
	if err := m.initParams(); err != nil {
		t.Fatal(err)
	}
	f, err := newFitter(m)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// matern52 is a kernel from layers/kernels other than the default, to show
// that the evidence gradient needs nothing kernel-specific.
func matern52(t *testing.T) kernels.Kernel {
	k, err := kernels.NewMatern("test/matern", 2.5, 2, 1.5, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEvidenceGradient checks the graph gradient of the evidence (the
// sites held fixed, eq. 18) against central finite differences of the
// converged evidence, for every learnt hyper-parameter: log γ and log σ²
// of the isotropic kernel, the ARD log γ_j, SMGPC's log ϑ_k², and a
// Matérn-5/2 ARD kernel's log γ_j and log σ². EP runs to
// 1e-10 at every point, warm-started, so the finite differences (step
// 1e-4, truncation error ~1e-9) measure the fixed point's evidence.
func TestEvidenceGradient(t *testing.T) {
	ds := synthData(36, 0.15, 5)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"RMGPC/iso+variance", Config{Lengthscale: 2, Variance: 1.5, FitVariance: true}},
		{"RMGPC/ARD", Config{ARD: true, Lengthscale: 1.3}},
		{"SMGPC/iso", Config{SMGPC: true, Lengthscale: 2, Noise: 0.3}},
		{"RMGPC/Matérn-5/2", Config{Kernel: matern52(t)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Tol, cfg.MaxSweeps = 1e-10, 20000
			f := newTestFitter(t, ds, cfg)
			x := f.pack()
			// Perturb the start so that ARD dimensions differ.
			for i := range x {
				x[i] += 0.1 * float64(i)
			}
			grad := make([]float64, len(x))
			if _, err := f.objective(x, grad); err != nil {
				t.Fatal(err)
			}
			p := f.m.Post
			t.Logf("EP: %d sweeps, converged %v, change %.2g, %d skipped, %d negative site precisions, log Z %.6f", p.Sweeps, p.Converged, p.Change, p.Skipped, p.Negative, p.LogZ)
			scratch := make([]float64, len(x))
			const h = 1e-4
			for i := range x {
				xp := append([]float64(nil), x...)
				xp[i] += h
				fp, err := f.objective(xp, scratch)
				if err != nil {
					t.Fatal(err)
				}
				xp[i] -= 2 * h
				fm, err := f.objective(xp, scratch)
				if err != nil {
					t.Fatal(err)
				}
				fd := (fp - fm) / (2 * h)
				rel := math.Abs(grad[i]-fd) / math.Max(math.Abs(fd), 1e-3)
				t.Logf("component %d: graph %.8f, finite differences %.8f, relative error %.2g", i, grad[i], fd, rel)
				if rel > 1e-4 {
					t.Errorf("component %d: graph gradient %.8f, finite differences %.8f (relative error %.2g)", i, grad[i], fd, rel)
				}
			}
			f.unpack(x)
		})
	}
}

// TestEvidenceStationary: at an EP fixed point log Z_EP (eqs. 16–17 with
// the general site normalisers) is stationary in every site parameter —
// the property the gradient of eq. (18) rests on, and a check of the
// evidence formula itself, since a wrong or missing term breaks it. With
// the authors' moment-matched Beta projection (MomentBeta) the z-prior
// sites' Beta parameters are not stationary, which is why the gradient is
// exact only with the default KL projection.
func TestEvidenceStationary(t *testing.T) {
	ds := synthData(36, 0.15, 5)
	for _, mb := range []bool{false, true} {
		cfg := Config{Lengthscale: 2, Tol: 1e-12, MaxSweeps: 20000, MomentBeta: mb}.withDefaults()
		f := newTestFitter(t, ds, cfg)
		post, err := f.ep()
		if err != nil {
			t.Fatal(err)
		}
		if post.Negative == 0 {
			t.Fatal("want negative site precisions in this test problem")
		}
		pr, err := f.prior()
		if err != nil {
			t.Fatal(err)
		}
		s := f.m.Sites
		eval := func() float64 {
			c := cfg
			c.MaxSweeps = 0
			p, err := runEP(pr, ds.Y, s, c)
			if err != nil {
				t.Fatal(err)
			}
			return p.LogZ
		}
		// Row 0 (label 0): its site against class 1 and its z-prior site;
		// row 5 (label 2) and its site against class 0.
		params := []struct {
			name string
			p    *float64
			beta bool
		}{
			{"ã_0", &s.A[0], true}, {"b̃_0", &s.B[0], true}, {"ã_5", &s.A[5], true},
			{"logit p̃_0", &s.LogitZ[0], false},
			{"logit p̃_01", &s.LogitK[1], false},
			{"τ̃_01", &s.TauK[1], false}, {"ν̃_01", &s.NuK[1], false},
			{"τ̃^y_01", &s.TauY[1], false}, {"ν̃^y_01", &s.NuY[1], false},
			{"τ̃_50", &s.TauK[15], false}, {"ν̃^y_50", &s.NuY[15], false},
		}
		var betaMax float64
		for _, q := range params {
			old := *q.p
			const h = 1e-5
			*q.p = old + h
			fp := eval()
			*q.p = old - h
			fm := eval()
			*q.p = old
			d := (fp - fm) / (2 * h)
			switch {
			case mb && q.beta:
				betaMax = math.Max(betaMax, math.Abs(d))
			case math.Abs(d) > 1e-6:
				t.Errorf("MomentBeta %v: ∂log Z/∂%s = %.3g at the fixed point, want 0", mb, q.name, d)
			}
		}
		if mb && betaMax < 1e-3 {
			t.Errorf("MomentBeta: largest ∂log Z/∂(Beta site) %.3g; moment matching should leave them non-stationary", betaMax)
		}
	}
}

// TestSMGPCLimit: as b0 → ∞ the prior on ρ collapses at 0 and RMGPC
// becomes SMGPC (with ϑ_k² → 0): the evidences and the predictions of the
// two code paths must converge, the gap shrinking with b0. The clusters are
// tight and the labels clean: where a row sits among another class the
// approach is much slower, since the limit model must explain it by the
// latents alone, which costs more than calling it an outlier until ρ is
// tiny.
func TestSMGPCLimit(t *testing.T) {
	ds := synthDataSD(30, 0, 0.4, 8)
	test := synthDataSD(20, 0, 0.4, 9)
	base := Config{Lengthscale: 1.5, FixHyper: true, Tol: 1e-8, MaxSweeps: 20000}
	sc := base
	sc.SMGPC, sc.Noise = true, 1e-12
	sm, err := Fit(context.Background(), ds, sc)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := sm.Predict(test.X, test.N)
	if err != nil {
		t.Fatal(err)
	}
	prevZ, prevP := math.Inf(1), math.Inf(1)
	for _, b0 := range []float64{1e1, 1e3, 1e5, 1e7} {
		rc := base
		rc.B0 = b0
		rm, err := Fit(context.Background(), ds, rc)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := rm.Predict(test.X, test.N)
		if err != nil {
			t.Fatal(err)
		}
		var dp float64
		for i := range pr {
			dp = math.Max(dp, math.Abs(pr[i]-ps[i]))
		}
		dz := math.Abs(rm.LogZ() - sm.LogZ())
		t.Logf("b0 = %g: log Z %.8f vs SMGPC %.8f (|Δ| %.2g), max |Δ prob| %.2g, ρ̂ %.2g (%d sweeps, %v)", b0, rm.LogZ(), sm.LogZ(), dz, dp, rm.Rho(), rm.Fit.Sweeps, rm.Fit.Runtime)
		if !(dz < prevZ && dp < prevP) {
			t.Errorf("b0 = %g: the gap to SMGPC did not shrink (log Z %.3g after %.3g, prob %.3g after %.3g)", b0, dz, prevZ, dp, prevP)
		}
		prevZ, prevP = dz, dp
	}
	if prevZ > 1e-4 || prevP > 1e-5 {
		t.Errorf("b0 = 1e7: |Δ log Z| = %.3g, |Δ prob| = %.3g; want below 1e-4 and 1e-5", prevZ, prevP)
	}
}

// TestQuadrature: the predictive integrals of all classes sum to one
// without renormalisation, on random means and variances whose ratios
// reach 10⁴ (beyond Gauss–Hermite's comfort, where the composite rule takes
// over), and the two rules agree where both apply.
func TestQuadrature(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	h := newHermite(96)
	var worstSum, worstAgree float64
	for trial := 0; trial < 600; trial++ {
		l := 2 + r.IntN(5)
		ratio := []float64{3, 30, 1e4}[trial%3]
		m, v := make([]float64, l), make([]float64, l)
		for k := range m {
			m[k] = 2 * r.NormFloat64()
			v[k] = math.Exp(r.Float64() * math.Log(ratio))
		}
		var sum float64
		for k := range m {
			p := h.argmaxProb(k, m, v)
			if p < -1e-12 || p > 1+1e-12 {
				t.Fatalf("probability %g outside [0, 1]", p)
			}
			sum += p
			if ratio <= hermiteRatio {
				f := h.integrand(k, m, v)
				worstAgree = math.Max(worstAgree, math.Abs(h.gaussHermite(k, m, v, f)-h.composite(k, m, v, f)))
			}
		}
		worstSum = math.Max(worstSum, math.Abs(sum-1))
	}
	t.Logf("worst |Σ_k P(k) − 1| = %.2g; worst |Gauss–Hermite − composite| = %.2g", worstSum, worstAgree)
	if worstSum > 1e-8 || worstAgree > 1e-8 {
		t.Errorf("quadrature: worst |sum − 1| %.3g, worst disagreement %.3g; want below 1e-8", worstSum, worstAgree)
	}
}

// TestFitPredictSaveLoad fits RMGPC on clusters with 15% flipped labels and
// checks the fitted model's outputs: predictive rows sum to one (to 1e-8,
// no renormalisation), probabilities and outlier posteriors lie in [0, 1],
// the flipped rows are the likelier outliers, the predictive latent at a
// training input is EP's marginal there, clean test points are classified
// well, and a saved and loaded model predicts identically.
func TestFitPredictSaveLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	clean := synthData(60, 0, 21)
	ds := clean.Clone()
	flipped := map[int]bool{}
	for i := range ds.Y {
		if r.Float64() < 0.15 {
			ds.Y[i] = (ds.Y[i] + 1 + r.IntN(2)) % 3
			flipped[i] = true
		}
	}
	m, err := Fit(context.Background(), ds, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit: %+v; γ %v; log Z %.4f; ρ̂ %.3f; EP %d sweeps, converged %v", m.Fit, m.Hyper(), m.LogZ(), m.Rho(), m.Post.Sweeps, m.Post.Converged)
	if m.Fit.Warning != "" || !m.Post.Converged {
		t.Errorf("fit warning %q, EP converged %v", m.Fit.Warning, m.Post.Converged)
	}
	test := synthData(300, 0, 22)
	probs, err := m.Predict(test.X, test.N)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	correct := 0
	for i := 0; i < test.N; i++ {
		row := probs[i*3 : i*3+3]
		var s float64
		best := 0
		for k, p := range row {
			if !(p >= 0 && p <= 1) {
				t.Fatalf("row %d: probability %g", i, p)
			}
			s += p
			if p > row[best] {
				best = k
			}
		}
		worst = math.Max(worst, math.Abs(s-1))
		if best == test.Y[i] {
			correct++
		}
	}
	acc := float64(correct) / float64(test.N)
	t.Logf("worst |row sum − 1| = %.2g; test accuracy %.3f", worst, acc)
	if worst > 1e-8 {
		t.Errorf("rows sum to one only within %.3g", worst)
	}
	if acc < 0.85 {
		t.Errorf("test accuracy %.3f", acc)
	}
	out := m.Outliers()
	var inF, inC float64
	for i, p := range out {
		if !(p >= 0 && p <= 1) {
			t.Fatalf("outlier posterior %g of row %d", p, i)
		}
		if flipped[i] {
			inF += p / float64(len(flipped))
		} else {
			inC += p / float64(ds.N-len(flipped))
		}
	}
	t.Logf("mean P(z=1): flipped rows %.3f, others %.3f", inF, inC)
	if !(inF > 3*inC) {
		t.Errorf("mean outlier posterior of flipped rows %.3f vs others %.3f", inF, inC)
	}
	// The predictive latent at a training input x_i: the jitter j is
	// latent noise, independent between a training and a test evaluation
	// at the same x, so the mean is k⋆ᵀK⁻¹μ with k⋆ = K e_i − j e_i, i.e.
	// μ_i − j (K⁻¹μ)_i, and the variance is Σ_ii up to O(j).
	mean, vari, err := m.Latent(ds.X, ds.N)
	if err != nil {
		t.Fatal(err)
	}
	j := m.Config.Jitter
	for k := range mean {
		alpha := m.Post.classes[k].alphaOf(m.N, m.Post.prior.L[k])
		for i := range mean[k] {
			want := m.Post.Mean[k][i] - j*alpha[i]
			if math.Abs(mean[k][i]-want) > 1e-8*(1+math.Abs(want)) || math.Abs(vari[k][i]-m.Post.Var[k][i]) > 3*j {
				t.Fatalf("class %d row %d: predictive N(%g, %g), want mean %g and variance %g ± %g", k, i, mean[k][i], vari[k][i], want, m.Post.Var[k][i], 3*j)
			}
		}
	}
	// Save and load.
	path := filepath.Join(t.TempDir(), "model.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	probs2, err := m2.Predict(test.X, test.N)
	if err != nil {
		t.Fatal(err)
	}
	for i := range probs {
		if math.Abs(probs[i]-probs2[i]) > 1e-12 {
			t.Fatalf("loaded model: probability %d is %.15g, was %.15g", i, probs2[i], probs[i])
		}
	}
	out2 := m2.Outliers()
	for i := range out {
		if math.Abs(out[i]-out2[i]) > 1e-12 {
			t.Fatalf("loaded model: outlier %d is %g, was %g", i, out2[i], out[i])
		}
	}
	if math.Abs(m2.LogZ()-m.LogZ()) > 1e-9 {
		t.Errorf("loaded model: log Z %.10f, was %.10f", m2.LogZ(), m.LogZ())
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// TestSMGPCFit: the baseline learns γ and one ϑ_k² per class, predicts
// rows summing to one, and reports no outliers.
func TestSMGPCFit(t *testing.T) {
	ds := synthData(45, 0.1, 31)
	m, err := Fit(context.Background(), ds, Config{SMGPC: true})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Hyper()
	t.Logf("SMGPC fit %+v, hyper %v, log Z %.4f", m.Fit, h, m.LogZ())
	for k := 0; k < 3; k++ {
		if v := h[fmt.Sprintf("rmgpc/noise%d", k)]; len(v) != 1 || v[0] == 1 {
			t.Errorf("class %d noise %v not learnt", k, v)
		}
	}
	for _, p := range m.Outliers() {
		if p != 0 {
			t.Fatal("SMGPC reported an outlier probability")
		}
	}
	probs, err := m.Predict(ds.X, ds.N)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < ds.N; i++ {
		if s := probs[3*i] + probs[3*i+1] + probs[3*i+2]; math.Abs(s-1) > 1e-8 {
			t.Fatalf("row %d sums to %.12g", i, s)
		}
	}
}

// TestWarmStart: EP restarted from converged sites stops after one sweep
// with the same evidence — what makes the hyper-parameter search cheap.
func TestWarmStart(t *testing.T) {
	ks := tinyProblem(3, []float64{-1, 0, 1.2, 2})
	y := []int{0, 1, 0, 2}
	cfg := Config{Tol: 1e-9, MaxSweeps: 5000}
	s := NewSites(4, 3, cfg)
	p1, err := EP(ks, y, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := EP(ks, y, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Sweeps != 1 || math.Abs(p2.LogZ-p1.LogZ) > 1e-8 {
		t.Errorf("warm start: %d sweeps (first run %d), log Z %.10f vs %.10f", p2.Sweeps, p1.Sweeps, p2.LogZ, p1.LogZ)
	}
}

// TestInputErrors: malformed data and configurations are rejected.
func TestInputErrors(t *testing.T) {
	ds := synthData(12, 0, 1)
	bad := ds.Clone()
	bad.Y[3] = 3
	if _, err := Fit(context.Background(), bad, Config{FixHyper: true}); err == nil {
		t.Error("label 3 of a 3-class set accepted")
	}
	if _, err := Fit(context.Background(), ds, Config{Damping: 1.5}); err == nil {
		t.Error("damping 1.5 accepted")
	}
	one := ds.Clone()
	one.C = 1
	if _, err := Fit(context.Background(), one, Config{}); err == nil {
		t.Error("one class accepted")
	}
	m, err := Fit(context.Background(), ds, Config{FixHyper: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Predict([]float64{1, 2, 3}, 2); err == nil {
		t.Error("3 values for 2 rows of 2 inputs accepted")
	}
	if _, err := m.Predict([]float64{math.NaN(), 0}, 1); err == nil {
		t.Error("NaN input accepted")
	}
}

// TestFitStopsOnUnconvergedEP checks that a hyper-parameter search whose EP
// keeps running out of sweeps stops at its best point with a warning after
// maxUnconverged such evaluations, instead of paying MaxSweeps sweeps at
// every L-BFGS evaluation until MaxIterations.
func TestFitStopsOnUnconvergedEP(t *testing.T) {
	ds := synthData(36, 0.15, 5)
	m, err := Fit(context.Background(), ds, Config{Tol: 1e-14, MaxSweeps: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Fit.Warning, "not converged") {
		t.Errorf("warning %q does not say EP did not converge", m.Fit.Warning)
	}
	// maxUnconverged evaluations in the search plus the final EP.
	if m.Fit.Evaluations > maxUnconverged+1 {
		t.Errorf("%d evidence evaluations; want at most %d", m.Fit.Evaluations, maxUnconverged+1)
	}
	p, err := m.Predict(ds.X[:3*ds.D], 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var sum float64
		for k := 0; k < ds.C; k++ {
			sum += p[i*ds.C+k]
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("row %d sums to %v", i, sum)
		}
	}
}
