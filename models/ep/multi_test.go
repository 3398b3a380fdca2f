package ep

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/layers/likelihoods"
)

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normPDF(x, m, v float64) float64 {
	return math.Exp(-(x-m)*(x-m)/(2*v)) / math.Sqrt(2*math.Pi*v)
}

// integrate is ∫ N(u | m, v) g(u) du by a 4000-node Gauss–Legendre rule on
// m ± 14√v: the integrands here are smooth on the scale of the narrowest
// variance, so this is exact to ~1e-13.
func integrate(m, v float64, g func(u float64) float64) float64 {
	s := math.Sqrt(v)
	return quad.Fixed(func(u float64) float64 { return normPDF(u, m, v) * g(u) }, m-14*s, m+14*s, 4000, quad.Legendre{}, 0)
}

func robustLik(b0 float64) *likelihoods.RobustMaxRho {
	return likelihoods.NewRobustMaxRho(true, [2]float64{1, b0}, 20)
}

func argmaxLik() *likelihoods.RobustMaxRho {
	return likelihoods.NewRobustMaxRho(false, [2]float64{}, 20)
}

func runMulti(t *testing.T, ks []*mat.SymDense, y []int, lik MultiTilted, cfg MultiConfig) (*MultiResult, *MultiLayout, *MultiSites) {
	t.Helper()
	pr, err := NewMultiPrior(ks)
	if err != nil {
		t.Fatal(err)
	}
	ly, err := NewMultiLayout(lik, y, len(ks))
	if err != nil {
		t.Fatal(err)
	}
	s := ly.NewSites()
	res, err := RunMulti(context.Background(), pr, ly, lik, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, ly, s
}

// TestMultiTiltedMoments checks the robust-max site's normaliser, matched
// moments and tilted P(z=1) — the core of EP — against numerical
// integration of the tilted distribution (1−z)·Θ(f_y − f_k) N(f_y) N(f_k)
// Bern(z | p) + z·O·(…), to 1e-8, through the site update RunMulti makes
// from them (tilted mean m + v·g, variance v − v²·c). It covers a
// well-classified cavity, an apparently mislabelled one (whose tilted
// variance exceeds the cavity's: c < 0), a near-zero p, and ρ ≡ 0.
func TestMultiTiltedMoments(t *testing.T) {
	l := 3
	O := math.Exp(-math.Log(float64(l)) / float64(l-1))
	cases := []struct {
		my, vy, mk, vk, p float64
		robust            bool
	}{
		{0.3, 0.8, -0.2, 1.5, 0.1, true},
		{-2, 0.5, 1.5, 0.7, 0.2, true},
		{-1, 2, 0.4, 0.3, 1e-6, true},
		{0.5, 1, 0, 2, 0, false},
		{-3, 0.4, 1.6, 0.6, 0, false},
	}
	for ci, c := range cases {
		lik, lpc := argmaxLik(), math.Inf(-1)
		if c.robust {
			lik, lpc = robustLik(9), math.Log(c.p)-math.Log1p(-c.p)
		}
		g, cv := make([]float64, 2), make([]float64, 2)
		logZ, logitSite := lik.MultiTiltedMoments(l, []float64{c.mk, c.my}, []float64{c.vk, c.vy}, lpc, g, cv)
		thY := func(r float64) float64 {
			return integrate(c.my, c.vy, func(u float64) float64 { return math.Pow(u, r) * normCDF((u-c.mk)/math.Sqrt(c.vk)) })
		}
		thK := func(r float64) float64 {
			return integrate(c.mk, c.vk, func(u float64) float64 { return math.Pow(u, r) * normCDF((c.my-u)/math.Sqrt(c.vy)) })
		}
		q, po := 1-c.p, c.p*O
		if !c.robust {
			q, po = 1, 0
		}
		Z := q*thY(0) + po
		ey := (q*thY(1) + po*c.my) / Z
		ey2 := (q*thY(2) + po*(c.vy+c.my*c.my)) / Z
		ek := (q*thK(1) + po*c.mk) / Z
		ek2 := (q*thK(2) + po*(c.vk+c.mk*c.mk)) / Z
		check := func(name string, got, want, tol float64) {
			t.Helper()
			if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
				t.Errorf("case %d: %s = %.12g, numerical integration %.12g", ci, name, got, want)
			}
		}
		check("log Z", logZ, math.Log(Z), 1e-9)
		check("E[f_y]", c.my+c.vy*g[1], ey, 1e-8)
		check("E[f_k]", c.mk+c.vk*g[0], ek, 1e-8)
		check("Var[f_y]", c.vy-c.vy*c.vy*cv[1], ey2-ey*ey, 1e-8)
		check("Var[f_k]", c.vk-c.vk*c.vk*cv[0], ek2-ek*ek, 1e-8)
		if c.robust {
			// The site's Bernoulli part times the cavity's is the tilted
			// P(z = 1).
			pNew := 1 / (1 + math.Exp(-(lpc + logitSite)))
			check("P(z=1)", pNew, po/Z, 1e-9)
		}
		if ci == 1 && !(cv[0] < 0) {
			t.Errorf("case 1: c = %g, want negative (tilted variance above the cavity's)", cv[0])
		}
	}
}

