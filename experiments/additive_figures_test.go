package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gridSurface returns a surface on an n1 × n2 grid over [0, 1] × [0, 2]
// with p(y=c) = prob(c, x1, x2) for classes classes (binary: P = p(y=1)).
func gridSurface(n1, n2, classes int, prob func(c int, x1, x2 float64) float64) *Surface {
	s := &Surface{X1: make([]float64, n1), X2: make([]float64, n2)}
	for i := range n1 {
		s.X1[i] = float64(i) / float64(n1-1)
	}
	for i := range n2 {
		s.X2[i] = 2 * float64(i) / float64(n2-1)
	}
	g := n1 * n2
	if classes == 2 {
		s.P = make([]float64, g)
	} else {
		s.P = make([]float64, classes*g)
	}
	for r, b := range s.X2 {
		for k, a := range s.X1 {
			if classes == 2 {
				s.P[r*n1+k] = prob(1, a, b)
				continue
			}
			for c := range classes {
				s.P[c*g+r*n1+k] = prob(c, a, b)
			}
		}
	}
	return s
}

// linearBinary has p(y=1) linear in x1 and 0.5 at x1 = 0.37.
func linearBinary(_ int, x1, _ float64) float64 { return 0.5 + 0.8*(x1-0.37) }

// bands are three classes in vertical bands: a softmax of −20(x1 − m_c)²
// with m = 1/6, 1/2, 5/6, so that the argmax changes at x1 = 1/3 and 2/3.
func bands(c int, x1, _ float64) float64 {
	var z, mine float64
	for k := range 3 {
		m := (2*float64(k) + 1) / 6
		e := math.Exp(-20 * (x1 - m) * (x1 - m))
		z += e
		if k == c {
			mine = e
		}
	}
	return mine / z
}

