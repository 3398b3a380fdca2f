package rmgpc

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpc-dev/gpc/datasets"
)

// The paper's §4.2 (Table 3): the Glass instances with P(z_i = 1 | y, X) >
// 0.5 when RMGPC is fitted to the whole standardised set, 1-based in UCI
// order, and the probabilities it reports; and the values of the digest's
// NumPy prototype at γ = 4.5 (../shared/docs/rmgpc-ep-hernandez-lobato2011.md,
// §8), with its evidence and ρ̂.
var (
	glassPaperOutliers = []int{3, 36, 127, 137, 152, 158, 188}
	glassPaperP        = []float64{0.69, 0.96, 0.82, 0.51, 0.86, 0.83, 1.00}
	glassPrototypeP    = []float64{0.70, 0.97, 0.82, 0.52, 0.87, 0.84, 1.00}
)

const (
	glassPrototypeLogZ = -225.876
	glassPrototypeRho  = 0.060
)

func loadGlass(tb testing.TB) *datasets.Dataset {
	tb.Helper()
	ds, err := datasets.LoadUCI("", "glass")
	if err != nil {
		tb.Skipf("Glass data not available: %v", err)
	}
	return ds
}

// flagged returns the 1-based rows with P(z_i = 1) > 0.5 and their
// probabilities.
func flagged(m *Model) ([]int, []float64) {
	var rows []int
	var ps []float64
	for i, p := range m.Outliers() {
		if p > 0.5 {
			rows = append(rows, i+1)
			ps = append(ps, p)
		}
	}
	return rows, ps
}

// TestGlassOutliersAtPrototypeGamma runs EP on the whole standardised Glass
// set at γ = 4.5 (no search) and compares with the digest's independent
// prototype: the same seven outliers, their probabilities to the two
// decimals it reports, its evidence, ρ̂ and its count of negative site
// precisions. The prototype used the authors' moment-matched Beta
// projection; the KL projection used here moves log Z by 2e-4.
func TestGlassOutliersAtPrototypeGamma(t *testing.T) {
	ds := loadGlass(t)
	start := time.Now()
	m, err := Fit(context.Background(), ds, Config{Lengthscale: 4.5, FixHyper: true, Tol: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	rows, ps := flagged(m)
	t.Logf("γ = 4.5: %v, %d sweeps, log Z %.4f, ρ̂ %.4f, %d negative site precisions; P(z=1) > 0.5 at %v = %.3f",
		time.Since(start), m.Post.Sweeps, m.LogZ(), m.Rho(), m.Post.Negative, rows, ps)
	if !slices.Equal(rows, glassPaperOutliers) {
		t.Fatalf("outliers %v, paper and prototype %v", rows, glassPaperOutliers)
	}
	for i, p := range ps {
		if math.Abs(p-glassPrototypeP[i]) > 0.006 {
			t.Errorf("row %d: P(z=1) = %.4f, prototype %.2f", rows[i], p, glassPrototypeP[i])
		}
	}
	if math.Abs(m.LogZ()-glassPrototypeLogZ) > 0.003 || math.Abs(m.Rho()-glassPrototypeRho) > 0.001 || m.Post.Negative != 34 {
		t.Errorf("log Z %.4f (prototype %.3f), ρ̂ %.4f (%.3f), %d negative sites (34)", m.LogZ(), glassPrototypeLogZ, m.Rho(), glassPrototypeRho, m.Post.Negative)
	}
}

// TestGlassFit is the paper's §4.2 experiment end to end: standardise the
// whole Glass set, maximise the evidence over γ from γ = 1, and list the
// instances with P(z_i = 1 | y, X) > 0.5. They must be the paper's seven,
// with the paper's probabilities to within 0.02 (it prints two decimals and
// its γ came from its own gradient ascent). The fit is timed: the authors'
// R code takes over 30 minutes.
func TestGlassFit(t *testing.T) {
	if testing.Short() {
		t.Skip("fits Glass (several seconds)")
	}
	ds := loadGlass(t)
	start := time.Now()
	m, err := Fit(context.Background(), ds, Config{})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	rows, ps := flagged(m)
	t.Logf("Glass fit in %v: %+v; γ = %.3f, log Z = %.4f, ρ̂ = %.4f; P(z=1) > 0.5 at %v = %.3f",
		elapsed, m.Fit, m.Hyper()["rmgpc/se/lengthscale"][0], m.LogZ(), m.Rho(), rows, ps)
	var match []int
	for _, r := range rows {
		if slices.Contains(glassPaperOutliers, r) {
			match = append(match, r)
		}
	}
	t.Logf("%d of the paper's %d outliers found: %v", len(match), len(glassPaperOutliers), match)
	if !slices.Equal(rows, glassPaperOutliers) {
		t.Fatalf("outliers %v, paper %v", rows, glassPaperOutliers)
	}
	for i, p := range ps {
		if math.Abs(p-glassPaperP[i]) > 0.02 {
			t.Errorf("row %d: P(z=1) = %.3f, paper %.2f", rows[i], p, glassPaperP[i])
		}
	}
	if g := m.Hyper()["rmgpc/se/lengthscale"][0]; g < 4 || g > 5.5 {
		t.Errorf("γ = %.3f; the prototype's evidence peaks at 4.5–4.7", g)
	}
	if m.Fit.Warning != "" || !m.Post.Converged {
		t.Errorf("fit warning %q, final EP converged %v", m.Fit.Warning, m.Post.Converged)
	}
	probs, err := m.Predict(ds.X, ds.N)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := 0; i < ds.N; i++ {
		var s float64
		for _, p := range probs[i*ds.C : (i+1)*ds.C] {
			s += p
		}
		worst = math.Max(worst, math.Abs(s-1))
	}
	t.Logf("training rows: worst |Σ_k P(k) − 1| = %.2g", worst)
	if worst > 1e-8 {
		t.Errorf("predictive rows sum to one only within %.3g", worst)
	}
}

// BenchmarkGlassFit times the Glass outlier experiment's fit (evidence
// maximisation from γ = 1 plus the final EP).
func BenchmarkGlassFit(b *testing.B) {
	ds := loadGlass(b)
	for b.Loop() {
		m, err := Fit(context.Background(), ds, Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(m.Fit.Sweeps), "sweeps/op")
		b.ReportMetric(float64(m.Fit.Evaluations), "evals/op")
	}
}