// TestMultiOneSiteExact: with one row and two classes the argmax
// likelihood has a single site, on which EP is exact: its marginals must be
// the true posterior marginals of f_0(x) and f_1(x) under Θ(f_y − f_k) and
// its evidence log Φ((m_y − m_k)/√(v_y + v_k)) with the prior as cavity.
// This checks the site division, the posterior assembly and the evidence
// formula end to end.
func TestMultiOneSiteExact(t *testing.T) {
	k0 := mat.NewSymDense(1, []float64{1.7})
	k1 := mat.NewSymDense(1, []float64{0.6})
	post, _, _ := runMulti(t, []*mat.SymDense{k0, k1}, []int{1}, argmaxLik(), MultiConfig{Damping: 1, Tol: 1e-12, MaxSweeps: 50, Acceleration: -1})
	Z := 0.5
	e1 := integrate(0, 0.6, func(u float64) float64 { return u * normCDF(u/math.Sqrt(1.7)) }) / Z
	e11 := integrate(0, 0.6, func(u float64) float64 { return u * u * normCDF(u/math.Sqrt(1.7)) }) / Z
	e0 := integrate(0, 1.7, func(u float64) float64 { return u * normCDF(-u/math.Sqrt(0.6)) }) / Z
	e00 := integrate(0, 1.7, func(u float64) float64 { return u * u * normCDF(-u/math.Sqrt(0.6)) }) / Z
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"log Z", post.LogZ, math.Log(Z)},
		{"mean f_1", post.Mean[1][0], e1},
		{"var f_1", post.Var[1][0], e11 - e1*e1},
		{"mean f_0", post.Mean[0][0], e0},
		{"var f_0", post.Var[0][0], e00 - e0*e0},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %.12g, exact %.12g", c.name, c.got, c.want)
		}
	}
}

// sharedSE is the SE kernel of length-scale ell plus jitter 1e-3 on the
// rows of x (n×d), shared by l classes.
func sharedSE(l int, x []float64, d int, ell float64) []*mat.SymDense {
	n := len(x) / d
	K := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			var d2 float64
			for a := 0; a < d; a++ {
				u := x[i*d+a] - x[j*d+a]
				d2 += u * u
			}
			v := math.Exp(-d2 / (2 * ell))
			if i == j {
				v += 1e-3
			}
			K.SetSym(i, j, v)
		}
	}
	ks := make([]*mat.SymDense, l)
	for k := range ks {
		ks[k] = K
	}
	return ks
}

