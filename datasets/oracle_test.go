package datasets

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func oracleProblem(t *testing.T, n, d int, seed uint64) (*Dataset, *SyntheticOracle) {
	t.Helper()
	ds, o, err := SyntheticProblem(n, d, 3, seed, SyntheticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o == nil {
		t.Fatal("no oracle")
	}
	return ds, o
}

// The oracle's functions pass through the draw: the posterior mean at a
// sampled input is the sampled value, up to the sampler's jitter times the
// weight (jitter ≤ 1e-6 here, weights ~1e3).
func TestOracleInterpolatesTheDraw(t *testing.T) {
	for _, d := range []int{1, 2, 3} {
		ds, o := oracleProblem(t, 300, d, 11)
		f, _, _, err := sampleGP(context.Background(), ds.X, ds.N, d, 0.5, 2, 0, 3, newRand(11, streamSynthF))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float64, 3)
		worst := 0.0
		for i := range ds.N {
			if err := o.Latent(ds.X[i*d:(i+1)*d], got); err != nil {
				t.Fatal(err)
			}
			for c := range got {
				worst = max(worst, math.Abs(got[c]-f[c][i]))
			}
			if l := argmaxOf(got); l != ds.Y[i] {
				t.Errorf("d=%d row %d: oracle label %d, generator's %d (f = %v)", d, i, l, ds.Y[i], got)
			}
		}
		if worst > 1e-3 {
			t.Errorf("d=%d: oracle's latent values differ from the draw by up to %g", d, worst)
		}
	}
}

