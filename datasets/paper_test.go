package datasets

import (
	"math"
	"slices"
	"testing"
)

// uciExpect is the PROVENANCE table (N, D, C, class counts) plus a few
// values read off the files' first lines.
var uciExpect = map[string]struct {
	n, d, c int
	counts  []int
	row0    map[int]float64 // column → value of the first row
	y0      int
}{
	"glass":       {214, 9, 6, []int{70, 76, 17, 13, 9, 29}, map[int]float64{0: 1.52101, 1: 13.64, 4: 71.78, 8: 0}, 0},
	"new-thyroid": {215, 5, 3, []int{150, 35, 30}, map[int]float64{0: 107, 1: 10.1, 4: 2.7}, 0},
	"satellite":   {6435, 36, 6, []int{1533, 703, 1358, 626, 707, 1508}, map[int]float64{0: 92, 1: 115, 35: 87}, 2},
	"svmguide2":   {391, 20, 3, []int{221, 117, 53}, map[int]float64{0: 0.0424107142857143}, 0},
	"vehicle":     {846, 18, 4, []int{218, 212, 217, 199}, map[int]float64{0: 95, 17: 197}, 3},
	"vowel":       {540, 10, 6, []int{90, 90, 90, 90, 90, 90}, map[int]float64{0: 0, 1: -3.639}, 0},
	"waveform":    {1000, 21, 3, []int{311, 350, 339}, map[int]float64{0: -0.326233360705649}, 2},
	"wine":        {178, 13, 3, []int{59, 71, 48}, map[int]float64{0: 14.23, 12: 1065}, 0},
}