// bruteForce integrates the exact model by Monte Carlo over the GP prior
// (importance sampling with the prior as proposal), marginalising z and ρ
// in closed form for each draw: given the set I of misclassified rows,
// P(y, z | f) is non-zero only for z ⊇ I and then
// l^−|z| B(a0 + |z|, b0 + n − |z|)/B(a0, b0). It returns log P(y | X), the
// posterior means and variances of f_k(x_i) and P(z_i = 1 | y, X).
func bruteForce(ks []*mat.SymDense, y []int, a0, b0 float64, robust bool, draws int, seed uint64) (logZ float64, mean, vari [][]float64, pz []float64) {
	l, n := len(ks), len(y)
	var ch mat.Cholesky
	ch.Factorize(ks[0])
	var L mat.TriDense
	ch.LTo(&L)
	r := rand.New(rand.NewPCG(seed, 7))
	nz := 1 << n
	weight := make([]float64, nz)
	for mask := range weight {
		c := 0
		for i := 0; i < n; i++ {
			c += mask >> i & 1
		}
		weight[mask] = math.Exp(-float64(c)*math.Log(float64(l)) + lbeta(a0+float64(c), b0+float64(n-c)) - lbeta(a0, b0))
	}
	var W float64
	wf, wf2 := make([][]float64, l), make([][]float64, l)
	f := make([][]float64, l)
	for k := range wf {
		wf[k], wf2[k], f[k] = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	wz, e := make([]float64, n), make([]float64, n)
	for d := 0; d < draws; d++ {
		for k := 0; k < l; k++ {
			for i := range e {
				e[i] = r.NormFloat64()
			}
			for i := 0; i < n; i++ {
				var v float64
				for j := 0; j <= i; j++ {
					v += L.At(i, j) * e[j]
				}
				f[k][i] = v
			}
		}
		wrong := 0
		for i, yi := range y {
			for k := 0; k < l; k++ {
				if k != yi && f[k][i] > f[yi][i] {
					wrong |= 1 << i
				}
			}
		}
		var w float64
		switch {
		case !robust && wrong == 0:
			w = 1
		case robust:
			for mask := 0; mask < nz; mask++ {
				if mask&wrong != wrong {
					continue
				}
				w += weight[mask]
				for i := 0; i < n; i++ {
					if mask>>i&1 == 1 {
						wz[i] += weight[mask]
					}
				}
			}
		}
		W += w
		for k := 0; k < l; k++ {
			for i := 0; i < n; i++ {
				wf[k][i] += w * f[k][i]
				wf2[k][i] += w * f[k][i] * f[k][i]
			}
		}
	}
	mean, vari = make([][]float64, l), make([][]float64, l)
	for k := 0; k < l; k++ {
		mean[k], vari[k] = make([]float64, n), make([]float64, n)
		for i := 0; i < n; i++ {
			mean[k][i] = wf[k][i] / W
			vari[k][i] = wf2[k][i]/W - mean[k][i]*mean[k][i]
		}
	}
	pz = make([]float64, n)
	for i := range pz {
		pz[i] = wz[i] / W
	}
	return math.Log(W / float64(draws)), mean, vari, pz
}

// TestMultiBruteForce compares converged EP with the exact model on n = 3
// rows, integrated by 4·10⁵ Monte Carlo draws from the prior. EP is an
// approximation, so the tolerances are EP's accuracy on each problem (as
// measured by models/rmgpc, where this test came from): with two classes
// and rows far apart each row has one site and EP is accurate to a few
// thousandths; with three classes and coupled rows the family's
// factorisation over classes and between f and z costs tenths in log Z,
// which that case's tolerances allow while still catching a wrong sign or
// a lost site.
func TestMultiBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		l                      int
		x                      []float64
		y                      []int
		robust                 bool
		tolZ, tolM, tolS, tolP float64
	}{
		{"separated/robust/l=2", 2, []float64{-2, 0, 2.5}, []int{0, 1, 0}, true, 0.015, 0.02, 0.03, 0.01},
		{"separated/argmax/l=2", 2, []float64{-2, 0, 2.5}, []int{0, 1, 0}, false, 0.015, 0.02, 0.03, 0},
		{"coupled/robust/l=3", 3, []float64{-1, 0, 1.2}, []int{0, 1, 0}, true, 0.3, 0.12, 0.15, 0.04},
		{"coupled/argmax/l=3", 3, []float64{-1, 0, 1.2}, []int{0, 1, 0}, false, 0.3, 0.12, 0.15, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := sharedSE(tc.l, tc.x, 1, 1)
			lik := argmaxLik()
			if tc.robust {
				lik = robustLik(9)
			}
			post, _, _ := runMulti(t, ks, tc.y, lik, MultiConfig{Tol: 1e-10, MaxSweeps: 5000})
			logZ, mean, vari, pz := bruteForce(ks, tc.y, 1, 9, tc.robust, 400_000, 11)
			var dm, ds, dp float64
			for k := range mean {
				for i := range mean[k] {
					dm = math.Max(dm, math.Abs(post.Mean[k][i]-mean[k][i]))
					ds = math.Max(ds, math.Abs(math.Sqrt(post.Var[k][i])/math.Sqrt(vari[k][i])-1))
				}
			}
			if tc.robust {
				for i, p := range post.Outliers(3) {
					dp = math.Max(dp, math.Abs(p-pz[i]))
				}
			}
			t.Logf("log Z: EP %.4f, exact %.4f; max |Δ mean| %.4f, max |Δ sd|/sd %.4f, max |Δ p| %.4f", post.LogZ, logZ, dm, ds, dp)
			if d := math.Abs(post.LogZ - logZ); d > tc.tolZ {
				t.Errorf("log Z: EP %.4f, exact %.4f (tolerance %g)", post.LogZ, logZ, tc.tolZ)
			}
			if dm > tc.tolM || ds > tc.tolS || dp > tc.tolP {
				t.Errorf("EP moments off: max |Δ mean| %.4f (tol %g), |Δ sd|/sd %.4f (%g), |Δ p| %.4f (%g)", dm, tc.tolM, ds, tc.tolS, dp, tc.tolP)
			}
		})
	}
}