// On a binary surface linear in x1 the boundary samples lie exactly on
// the 0.5 line (the interpolation is exact), one per grid row; distances
// to them are distances to that line within the grid.
func TestBoundaryPointsBinary(t *testing.T) {
	s := gridSurface(41, 31, 2, linearBinary)
	if c, err := surfaceClasses(s); err != nil || c != 2 {
		t.Fatalf("classes %d, %v", c, err)
	}
	pts, err := boundaryPoints(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2*31 {
		t.Fatalf("%d boundary points, want one per grid row (31)", len(pts)/2)
	}
	for i := 0; i < len(pts); i += 2 {
		if math.Abs(pts[i]-0.37) > 1e-12 {
			t.Errorf("boundary point (%v, %v) off the line x1 = 0.37", pts[i], pts[i+1])
		}
	}
	d := nearestDistances([]float64{0.1, 1, 0.37, 5, 0.9, 0.4}, pts)
	for i, want := range []float64{0.27, 3, 0.53} {
		if math.Abs(d[i]-want) > 1e-9 {
			t.Errorf("distance %d = %v, want %v", i, d[i], want)
		}
	}
	if d := nearestDistances([]float64{0, 0}, nil); !math.IsInf(d[0], 1) {
		t.Errorf("distance to no boundary = %v, want +Inf", d[0])
	}
}

// On three vertical bands the samples lie within a grid step of the two
// true boundaries, and both boundaries are found along the whole height.
func TestBoundaryPointsMultiClass(t *testing.T) {
	s := gridSurface(61, 21, 3, bands)
	if c, err := surfaceClasses(s); err != nil || c != 3 {
		t.Fatalf("classes %d, %v", c, err)
	}
	pts, err := boundaryPoints(s)
	if err != nil {
		t.Fatal(err)
	}
	step := 1.0 / 60
	var near [2]int
	for i := 0; i < len(pts); i += 2 {
		switch {
		case math.Abs(pts[i]-1.0/3) < step:
			near[0]++
		case math.Abs(pts[i]-2.0/3) < step:
			near[1]++
		default:
			t.Errorf("boundary point (%v, %v) far from x1 = 1/3 and 2/3", pts[i], pts[i+1])
		}
	}
	if near[0] != 21 || near[1] != 21 {
		t.Errorf("points per boundary %v, want one per grid row (21)", near)
	}
	// The margins the figure contours change sign at the same places.
	grids, level, err := surfaceBoundaries(s)
	if err != nil || len(grids) != 3 || level != 0 {
		t.Fatalf("%d grids at level %v: %v", len(grids), level, err)
	}
	if m := grids[0].Z(0, 0); !(m > 0) {
		t.Errorf("class 0's margin at x1 = 0 is %v, want > 0", m)
	}
	if m := grids[0].Z(60, 0); !(m < 0) {
		t.Errorf("class 0's margin at x1 = 1 is %v, want < 0", m)
	}
}

func TestSurfaceClassesErrors(t *testing.T) {
	s := gridSurface(4, 3, 2, linearBinary)
	for _, c := range []struct {
		p    []float64
		want string
	}{
		{s.P[:5], "surface of 5 values"},
		{append(slices.Clone(s.P), s.P...), "surface of 24 values"}, // two grids: not a binary or a ≥ 3-class layout
	} {
		bad := *s
		bad.P = c.p
		if _, err := surfaceClasses(&bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d values: %v, want %q", len(c.p), err, c.want)
		}
	}
	if _, err := surfaceClasses(&Surface{}); err == nil {
		t.Error("a surface without a grid was accepted")
	}
}

// The toy findings measure the start and the trained Z against the
// trained boundary, and read back from the run's notes.
func TestToyFindings(t *testing.T) {
	s := gridSurface(41, 31, 2, linearBinary)
	s.Z = []float64{0.3, 0.4, 0.9, 0.4} // y = 0.4 is a grid row: the nearest sample is level with z
	f, err := toyFindingsOf(s, []float64{0, 0.4, 1, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Start-0.5) > 1e-9 || math.Abs(f.Trained-0.3) > 1e-9 || f.Closer != 2 || f.M != 2 {
		t.Errorf("findings %+v, want start 0.5, trained 0.3, 2 of 2 closer", f)
	}
	back, ok := parseToyNote([]string{"400 optimiser steps", f.note()})
	if !ok || math.Abs(back.Start-f.Start) > 1e-6 || math.Abs(back.Trained-f.Trained) > 1e-6 || back.Closer != 2 || back.M != 2 {
		t.Errorf("note %q parsed as %+v, %v", f.note(), back, ok)
	}
	if _, ok := parseToyNote([]string{"δ = 0.01"}); ok {
		t.Error("a δ note parsed as findings")
	}
	if _, err := toyFindingsOf(s, []float64{0, 0.5}); err == nil {
		t.Error("start and trained Z of different sizes accepted")
	}
	flat := gridSurface(5, 5, 2, func(int, float64, float64) float64 { return 0.9 })
	flat.Z = []float64{0.5, 0.5}
	if _, err := toyFindingsOf(flat, []float64{0.5, 0.5}); err == nil || !strings.Contains(err.Error(), "no decision boundary") {
		t.Errorf("a one-class surface: %v", err)
	}
}

func TestParseLiuDelta(t *testing.T) {
	d, ok := parseLiuDelta([]string{"10 optimiser steps", fmt.Sprintf(liuDeltaNote, 0.0123456)})
	if !ok || math.Abs(d-0.01235) > 1e-12 {
		t.Errorf("δ %v, %v", d, ok)
	}
	if _, ok := parseLiuDelta([]string{"10 optimiser steps"}); ok {
		t.Error("δ found in notes without one")
	}
	if got := scanFormat("a %.4g b %d c %.12f"); got != "a %g b %d c %f" {
		t.Errorf("scanFormat = %q", got)
	}
}

func TestCurveRise(t *testing.T) {
	tr := []TracePoint{{Eval: 10, NLL: 0.6}, {Eval: 20, NLL: 0.4}, {Eval: 30, NLL: 0.4}, {Eval: 40, NLL: 0.45}}
	if r := curveRise(tr); r.min != 0.4 || r.at != 20 || r.final != 0.45 || r.String() != "0.4000 (20) → 0.4500" {
		t.Errorf("rise %+v %q", r, r)
	}
	if r := curveRise(nil); !math.IsNaN(r.min) {
		t.Errorf("empty curve: %+v", r)
	}
}

const liuToyMini = `name: liu-toy-mini
title: t
source: test
family: liu_toy
seed: 3
datasets: [gp-3class]
protocol: {splits: 1}
training: {epochs: 40, batch: 100000, lr: 0.01, inducing: 8}
settings:
  - {name: default}
methods:
  - {name: GPC-I, model: gpc1}
  - {name: GPCsm, model: gpcsm}
figures: [liu_fig2]
`

const liuDeltaMini = `name: liu-delta-mini
title: t
source: test
family: liu_delta
seed: 4
datasets: [adult-test]
protocol: {splits: 1, test_fraction: 0.2}
training: {epochs: 1, min_steps: 30, batch: 64, lr: 0.02, inducing: 10, kernel: se}
settings:
  - {name: learned}
  - {name: fixed}
methods:
  - {name: GPC-II, model: gpc2}
  - {name: GPCsm, model: gpcsm}
figures: [liu_fig4]
`

func TestLiuToyAndDeltaSpecValidation(t *testing.T) {
	for _, c := range []struct{ spec, old, new, want string }{
		{liuToyMini, "[gp-3class]", "[moons]", `unknown data set "moons" for liu_toy`},
		{liuToyMini, "{name: default}", "{name: default, noise: 0.1}", "only a name is read"},
		{liuToyMini, "inducing: 8}", "inducing: 8, kernel: se}", "Matérn-3/2"},
		{liuToyMini, "model: gpcsm", "model: nimgp", "observed inputs"},
		{liuDeltaMini, "{name: fixed}", "{name: fixed-1e-2}", `liu_delta setting "fixed-1e-2"`},
		{liuDeltaMini, "[adult-test]", "[adult-train]", `unknown data set "adult-train" for liu_delta`},
		{liuDeltaMini, "test_fraction: 0.2", "test_fraction: 0", "test_fraction > 0"},
		{liuDeltaMini, "kernel: se", "kernel: poly", `kernel "poly"`},
	} {
		_, err := ParseSpec("mini.yaml", []byte(strings.Replace(c.spec, c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: error %v, want it to contain %q", c.old, c.new, err, c.want)
		}
	}
	for _, s := range []string{liuToyMini, liuDeltaMini} {
		if _, err := ParseSpec("mini.yaml", []byte(s)); err != nil {
			t.Error(err)
		}
	}
}

// fakeReporter is a reporter of spec over results, writing into a new
// directory that holds an empty report.md, as Report leaves it for figures.
func fakeReporter(t *testing.T, spec string, results []Result) *Reporter {
	t.Helper()
	s, err := ParseSpec("mini.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte("# report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rp := &Reporter{s: s, dir: dir, by: map[string][]Result{}, results: results}
	for _, r := range results {
		k := groupKey(r.Dataset, r.Setting, r.Method)
		rp.by[k] = append(rp.by[k], r)
	}
	return rp
}

// Figure 2 draws every split-0 surface and appends its findings: here one
// model fits well with Z moving in and one does not.
func TestLiuToyFigureFindings(t *testing.T) {
	good := gridSurface(30, 30, 3, bands)
	good.Z = []float64{0.33, 0.5, 0.66, 0.5}
	bad := *good
	bad.Z = []float64{0, 0.5, 1, 0.5}
	results := []Result{
		{Dataset: "gp-3class", Setting: "default", Method: "GPC-I", Error: 0.02, NLL: 0.1, Surface: good,
			Notes: []string{fmt.Sprintf(liuDeltaNote, 0.004), toyFindings{Start: 0.2, Trained: 0.05, Closer: 2, M: 2}.note()}},
		{Dataset: "gp-3class", Setting: "default", Method: "GPCsm", Error: 0.3, NLL: 0.6, Surface: &bad,
			Notes: []string{toyFindings{Start: 0.2, Trained: 0.3, Closer: 0, M: 2}.note()}},
	}
	rp := fakeReporter(t, liuToyMini, results)
	if err := liuToyFigure(rp, "liu_fig2"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(rp.dir, "liu_fig2.png")); err != nil || st.Size() < 1000 {
		t.Fatalf("figure: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(rp.dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"# report\n",
		"| gp-3class | default | GPC-I | 0.0200 | 0.1000 | 0.004 | 0.2000 | 0.0500 | 2 of 2 |",
		"| gp-3class | default | GPCsm | 0.3000 | 0.6000 | — | 0.2000 | 0.3000 | 0 of 2 |",
		"separates the data well\": **partly reproduced** — 1 of 2 models",
		"toward the decision boundaries\": **partly reproduced** — for 1 of 2 models",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if err := liuToyFigure(fakeReporter(t, liuToyMini, nil), "liu_fig2"); err == nil {
		t.Error("a figure without surfaces was drawn")
	}
}

// trace returns a curve of NLLs at steps 10, 20, …
func trace(nll ...float64) []TracePoint {
	out := make([]TracePoint, len(nll))
	for i, v := range nll {
		out[i] = TracePoint{Eval: 10 * (i + 1), NLL: v, Error: 0.2}
	}
	return out
}

// Figure 4 plots the curves and appends its findings: a learned-δ run
// beating its fixed twin, a fixed-δ curve rising on adult, GPCsm's one run
// left out of the pairs.
func TestLiuDeltaFigureFindings(t *testing.T) {
	sm := []string{"30 optimiser steps", liuNoDeltaNote}
	results := []Result{
		{Dataset: "adult-test", Setting: "learned", Method: "GPC-II", NLL: 0.35, Trace: trace(0.6, 0.4, 0.35), Notes: []string{fmt.Sprintf(liuDeltaNote, 0.02)}},
		{Dataset: "adult-test", Setting: "fixed", Method: "GPC-II", NLL: 0.45, Trace: trace(0.6, 0.4, 0.45), Notes: []string{fmt.Sprintf(liuDeltaNote, 0.001)}},
		{Dataset: "adult-test", Setting: "learned", Method: "GPCsm", NLL: 0.3, Trace: trace(0.7, 0.5, 0.3), Notes: sm},
		{Dataset: "adult-test", Setting: "fixed", Method: "GPCsm", NLL: 0.3, Trace: trace(0.7, 0.5, 0.3), Notes: sm},
	}
	rp := fakeReporter(t, liuDeltaMini, results)
	if err := liuDeltaFigure(rp, "liu_fig4"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rp.dir, "liu_fig4.png")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(rp.dir, "report.md"))
	md := string(b)
	for _, want := range []string{
		"| adult-test | GPC-II | 0.3500 | 0.4500 | +0.1000 | 0.02 | 0.4000 (20) → 0.4500 | 0.3500 (30) → 0.3500 |",
		"NLL is worse\": **reproduced** — the fixed-δ run ends with a higher hold-out NLL than the learned-δ run for 1 of 1",
		"increases during training\": **reproduced** — 1 of 1 fixed-δ curves on adult",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| adult-test | GPCsm |") {
		t.Error("GPCsm, which has no δ, is in the fixed-vs-learned table")
	}
}

// A short liu_toy run on the generated three-class toy: the surface holds
// three probability grids summing to one, the trained Z, and the findings
// note; the figure and its findings are drawn from them.
func TestLiuToyRunEndToEnd(t *testing.T) {
	dir, results := runMini(t, liuToyMini, "")
	for _, r := range results {
		sf := r.Surface
		if r.NTrain != 400 || r.NTest != 400 || sf == nil || len(sf.P) != 3*liuToyGrid*liuToyGrid || len(sf.Z) != 16 {
			t.Fatalf("%s: n %d/%d, surface %v", r.Method, r.NTrain, r.NTest, sf != nil)
		}
		g := liuToyGrid * liuToyGrid
		for _, i := range []int{0, g / 2, g - 1} {
			// The stored grid is rounded to four decimals, so three values
			// sum to one within 1.5e-4.
			if sum := sf.P[i] + sf.P[g+i] + sf.P[2*g+i]; math.Abs(sum-1) > 1.5e-4+1e-12 {
				t.Errorf("%s: probabilities at grid point %d sum to %v", r.Method, i, sum)
			}
		}
		f, ok := parseToyNote(r.Notes)
		if !ok || !(f.Start > 0) || !(f.Trained > 0) || f.M != 8 {
			t.Errorf("%s: findings %+v (%v) in %v", r.Method, f, ok, r.Notes)
		}
		if _, hasDelta := parseLiuDelta(r.Notes); hasDelta != (r.Method == "GPC-I") {
			t.Errorf("%s: notes %v", r.Method, r.Notes)
		}
	}
	if err := Report(dir, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(b), "## Figure 2 findings") || strings.Contains(string(b), "Figure problems") {
		t.Errorf("report.md:\n%s", b)
	}
}

// runMini runs a spec given as YAML text at its full budget on two workers
// into a new directory, failing the test on any failed run, and returns the
// directory and the results.
func runMini(t *testing.T, spec, dataDir string) (string, []Result) {
	t.Helper()
	s, err := ParseSpec("mini.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Resolve(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := Execute(context.Background(), rs, dir, RunConfig{Workers: 2, DataDir: dataDir})
	if err != nil || sum.Failed != 0 {
		t.Fatalf("%+v: %v", sum, err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st.results()
}

// writeAdultTest writes a fixture adult_test_R.dat of n rows whose label is
// the sign of the first input (with a few flipped), into a new data
// directory.
func writeAdultTest(t *testing.T, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	return writeDelgado(t, "adult", "adult_test_R.dat", 14, n, func(_ int, b *strings.Builder) int {
		x0 := rng.NormFloat64()
		fmt.Fprintf(b, "\t%.6f", x0)
		for range 13 {
			fmt.Fprintf(b, "\t%.6f", rng.NormFloat64())
		}
		if x0 > 0 != (rng.Float64() < 0.05) {
			return 1
		}
		return 0
	})
}

// writeDelgado writes a fixture Fernández-Delgado file (a header of d
// feature names and "clase", then rows numbered from 1 as in the real
// files) into <new data directory>/uci-delgado/set/file and returns the
// data directory. row writes row i's tab-led features and returns its label.
func writeDelgado(t *testing.T, set, file string, d, n int, row func(i int, b *strings.Builder) int) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "uci-delgado", set, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for j := 1; j <= d; j++ {
		fmt.Fprintf(&b, "\tf%d", j)
	}
	b.WriteString("\tclase\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d", i)
		y := row(i, &b)
		fmt.Fprintf(&b, "\t%d\n", y)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A short liu_delta run on a fixture adult-test: every run has a curve up
// to its last step; δ stays at 1e-3 when fixed and moves when learned;
// GPCsm, without δ, is one run under both settings.
func TestLiuDeltaRunEndToEnd(t *testing.T) {
	dataDir := writeAdultTest(t, 300)
	dir, results := runMini(t, liuDeltaMini, dataDir)
	got := map[string]Result{}
	for _, r := range results {
		got[r.Setting+"/"+r.Method] = r
		// 240 rows in batches of 64: epochs of 4 steps, the last cut to 2;
		// the curve is sampled at epoch ends.
		var steps []int
		for _, p := range r.Trace {
			steps = append(steps, p.Eval)
		}
		if r.NTrain != 240 || r.NTest != 60 || !slices.Equal(steps, []int{4, 8, 12, 16, 20, 24, 28, 30}) {
			t.Fatalf("%s %s: n %d/%d, curve at steps %v", r.Setting, r.Method, r.NTrain, r.NTest, steps)
		}
		tr := r.Trace
		if last := tr[len(tr)-1]; math.Abs(last.NLL-r.NLL) > 1e-12 || last.Error != r.Error {
			t.Errorf("%s %s: last trace point %+v, final scores %v/%v", r.Setting, r.Method, last, r.NLL, r.Error)
		}
	}
	if d, ok := parseLiuDelta(got["fixed/GPC-II"].Notes); !ok || d != liuFixedDelta {
		t.Errorf("fixed δ: %v %v", d, ok)
	}
	if d, ok := parseLiuDelta(got["learned/GPC-II"].Notes); !ok || d == liuFixedDelta {
		t.Errorf("learned δ: %v %v", d, ok)
	}
	a, b := got["learned/GPCsm"], got["fixed/GPCsm"]
	if !slices.Contains(a.Notes, liuNoDeltaNote) || !slices.Contains(b.Notes, liuNoDeltaNote) || a.NLL != b.NLL || !slices.Equal(a.Trace, b.Trace) {
		t.Errorf("GPCsm: learned %v %v, fixed %v %v", a.NLL, a.Notes, b.NLL, b.Notes)
	}
	if err := Report(dir, dataDir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "## Figure 4 findings") || !strings.Contains(string(md), "| adult-test | GPC-II |") {
		t.Errorf("report.md:\n%s", md)
	}
}