func TestLoadUCI(t *testing.T) {
	dir := testDataDir(t)
	if len(UCINames()) != len(uciExpect) {
		t.Fatalf("UCINames() = %v", UCINames())
	}
	for _, name := range UCINames() {
		t.Run(name, func(t *testing.T) {
			want := uciExpect[name]
			ds, err := LoadUCI(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			if ds.N != want.n || ds.D != want.d || ds.C != want.c {
				t.Fatalf("N=%d D=%d C=%d, want %d %d %d", ds.N, ds.D, ds.C, want.n, want.d, want.c)
			}
			if got := ds.ClassCounts(); !slices.Equal(got, want.counts) {
				t.Errorf("class counts %v, want %v", got, want.counts)
			}
			for j, v := range want.row0 {
				if ds.Row(0)[j] != v {
					t.Errorf("X[0][%d] = %v, want %v", j, ds.Row(0)[j], v)
				}
			}
			if ds.Y[0] != want.y0 {
				t.Errorf("Y[0] = %d, want %d", ds.Y[0], want.y0)
			}
			// The files are 0-based already, so the label map is the identity.
			for c, v := range ds.LabelValues {
				if v != float64(c) {
					t.Errorf("LabelValues[%d] = %v, want identity", c, v)
				}
			}
		})
	}
	if _, err := LoadUCI(dir, "iris"); err == nil {
		t.Error("unknown name accepted")
	}
}

func TestLoadAstro(t *testing.T) {
	dir := testDataDir(t)
	ds, err := LoadAstro(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != 454 || ds.D != 6 || ds.C != 3 {
		t.Fatalf("N=%d D=%d C=%d, want 454 6 3", ds.N, ds.D, ds.C)
	}
	if got := ds.ClassCounts(); !slices.Equal(got, []int{184, 168, 102}) {
		t.Errorf("class counts %v, want bll 184, fsrq 168, psr 102", got)
	}
	if !slices.Equal(ds.ClassNames, []string{"bll", "fsrq", "psr"}) {
		t.Errorf("class names %v, want bll fsrq psr (see AstroClassNames)", ds.ClassNames)
	}
	// First line of fermi4fgl.dat:
	// 1.8393e-09 8.6817e-11 3.60097131151383 6.60844587028938 2.4469 0.0505 0.1466 0.033 1.73518911773966 1
	wantX := []float64{1.8393e-09, 3.60097131151383, 6.60844587028938, 2.4469, 0.1466, 1.73518911773966}
	// Variances are the squared error bars, squared at run time in float64
	// (a constant expression would be rounded once, exactly).
	errs := []float64{8.6817e-11, 0, 0, 0.0505, 0.033, 0}
	wantV := make([]float64, len(errs))
	for j, e := range errs {
		wantV[j] = e * e
	}
	for j := range wantX {
		if ds.X[j] != wantX[j] {
			t.Errorf("X[0][%d] = %v, want %v", j, ds.X[j], wantX[j])
		}
		if ds.Noise[j] != wantV[j] {
			t.Errorf("Noise[0][%d] = %v, want %v", j, ds.Noise[j], wantV[j])
		}
	}
	if ds.Y[0] != 1 || ds.ClassNames[ds.Y[0]] != "fsrq" {
		t.Errorf("Y[0] = %d (%s), want 1 (fsrq)", ds.Y[0], ds.ClassNames[ds.Y[0]])
	}
	// The >30σ cut: ln(detection significance) ≥ ln 30 everywhere.
	for i := range ds.N {
		if ds.Row(i)[1] < math.Log(30)-1e-9 {
			t.Fatalf("row %d: ln significance %v below ln 30", i, ds.Row(i)[1])
		}
	}

	b4, err := LoadAstroColumns(dir, AstroColumnsB4)
	if err != nil {
		t.Fatal(err)
	}
	if b4.D != 4 || b4.X[2] != 2.4469 || b4.Noise[2] != wantV[3] || b4.FeatureNames[1] != "ln_pivot_energy" {
		t.Errorf("B.4 columns: D=%d row0=%v noise=%v names=%v", b4.D, b4.Row(0), b4.NoiseRow(0), b4.FeatureNames)
	}
	if _, err := LoadAstroColumns(dir, []int{1}); err == nil {
		t.Error("an error column was accepted as an input")
	}

	splits, err := AstroSplits(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(splits) != 100 {
		t.Fatalf("%d splits, want 100", len(splits))
	}
	for s, sp := range splits {
		if len(sp[0]) != 408 || len(sp[1]) != 46 {
			t.Fatalf("split %d: %d/%d, want 408/46", s, len(sp[0]), len(sp[1]))
		}
		checkPartition(t, ds.N, sp[0], sp[1])
	}
	if splits[0][0][0] != 124 || splits[0][0][2] != 293 {
		t.Errorf("split 0 starts %v, want 124 54 293", splits[0][0][:3])
	}

	// The paper's per-fold preparation.
	train, test, sc := AstroFold(ds, splits[0])
	if train.N != 408 || test.N != 46 {
		t.Fatalf("fold sizes %d/%d", train.N, test.N)
	}
	checkStandardized(t, train)
	// Noise of flux = (error / training std of flux)²; no-error columns get the floor.
	i0 := splits[0][0][0]
	raw := ds.Subset([]int{i0})
	if got, want := train.Noise[0], raw.Noise[0]/(sc.Scale[0]*sc.Scale[0]); math.Abs(got-want) > 1e-12*want {
		t.Errorf("train flux noise %v, want (err/std)² = %v", got, want)
	}
	for i := range test.N {
		for _, j := range []int{1, 2, 5} {
			if test.NoiseRow(i)[j] != AstroNoiseFloor || train.NoiseRow(i)[j] != AstroNoiseFloor {
				t.Fatalf("row %d col %d: noise should be the floor %v", i, j, AstroNoiseFloor)
			}
		}
	}
	it := splits[0][1][0]
	if got, want := test.NoiseRow(0)[3], ds.NoiseRow(it)[3]/(sc.Scale[3]*sc.Scale[3]); got != want {
		t.Errorf("test alpha noise %v, want own error over training std: %v", got, want)
	}
}

// TestAstroClassOrder pins the evidence for AstroClassNames (0 = bll,
// 1 = fsrq, 2 = psr): the mean test-class counts over the 100 fixed splits
// equal the column totals of the paper's Table 10 (bll 19.14, fsrq 16.76,
// psr 10.10), and the spectral shapes fit the names (pulsars curved: high β;
// BL Lacs hard: low α; FSRQs soft).
func TestAstroClassOrder(t *testing.T) {
	dir := testDataDir(t)
	ds, err := LoadAstro(dir)
	if err != nil {
		t.Fatal(err)
	}
	splits, err := AstroSplits(dir)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, ds.C)
	for _, sp := range splits {
		for _, i := range sp[1] {
			counts[ds.Y[i]]++
		}
	}
	// Table 10, MGP: columns bll, fsrq, psr summed over the predicted rows.
	table10 := map[string]float64{"bll": 17.66 + 1.48 + 0.00, "fsrq": 1.31 + 15.16 + 0.29, "psr": 0.01 + 0.36 + 9.73}
	for k, name := range ds.ClassNames {
		if got := counts[k] / float64(len(splits)); math.Abs(got-table10[name]) > 0.005 {
			t.Errorf("label %d (%s): %.2f test points per split, Table 10 column total %.2f", k, name, got, table10[name])
		}
	}
	mean := func(col, k int) float64 {
		var s, n float64
		for i := range ds.N {
			if ds.Y[i] == k {
				s += ds.Row(i)[col]
				n++
			}
		}
		return s / n
	}
	const alpha, beta = 3, 4 // AstroColumnsTable9: flux, det, pivot, α, β, curv
	bll, fsrq, psr := slices.Index(ds.ClassNames, "bll"), slices.Index(ds.ClassNames, "fsrq"), slices.Index(ds.ClassNames, "psr")
	if b := mean(beta, psr); b < 2*mean(beta, bll) || b < 2*mean(beta, fsrq) {
		t.Errorf("mean β: psr %.3f, bll %.3f, fsrq %.3f; pulsars should be the curved class", b, mean(beta, bll), mean(beta, fsrq))
	}
	if a, f := mean(alpha, bll), mean(alpha, fsrq); a > 2.05 || f < 2.2 {
		t.Errorf("mean α: bll %.3f (hard, ≈2.0), fsrq %.3f (soft, >2.2)", a, f)
	}
}
