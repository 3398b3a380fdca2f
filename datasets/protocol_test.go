package datasets

import (
	"math"
	"slices"
	"testing"
)

// checkPartition fails unless train and test are disjoint and together
// cover 0..n−1 exactly once.
func checkPartition(t *testing.T, n int, train, test []int) {
	t.Helper()
	seen := make([]int, n)
	for _, i := range slices.Concat(train, test) {
		if i < 0 || i >= n {
			t.Fatalf("index %d out of range [0,%d)", i, n)
		}
		seen[i]++
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("index %d appears %d times across train and test", i, c)
		}
	}
}

// checkStandardized fails unless every non-constant column of ds has mean 0
// and population variance 1.
func checkStandardized(t *testing.T, ds *Dataset) {
	t.Helper()
	for j := range ds.D {
		var m, v float64
		for i := range ds.N {
			m += ds.Row(i)[j]
		}
		m /= float64(ds.N)
		for i := range ds.N {
			d := ds.Row(i)[j] - m
			v += d * d
		}
		v /= float64(ds.N)
		if math.Abs(m) > 1e-12 || math.Abs(v-1) > 1e-12 {
			t.Errorf("column %d: mean %g variance %g, want 0 and 1", j, m, v)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		n         int
		frac      float64
		wantTrain int
	}{
		{214, 0.1, 192}, {215, 0.1, 193}, {6435, 0.1, 5791}, {178, 0.1, 160}, // UCI sizes of the docs' table
		{454, 0.1, 408}, {300, 1.0 / 3, 200}, {10, 0.3, 7}, {5, 0, 5}, {5, 1, 0}, {0, 0.5, 0},
	} {
		train, test := Split(tc.n, tc.frac, 42)
		if len(train) != tc.wantTrain || len(train)+len(test) != tc.n {
			t.Errorf("Split(%d, %v): %d/%d, want %d train", tc.n, tc.frac, len(train), len(test), tc.wantTrain)
		}
		checkPartition(t, tc.n, train, test)
	}
	a, _ := Split(100, 0.2, 7)
	b, _ := Split(100, 0.2, 7)
	c, _ := Split(100, 0.2, 8)
	if !slices.Equal(a, b) {
		t.Error("Split is not deterministic in its seed")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same split")
	}
}

func TestStandardize(t *testing.T) {
	train := &Dataset{Name: "tr", N: 4, D: 3, C: 2,
		X:     []float64{1, 5, 10, 2, 5, 20, 3, 5, 30, 6, 5, 40},
		Y:     []int{0, 1, 0, 1},
		Noise: []float64{4, 1, 1, 4, 1, 1, 4, 1, 1, 4, 1, 1},
	}
	test := &Dataset{Name: "te", N: 1, D: 3, C: 2, X: []float64{3, 7, 25}, Y: []int{1}}
	orig := slices.Clone(train.X)
	out, sc := Standardize(train, test)
	if !slices.Equal(train.X, orig) {
		t.Error("Standardize modified its input")
	}
	st, te := out[0], out[1]
	// Column 1 is constant: centred, left unscaled.
	if sc.Scale[1] != 1 || sc.Mean[1] != 5 {
		t.Errorf("constant column: mean %v scale %v, want 5 and 1", sc.Mean[1], sc.Scale[1])
	}
	for i := range st.N {
		if st.Row(i)[1] != 0 {
			t.Errorf("constant column row %d = %v, want 0", i, st.Row(i)[1])
		}
	}
	// The non-constant columns 0 and 2 have training mean 0 and variance 1.
	for _, j := range []int{0, 2} {
		var m, v float64
		for i := range st.N {
			m += st.Row(i)[j] / float64(st.N)
		}
		for i := range st.N {
			v += (st.Row(i)[j] - m) * (st.Row(i)[j] - m) / float64(st.N)
		}
		if math.Abs(m) > 1e-15 || math.Abs(v-1) > 1e-14 {
			t.Errorf("column %d: mean %g variance %g, want 0 and 1", j, m, v)
		}
	}
	// Population std of column 0 (1,2,3,6) is sqrt(3.5); the test row uses training statistics.
	if want := (3 - 3.0) / math.Sqrt(3.5); math.Abs(te.X[0]-want) > 1e-15 {
		t.Errorf("test x0 = %v, want %v", te.X[0], want)
	}
	if want := 7.0 - 5; te.X[1] != want {
		t.Errorf("test x1 = %v, want %v (centred, unscaled)", te.X[1], want)
	}
	// Noise variances are rescaled by 1/std².
	if want := 4 / 3.5; math.Abs(st.Noise[0]-want) > 1e-15 {
		t.Errorf("noise[0] = %v, want %v", st.Noise[0], want)
	}
	if st.Noise[1] != 1 {
		t.Errorf("noise of the unscaled column = %v, want 1", st.Noise[1])
	}
}

func TestAddInputNoise(t *testing.T) {
	n := 20000
	ds := &Dataset{N: n, D: 2, C: 1, X: make([]float64, 2*n), Y: make([]int, n)}
	for k := range ds.X {
		ds.X[k] = float64(k % 7)
	}
	noisy := AddInputNoise(ds, 0.25, 3)
	var s2 float64
	for k := range ds.X {
		d := noisy.X[k] - ds.X[k]
		s2 += d * d
		if noisy.Noise[k] != 0.25 {
			t.Fatalf("Noise[%d] = %v, want 0.25", k, noisy.Noise[k])
		}
	}
	if v := s2 / float64(2*n); math.Abs(v-0.25) > 0.01 {
		t.Errorf("empirical noise variance %v, want ≈ 0.25", v)
	}
	if ds.Noise != nil || ds.X[1] != 1 {
		t.Error("AddInputNoise modified its input")
	}
	again := AddInputNoise(noisy, 0.1, 4)
	if math.Abs(again.Noise[0]-0.35) > 1e-15 {
		t.Errorf("noise variances should add: %v", again.Noise[0])
	}
	zero := AddInputNoise(ds, 0, 3)
	if !slices.Equal(zero.X, ds.X) {
		t.Error("variance 0 changed the inputs")
	}
}

func TestFlipLabels(t *testing.T) {
	n, c, frac := 10000, 4, 0.2
	ds := &Dataset{N: n, D: 1, C: c, X: make([]float64, n), Y: make([]int, n)}
	for i := range ds.Y {
		ds.Y[i] = i % c
	}
	out, idx := FlipLabelsWithIndices(ds, frac, 11)
	if len(idx) != int(math.Round(frac*float64(n))) {
		t.Fatalf("%d labels redrawn, want round(%v·%d) = %d", len(idx), frac, n, int(frac*float64(n)))
	}
	redrawn := make([]bool, n)
	for _, i := range idx {
		if redrawn[i] {
			t.Fatalf("row %d redrawn twice", i)
		}
		redrawn[i] = true
	}
	changed := 0
	for i := range n {
		if out.Y[i] != ds.Y[i] {
			if !redrawn[i] {
				t.Fatalf("row %d changed but was not selected", i)
			}
			changed++
		}
		if out.Y[i] < 0 || out.Y[i] >= c {
			t.Fatalf("row %d label %d out of range", i, out.Y[i])
		}
	}
	// Uniform over all C classes (old one included): expected change rate frac·(C−1)/C = 0.15.
	if rate := float64(changed) / float64(n); math.Abs(rate-frac*float64(c-1)/float64(c)) > 0.012 {
		t.Errorf("changed fraction %v, want ≈ %v", rate, frac*float64(c-1)/float64(c))
	}
	if ds.Y[0] != 0 || ds.Y[1] != 1 {
		t.Error("FlipLabels modified its input")
	}
	if got := FlipLabels(ds, 0.2, 11); !slices.Equal(got.Y, out.Y) {
		t.Error("FlipLabels and FlipLabelsWithIndices disagree for the same seed")
	}
	if got := FlipLabels(ds, 0, 11); !slices.Equal(got.Y, ds.Y) {
		t.Error("fraction 0 changed labels")
	}
}

func TestBootstrap(t *testing.T) {
	vals := make([]float64, 400)
	r := newRand(1, 1)
	for k := range vals {
		vals[k] = 3 + 2*r.NormFloat64()
	}
	var m float64
	for _, v := range vals {
		m += v
	}
	m /= float64(len(vals))
	mean, se := Bootstrap(vals, 2000, 5)
	if mean != m {
		t.Errorf("mean %v, want %v", mean, m)
	}
	// The standard error of a mean of 400 draws with sd 2 is 0.1.
	if math.Abs(se-0.1) > 0.015 {
		t.Errorf("bootstrap stderr %v, want ≈ 0.1", se)
	}
	if m2, se2 := Bootstrap(vals, 2000, 5); m2 != mean || se2 != se {
		t.Error("Bootstrap is not deterministic")
	}
	if _, se := Bootstrap([]float64{1, 1, 1}, 100, 1); se != 0 {
		t.Errorf("constant values: stderr %v, want 0", se)
	}
	if m, _ := Bootstrap(nil, 10, 1); !math.IsNaN(m) {
		t.Error("empty input should give NaN")
	}
}

func TestDatasetSubsetAndValidate(t *testing.T) {
	ds := &Dataset{Name: "d", N: 3, D: 2, C: 2, X: []float64{1, 2, 3, 4, 5, 6}, Y: []int{0, 1, 0},
		Noise: []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, FeatureNames: []string{"a", "b"}}
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
	sub := ds.Subset([]int{2, 0, 2})
	if !slices.Equal(sub.X, []float64{5, 6, 1, 2, 5, 6}) || !slices.Equal(sub.Y, []int{0, 0, 0}) ||
		!slices.Equal(sub.Noise, []float64{0.5, 0.6, 0.1, 0.2, 0.5, 0.6}) {
		t.Errorf("Subset: X=%v Y=%v Noise=%v", sub.X, sub.Y, sub.Noise)
	}
	sub.X[0] = 99
	if ds.X[4] == 99 {
		t.Error("Subset aliases the original storage")
	}
	bad := ds.Clone()
	bad.X[3] = math.NaN()
	if bad.Validate() == nil {
		t.Error("Validate accepted NaN")
	}
	bad = ds.Clone()
	bad.Noise[0] = -1
	if bad.Validate() == nil {
		t.Error("Validate accepted a negative noise variance")
	}
	bad = ds.Clone()
	bad.Y[1] = 2
	if bad.Validate() == nil {
		t.Error("Validate accepted label ≥ C")
	}
}