// Without noise the Bayes classifier is the labelling rule: one-hot, right.
func TestOracleNoiselessIsTheLabel(t *testing.T) {
	for _, d := range []int{1, 2, 3} {
		ds, o := oracleProblem(t, 200, d, 5)
		p, err := o.BayesPredictive(ds, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ds.N {
			if p[i*3+ds.Y[i]] != 1 {
				t.Fatalf("d=%d row %d: p = %v, label %d", d, i, p[i*3:i*3+3], ds.Y[i])
			}
		}
	}
}

// The cell sum (D ≤ 2) and the Monte Carlo estimate (used for D > 2)
// compute the same posterior masses: they agree within the draws' error.
func TestOracleCellsAgreeWithMonteCarlo(t *testing.T) {
	for _, d := range []int{1, 2} {
		_, o := oracleProblem(t, 300, d, 21)
		r := rand.New(rand.NewPCG(1, 2))
		grid, mc := make([]float64, 3), make([]float64, 3)
		for trial := range 15 {
			xt := make([]float64, d)
			for j := range xt {
				xt[j] = 3 * (2*r.Float64() - 1) // some outside the box
			}
			v := []float64{0.1, 0.25, 0.5}[trial%3]
			if !o.gridProbs(xt, math.Sqrt(v), grid) || !o.sampleProbs(xt, math.Sqrt(v), mc, r) {
				t.Fatalf("d=%d x̃=%v: no posterior mass", d, xt)
			}
			for c := range grid {
				tol := 4*math.Sqrt(grid[c]*(1-grid[c])/oracleSamples) + 0.006
				if math.Abs(grid[c]-mc[c]) > tol {
					t.Errorf("d=%d x̃=%v V=%v: cells %v, Monte Carlo %v", d, xt, v, grid, mc)
					break
				}
			}
		}
	}
}

// Halving the cells moves the Bayes error and NLL of a 1 000-point noisy
// test set by less than 0.002: the cells are fine enough.
func TestOracleCellsConverge(t *testing.T) {
	score := func() (e, nll float64) {
		// A new oracle labels its cells at the current oracleCells.
		sp, err := SyntheticSplitProblem(500, 1000, 2, 3, 0.25, 31, SyntheticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := sp.Oracle.BayesPredictive(sp.Test, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		return bayesScores(p, sp.Test.Y, 3)
	}
	e1, n1 := score()
	defer func(c int) { oracleCells = c }(oracleCells)
	oracleCells *= 2
	e2, n2 := score()
	t.Logf("200 cells: error %.4f nll %.4f; 400 cells: error %.4f nll %.4f", e1, n1, e2, n2)
	if math.Abs(e1-e2) > 0.002 || math.Abs(n1-n2) > 0.002 {
		t.Errorf("cells halved: error %.4f → %.4f, nll %.4f → %.4f", e1, e2, n1, n2)
	}
}

// The Bayes predictive is calibrated: on inputs drawn from the problem's
// own generative process, sharpening or flattening it (p^τ renormalised)
// never lowers the average negative log-likelihood. A posterior computed
// with the wrong noise (a standard deviation used as a variance, say) or
// the wrong box fails this.
func TestOracleIsCalibrated(t *testing.T) {
	for _, v := range []float64{0.1, 0.5} {
		_, o := oracleProblem(t, 400, 2, 41)
		r := rand.New(rand.NewPCG(7, 8))
		const n = 4000
		ds := &Dataset{N: n, D: 2, C: 3, X: make([]float64, 2*n), Y: make([]int, n)}
		for i := range n {
			x := []float64{2.5 * (2*r.Float64() - 1), 2.5 * (2*r.Float64() - 1)}
			ds.Y[i] = o.label(x)
			for j := range x {
				ds.X[2*i+j] = x[j] + math.Sqrt(v)*r.NormFloat64()
			}
		}
		p, err := o.BayesPredictive(ds, v)
		if err != nil {
			t.Fatal(err)
		}
		nll := func(tau float64) float64 {
			var s float64
			for i := range n {
				var z float64
				for c := range 3 {
					z += math.Pow(p[i*3+c], tau)
				}
				s -= math.Log(math.Max(math.Pow(p[i*3+ds.Y[i]], tau)/z, 1e-300))
			}
			return s / n
		}
		base := nll(1)
		for _, tau := range []float64{0.8, 1.25} {
			if alt := nll(tau); alt < base {
				t.Errorf("V=%v: p^%v has nll %.4f below the Bayes predictive's %.4f", v, tau, alt, base)
			}
		}
		// A posterior with the wrong noise is worse than the right one.
		wrong, err := o.BayesPredictive(ds, math.Sqrt(v))
		if err != nil {
			t.Fatal(err)
		}
		if _, w := bayesScores(wrong, ds.Y, 3); w <= base {
			t.Errorf("V=%v: the posterior for V=%v scores %.4f, not above the right one's %.4f", v, math.Sqrt(v), w, base)
		}
	}
}

func TestOracleRejectsBadInput(t *testing.T) {
	_, o := oracleProblem(t, 50, 2, 1)
	out := make([]float64, 3)
	if err := o.BayesProbs([]float64{0}, 0.1, out, nil); err == nil {
		t.Error("an input of the wrong width was accepted")
	}
	if err := o.BayesProbs([]float64{0, 0}, -1, out, nil); err == nil {
		t.Error("a negative noise variance was accepted")
	}
	if err := o.BayesProbs([]float64{0, math.NaN()}, 0.1, out, nil); err == nil {
		t.Error("a NaN input was accepted")
	}
	if err := o.BayesProbs([]float64{0, 0}, math.NaN(), out, nil); err == nil {
		t.Error("a NaN noise variance was accepted")
	}
	if _, err := o.BayesPredictive(&Dataset{N: 1, D: 3, C: 3, X: make([]float64, 3), Y: []int{0}}, 0.1); err == nil {
		t.Error("data of another dimension were accepted")
	}
	if _, err := o.BayesPredictive(&Dataset{N: 2, D: 2, C: 3, X: make([]float64, 3), Y: []int{0, 1}}, 0.1); err == nil {
		t.Error("data with too few input values were accepted")
	}
	if err := o.Latent([]float64{0, 0, 0}, out); err == nil {
		t.Error("Latent took an input of the wrong width")
	}
	if err := o.Latent([]float64{0, 0}, out[:2]); err == nil {
		t.Error("Latent took an output of the wrong width")
	}
	if _, err := o.Label([]float64{0}); err == nil {
		t.Error("Label took an input of the wrong width")
	}
	if _, o, err := SyntheticProblem(50, 2, 3, 1, SyntheticOptions{Sigma0Sq: 0.1}); err != nil || o != nil {
		t.Errorf("σ0² > 0: oracle %v, error %v; want none and no error", o, err)
	}
}

// Far outside the box the posterior is the nearest point of the box.
func TestOracleFarOutside(t *testing.T) {
	_, o := oracleProblem(t, 100, 2, 3)
	out := make([]float64, 3)
	if err := o.BayesProbs([]float64{400, -400}, 0.1, out, nil); err != nil {
		t.Fatal(err)
	}
	want, err := o.Label([]float64{2.5, -2.5})
	if err != nil {
		t.Fatal(err)
	}
	if out[want] != 1 {
		t.Errorf("p = %v, want one-hot at the corner's label %d", out, want)
	}
}

func bayesScores(p []float64, y []int, c int) (e, nll float64) {
	for i, yi := range y {
		row := p[i*c : (i+1)*c]
		if argmaxOf(row) != yi {
			e++
		}
		nll -= math.Log(math.Max(row[yi], 1e-300))
	}
	return e / float64(len(y)), nll / float64(len(y))
}

// The Bayes-optimal error and NLL of a synthetic problem's noisy test set:
// the floor under any classifier's.
func ExampleSyntheticOracle() {
	sp, err := SyntheticSplitProblem(200, 500, 2, 3, 0.25, 7, SyntheticOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := sp.Oracle.BayesPredictive(sp.Test, 0.25)
	if err != nil {
		fmt.Println(err)
		return
	}
	var errors int
	var nll float64
	for i, y := range sp.Test.Y {
		row := p[3*i : 3*i+3]
		if argmaxOf(row) != y {
			errors++
		}
		nll -= math.Log(row[y])
	}
	fmt.Printf("Bayes error %.3f, NLL %.3f\n", float64(errors)/500, nll/500)
	// Output: Bayes error 0.222, NLL 0.495
}