// synth is n rows of three 2-D Gaussian clusters (s.d. sd, centres 3
// apart) with a fraction flip of the labels replaced by another class.
func synth(n int, flip, sd float64, seed uint64) ([]float64, []int) {
	r := rand.New(rand.NewPCG(seed, 3))
	centres := [][2]float64{{-1.5, 0}, {1.5, 0}, {0, 2}}
	x, y := make([]float64, 2*n), make([]int, n)
	for i := 0; i < n; i++ {
		c := i % 3
		x[2*i] = centres[c][0] + sd*r.NormFloat64()
		x[2*i+1] = centres[c][1] + sd*r.NormFloat64()
		y[i] = c
		if r.Float64() < flip {
			y[i] = (c + 1 + r.IntN(2)) % 3
		}
	}
	return x, y
}

// TestMultiEvidenceStationary: at an EP fixed point log Z_EP (with the
// general site normalisers) is stationary in every site parameter — the
// property the evidence gradient rests on, and a check of the evidence
// formula itself, since a wrong or missing term breaks it. With the
// authors' moment-matched Beta projection (MomentBeta) the z-prior sites'
// Beta parameters are not stationary, which is why the gradient is exact
// only with the default KL projection.
func TestMultiEvidenceStationary(t *testing.T) {
	x, y := synth(36, 0.15, 0.7, 5)
	ks := sharedSE(3, x, 2, 2)
	lik := robustLik(9)
	for _, mb := range []bool{false, true} {
		cfg := MultiConfig{Tol: 1e-12, MaxSweeps: 20000, MomentBeta: mb}
		post, ly, s := runMulti(t, ks, y, lik, cfg)
		if post.Negative == 0 {
			t.Fatal("want negative site precisions in this test problem")
		}
		pr, _ := NewMultiPrior(ks)
		eval := func() float64 {
			c := cfg
			c.MaxSweeps = -1
			p, err := RunMulti(context.Background(), pr, ly, lik, s, c)
			if err != nil {
				t.Fatal(err)
			}
			return p.LogZ
		}
		// Row 0's first site and its z-prior site; row 5's first site.
		j0, j5 := ly.Row[0], ly.Row[5]
		e0, e5 := ly.Entry[j0], ly.Entry[j5]
		params := []struct {
			name string
			p    *float64
			beta bool
		}{
			{"ã_0", &s.A[0], true}, {"b̃_0", &s.B[0], true}, {"ã_5", &s.A[5], true},
			{"logit p̃_0", &s.LogitZ[0], false},
			{"logit p̃_0,site", &s.Logit[j0], false},
			{"τ̃_0,k", &s.Tau[e0], false}, {"ν̃_0,k", &s.Nu[e0], false},
			{"τ̃_0,y", &s.Tau[e0+1], false}, {"ν̃_0,y", &s.Nu[e0+1], false},
			{"τ̃_5,k", &s.Tau[e5], false}, {"ν̃_5,y", &s.Nu[e5+1], false},
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

// TestMultiArgmaxLimit: as b0 → ∞ the prior on ρ collapses at 0 and the
// robust likelihood becomes its ρ ≡ 0 limit, the argmax likelihood: the
// evidences and the latent posteriors of the two must converge, the gap
// shrinking with b0. (The binary limit — C = 2 and ρ = 0 against binary
// probit EP on f_1 − f_0 — does not hold: the multi-latent family
// factorises over the classes, so it cannot carry the posterior
// correlation of f_0 and f_1 that binary EP on their difference keeps.)
func TestMultiArgmaxLimit(t *testing.T) {
	x, y := synth(30, 0, 0.4, 8)
	ks := sharedSE(3, x, 2, 1.5)
	cfg := MultiConfig{Tol: 1e-8, MaxSweeps: 20000}
	ref, _, _ := runMulti(t, ks, y, argmaxLik(), cfg)
	prevZ, prevM := math.Inf(1), math.Inf(1)
	for _, b0 := range []float64{1e1, 1e3, 1e5, 1e7} {
		post, _, _ := runMulti(t, ks, y, robustLik(b0), cfg)
		var dm float64
		for k := range post.Mean {
			for i := range post.Mean[k] {
				dm = math.Max(dm, math.Abs(post.Mean[k][i]-ref.Mean[k][i]))
			}
		}
		dz := math.Abs(post.LogZ - ref.LogZ)
		t.Logf("b0 = %g: log Z %.8f vs argmax %.8f (|Δ| %.2g), max |Δ mean| %.2g, ρ̂ %.2g", b0, post.LogZ, ref.LogZ, dz, dm, post.Rho())
		if !(dz < prevZ && dm < prevM) {
			t.Errorf("b0 = %g: the gap did not shrink (log Z %.3g after %.3g, mean %.3g after %.3g)", b0, dz, prevZ, dm, prevM)
		}
		prevZ, prevM = dz, dm
	}
	if prevZ > 1e-4 || prevM > 1e-4 {
		t.Errorf("b0 = 1e7: |Δ log Z| = %.3g, |Δ mean| = %.3g; want below 1e-4", prevZ, prevM)
	}
}

// TestMultiCancel: a cancelled context stops EP before its first sweep.
func TestMultiCancel(t *testing.T) {
	x, y := synth(30, 0.1, 0.7, 8)
	ks := sharedSE(3, x, 2, 1.5)
	pr, _ := NewMultiPrior(ks)
	lik := robustLik(9)
	ly, _ := NewMultiLayout(lik, y, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunMulti(ctx, pr, ly, lik, ly.NewSites(), MultiConfig{}); err != context.Canceled {
		t.Fatalf("RunMulti on a cancelled context: %v", err)
	}
}
