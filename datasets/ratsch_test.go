package datasets

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ratschExpect is raetsch/PROVENANCE.md's verification table: pool size,
// inputs, and class counts as [#(−1), #(+1)] = [class 0, class 1].
var ratschExpect = map[string]struct {
	n, d   int
	counts []int
}{
	"thyroid":       {215, 5, []int{150, 65}},
	"heart":         {270, 13, []int{150, 120}},
	"twonorm":       {7400, 20, []int{3697, 3703}},
	"ringnorm":      {7400, 20, []int{3736, 3664}},
	"german":        {1000, 20, []int{700, 300}},
	"waveform":      {5000, 21, []int{3353, 1647}},
	"breast-cancer": {277, 9, []int{196, 81}},
	"flare-solar":   {1066, 9, []int{477, 589}},
	"diabetis":      {768, 8, []int{500, 268}},
	"banana":        {5300, 2, []int{2924, 2376}},
	"image":         {2310, 18, []int{990, 1320}},
	"splice":        {3175, 60, []int{1648, 1527}},
	"titanic":       {2201, 3, []int{1490, 711}},
}

// ratschPublished are the published train/test sizes (Rätsch et al. 2001;
// Mika et al. 1999), written out again here so a typo in the loader's table
// cannot agree with itself.
var ratschPublished = map[string][2]int{
	"thyroid": {140, 75}, "heart": {170, 100}, "twonorm": {400, 7000}, "ringnorm": {400, 7000},
	"german": {700, 300}, "waveform": {400, 4600}, "breast-cancer": {200, 77}, "flare-solar": {666, 400},
	"diabetis": {468, 300}, "banana": {400, 4900}, "image": {1300, 1010}, "splice": {1000, 2175},
	"titanic": {150, 2051},
}

// rowKey identifies a labelled row exactly, for multiset comparisons of
// splits against their pool.
func rowKey(ds *Dataset, i int) string {
	var b strings.Builder
	for _, v := range ds.Row(i) {
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		b.WriteByte(',')
	}
	b.WriteString(strconv.Itoa(ds.Y[i]))
	return b.String()
}

// checkSameRows fails unless the rows of parts, together, are the rows of
// pool with the same multiplicities (duplicated rows are common: titanic has
// only 24 distinct inputs).
func checkSameRows(t *testing.T, pool *Dataset, parts ...*Dataset) {
	t.Helper()
	count := map[string]int{}
	for i := range pool.N {
		count[rowKey(pool, i)]++
	}
	for _, p := range parts {
		if p.D != pool.D || p.C != pool.C {
			t.Fatalf("part %s has D=%d C=%d, pool D=%d C=%d", p.Name, p.D, p.C, pool.D, pool.C)
		}
		for i := range p.N {
			k := rowKey(p, i)
			if count[k] == 0 {
				t.Fatalf("row %d of a part (%s) is not in the pool (or appears too often)", i, k)
			}
			count[k]--
		}
	}
	for k, c := range count {
		if c != 0 {
			t.Fatalf("pool row %s is left over %d time(s)", k, c)
		}
	}
}

func sameData(a, b *Dataset) bool {
	return a.N == b.N && a.D == b.D && slices.Equal(a.X, b.X) && slices.Equal(a.Y, b.Y)
}

func TestRatschNamesAndSizes(t *testing.T) {
	names := RatschNames()
	if len(names) != 13 || !slices.Equal(names[:9], []string{"thyroid", "heart", "twonorm", "ringnorm", "german", "waveform", "breast-cancer", "flare-solar", "diabetis"}) {
		t.Fatalf("RatschNames() = %v: want the nine Table 1 sets first, 13 in all", names)
	}
	for _, name := range names {
		tr, te, ok := RatschSizes(name)
		if want := ratschPublished[name]; !ok || [2]int{tr, te} != want {
			t.Errorf("RatschSizes(%q) = %d, %d, %v; want %v", name, tr, te, ok, want)
		}
		if tr+te != ratschExpect[name].n {
			t.Errorf("%s: %d+%d ≠ pool size %d", name, tr, te, ratschExpect[name].n)
		}
	}
	for alias, canon := range map[string]string{"diabetes": "diabetis", "breast_cancer": "breast-cancer", "flare_solar": "flare-solar", "cancer": "breast-cancer", "flare": "flare-solar", "Heart": "heart"} {
		tr, te, ok := RatschSizes(alias)
		if want := ratschPublished[canon]; !ok || [2]int{tr, te} != want {
			t.Errorf("RatschSizes(%q) = %d, %d, %v; want %v", alias, tr, te, ok, want)
		}
	}
	if _, _, ok := RatschSizes("iris"); ok {
		t.Error("RatschSizes accepted an unknown name")
	}
}

func TestLoadRatsch(t *testing.T) {
	dir := testDataDir(t)
	for _, name := range RatschNames() {
		t.Run(name, func(t *testing.T) {
			want := ratschExpect[name]
			ds, err := LoadRatsch(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Name != name || ds.N != want.n || ds.D != want.d || ds.C != 2 {
				t.Fatalf("%s: N=%d D=%d C=%d, want %s %d %d 2", ds.Name, ds.N, ds.D, ds.C, name, want.n, want.d)
			}
			if got := ds.ClassCounts(); !slices.Equal(got, want.counts) {
				t.Errorf("class counts [−1, +1] = %v, want %v", got, want.counts)
			}
			if !slices.Equal(ds.LabelValues, []float64{-1, 1}) {
				t.Errorf("LabelValues = %v, want [-1 1]", ds.LabelValues)
			}
		})
	}
	// Spot values from the files' first rows, so a column shift or a label
	// inversion cannot pass on counts alone.
	for _, c := range []struct {
		name string
		x0   []float64
		y0   int
	}{
		{"thyroid", []float64{-0.63971925, -0.49271686, -0.092584553, -0.12482038, -0.20332413}, 0},
		{"banana", []float64{-2.1061624, -1.5086741}, 1},
		{"diabetes", []float64{6, 148, 72, 35, 0, 33.6, 0.627, 50}, 1},
		{"heart", []float64{-1.0355982, 0.68822166, 0.86931332}, 0},
	} {
		ds, err := LoadRatsch(dir, c.name)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range c.x0 {
			if ds.Row(0)[j] != v {
				t.Errorf("%s: X[0][%d] = %v, want %v", c.name, j, ds.Row(0)[j], v)
			}
		}
		if ds.Y[0] != c.y0 {
			t.Errorf("%s: Y[0] = %d, want %d", c.name, ds.Y[0], c.y0)
		}
	}
	for alias, canon := range map[string]string{"breast_cancer": "breast-cancer", "flare_solar": "flare-solar", "diabetes": "diabetis"} {
		ds, err := LoadRatsch(dir, alias)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Name != canon || ds.N != ratschExpect[canon].n {
			t.Errorf("LoadRatsch(%q): %s with N=%d, want %s with %d", alias, ds.Name, ds.N, canon, ratschExpect[canon].n)
		}
	}
}

// TestRatschOfficialSplits checks the official realisations: published
// sizes, and train ∪ test = the LoadRatsch pool — row for row (in order) for
// heart and ringnorm realisation 1, whose pool it is, as a multiset for the
// other heart realisations, and by class counts for banana, german and
// titanic, whose pools come from another source with other rounding.
func TestRatschOfficialSplits(t *testing.T) {
	dir := testDataDir(t)
	for _, c := range []struct {
		name string
		ks   []int
	}{
		{"heart", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"ringnorm", []int{1, 10}},
		{"banana", []int{1}},
		{"german", []int{1}},
		{"titanic", []int{1}},
	} {
		pool, err := LoadRatsch(dir, c.name)
		if err != nil {
			t.Fatal(err)
		}
		sizes := ratschPublished[c.name]
		for _, k := range c.ks {
			train, test, official, err := RatschSplit(dir, c.name, k, 99)
			if err != nil {
				t.Fatal(err)
			}
			if !official || train.N != sizes[0] || test.N != sizes[1] {
				t.Fatalf("%s k=%d: official=%v, %d/%d; want official %d/%d", c.name, k, official, train.N, test.N, sizes[0], sizes[1])
			}
			if train.D != pool.D || test.D != pool.D || train.C != 2 || test.C != 2 {
				t.Fatalf("%s k=%d: D %d/%d C %d/%d, want D %d C 2", c.name, k, train.D, test.D, train.C, test.C, pool.D)
			}
			switch {
			case (c.name == "heart" || c.name == "ringnorm") && k == 1:
				if !sameData(concatDatasets(train, test), pool) {
					t.Errorf("%s: realisation 1 train+test is not the LoadRatsch pool row for row", c.name)
				}
			case c.name == "heart" || c.name == "ringnorm":
				checkSameRows(t, pool, train, test)
			default:
				got := train.ClassCounts()
				for j, v := range test.ClassCounts() {
					got[j] += v
				}
				if !slices.Equal(got, ratschExpect[c.name].counts) {
					t.Errorf("%s k=1: train+test class counts %v, pool %v", c.name, got, ratschExpect[c.name].counts)
				}
			}
		}
	}
}

// TestRatschRandomSplits checks the seeded realisations of every data set
// at a k without official files: published sizes, a partition of the pool
// (by index and by content), determinism, and variation with k and seed.
func TestRatschRandomSplits(t *testing.T) {
	dir := testDataDir(t)
	const seed = 20150101
	for _, name := range RatschNames() {
		t.Run(name, func(t *testing.T) {
			canon, spec, err := ratschLookup(name)
			if err != nil {
				t.Fatal(err)
			}
			k := spec.officialSplits + 1
			pool, err := LoadRatsch(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			train, test, official, err := RatschSplit(dir, name, k, seed)
			if err != nil {
				t.Fatal(err)
			}
			sizes := ratschPublished[name]
			if official || train.N != sizes[0] || test.N != sizes[1] {
				t.Fatalf("k=%d: official=%v, %d/%d; want random %d/%d", k, official, train.N, test.N, sizes[0], sizes[1])
			}
			tr, te := ratschSplitIndices(canon, spec, k, seed)
			checkPartition(t, pool.N, tr, te)
			if !sameData(train, pool.Subset(tr)) || !sameData(test, pool.Subset(te)) {
				t.Fatal("split rows are not the pool rows of its indices")
			}
			checkSameRows(t, pool, train, test)

			train2, test2, _, err := RatschSplit(dir, name, k, seed)
			if err != nil {
				t.Fatal(err)
			}
			if !sameData(train, train2) || !sameData(test, test2) {
				t.Error("same (name, k, seed) gave a different split")
			}
			otherK, _, _, err := RatschSplit(dir, name, k+1, seed)
			if err != nil {
				t.Fatal(err)
			}
			if sameData(train, otherK) {
				t.Errorf("k=%d and k=%d gave the same training set", k, k+1)
			}
			otherSeed, _, _, err := RatschSplit(dir, name, k, seed+1)
			if err != nil {
				t.Fatal(err)
			}
			if sameData(train, otherSeed) {
				t.Error("seeds differing by one gave the same training set")
			}
		})
	}
	// Aliases name the same data set, so they must give the same split.
	a, _, _, err := RatschSplit(dir, "diabetes", 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _, err := RatschSplit(dir, "diabetis", 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !sameData(a, b) {
		t.Error(`"diabetes" and "diabetis" gave different splits`)
	}
}

// TestRatschSplitIndices checks the split draw without data: over many k the
// indices stay a partition and no two realisations coincide.
func TestRatschSplitIndices(t *testing.T) {
	_, spec, _ := ratschLookup("thyroid")
	seen := map[string]int{}
	for k := 1; k <= 100; k++ {
		tr, te := ratschSplitIndices("thyroid", spec, k, 7)
		if len(tr) != 140 || len(te) != 75 {
			t.Fatalf("k=%d: %d/%d, want 140/75", k, len(tr), len(te))
		}
		checkPartition(t, 215, tr, te)
		s := slices.Clone(tr)
		slices.Sort(s)
		key := fmt.Sprint(s)
		if j, dup := seen[key]; dup {
			t.Fatalf("realisations %d and %d have the same training set", j, k)
		}
		seen[key] = k
	}
}

func TestLoadBanana(t *testing.T) {
	dir := testDataDir(t)
	ds, err := LoadBanana(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != 400 || ds.D != 2 || ds.C != 2 {
		t.Fatalf("N=%d D=%d C=%d, want 400 2 2", ds.N, ds.D, ds.C)
	}
	if got := ds.ClassCounts(); !slices.Equal(got, []int{183, 217}) {
		t.Errorf("class counts %v, want 183 zeros and 217 ones", got)
	}
	if x := ds.Row(0); math.Abs(x[0]-0.65890573) > 1e-15 || math.Abs(x[1]+0.98507109) > 1e-15 {
		t.Errorf("first row %v, want (0.65890573, -0.98507109)", x)
	}
	// PROVENANCE: it is Rätsch banana realisation 1's training part, same
	// order, labels 0 ↔ −1 and 1 ↔ +1.
	train, _, official, err := RatschSplit(dir, "banana", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !official || train.N != ds.N {
		t.Fatalf("banana realisation 1: official=%v N=%d", official, train.N)
	}
	for i := range ds.N {
		if ds.Y[i] != train.Y[i] {
			t.Fatalf("row %d: label %d, realisation 1 has %d", i, ds.Y[i], train.Y[i])
		}
		for j := range 2 {
			if d := math.Abs(ds.Row(i)[j] - train.Row(i)[j]); d > 1e-6 {
				t.Fatalf("row %d column %d: %v vs realisation 1's %v", i, j, ds.Row(i)[j], train.Row(i)[j])
			}
		}
	}
}

// TestRatschErrors checks that each failure names what is wrong: the known
// names for an unknown one, the missing file, and file:line:column of a bad
// label, using small fixtures.
func TestRatschErrors(t *testing.T) {
	empty := t.TempDir()

	for _, call := range []func() error{
		func() error { _, err := LoadRatsch(empty, "iris"); return err },
		func() error { _, _, _, err := RatschSplit(empty, "iris", 1, 0); return err },
	} {
		err := call()
		if err == nil || !strings.Contains(err.Error(), `"iris"`) || !strings.Contains(err.Error(), "thyroid, heart, twonorm") {
			t.Errorf("unknown name: error %v should quote the name and list the known ones", err)
		}
	}
	if _, _, _, err := RatschSplit(empty, "heart", 0, 0); err == nil || !strings.Contains(err.Error(), "from 1") {
		t.Errorf("k=0: error %v, want one saying realisations start at 1", err)
	}

	for _, c := range []struct {
		what string
		call func() error
		file string
	}{
		{"full pool", func() error { _, err := LoadRatsch(empty, "breast_cancer"); return err }, filepath.Join("raetsch", "full", "breast_cancer.csv")},
		{"split pool", func() error { _, err := LoadRatsch(empty, "ringnorm"); return err }, filepath.Join("raetsch", "splits", "ringnorm", "ringnorm_train_data_1.asc")},
		{"official split", func() error { _, _, _, err := RatschSplit(empty, "heart", 7, 0); return err }, filepath.Join("raetsch", "splits", "heart", "heart_train_data_7.asc")},
		{"random split", func() error { _, _, _, err := RatschSplit(empty, "german", 2, 0); return err }, filepath.Join("raetsch", "full", "german.csv")},
		{"banana", func() error { _, err := LoadBanana(empty); return err }, filepath.Join("banana", "banana_X_train")},
	} {
		err := c.call()
		var me *MissingDataError
		if !errors.As(err, &me) || me.Path != filepath.Join(empty, c.file) || !strings.Contains(err.Error(), c.file) {
			t.Errorf("%s: error %v, want a MissingDataError naming %s", c.what, err, c.file)
		}
	}

	dir := t.TempDir()
	full := filepath.Join(dir, "raetsch", "full")
	heart := filepath.Join(dir, "raetsch", "splits", "heart")
	banana := filepath.Join(dir, "banana")
	mkdirs(t, full, heart, banana)
	thyroid := writeFile(t, full, "thyroid.csv", "x1,x2,x3,x4,x5,y\n1,2,3,4,5,-1\n1,2,3,4,5,2\n")
	flare := writeFile(t, full, "flare_solar.csv", "x1,x2,x3,x4,x5,x6,x7,x8,x9,y\n1,3,1,1,2,1,0,0,0,0\n")
	short := writeFile(t, full, "titanic.csv", "x1,x2,x3,y\n1,2,3,-1\n1,2,3,1\n")
	row := strings.Repeat("  1.0000000e+00", 13) + "\n"
	writeFile(t, heart, "heart_train_data_1.asc", row+row+row)
	hlabels := writeFile(t, heart, "heart_train_labels_1.asc", "  1.0000000e+00\n  5.0000000e-01\n -1.0000000e+00\n")
	writeFile(t, banana, "banana_X_train", "1.0,2.0\n3.0,4.0\n")
	bananaY := writeFile(t, banana, "banana_Y_train", "1.0\n-1.0\n")

	for _, c := range []struct {
		what string
		call func() error
		pos  string
	}{
		{"csv label 2", func() error { _, err := LoadRatsch(dir, "thyroid"); return err }, thyroid + ":3:6"},
		{"csv label 0", func() error { _, err := LoadRatsch(dir, "flare-solar"); return err }, flare + ":2:10"},
		{"asc label 0.5", func() error { _, _, _, err := RatschSplit(dir, "heart", 1, 0); return err }, hlabels + ":2:1"},
		{"banana label -1", func() error { _, err := LoadBanana(dir); return err }, bananaY + ":2:1"},
	} {
		err := c.call()
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.pos+": ") {
			t.Errorf("%s: error %v, want a ParseError at %s", c.what, err, c.pos)
		}
	}
	if _, err := LoadRatsch(dir, "titanic"); err == nil || !strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), "2201") {
		t.Errorf("truncated pool: error %v, want one naming %s and the published size 2201", err, short)
	}
}

// ExampleRatschSizes prints the published realisation sizes of the SVGP
// paper's Table 1 data sets.
func ExampleRatschSizes() {
	for _, name := range RatschNames()[:9] {
		train, test, _ := RatschSizes(name)
		fmt.Printf("%s %d/%d\n", name, train, test)
	}
	// Output:
	// thyroid 140/75
	// heart 170/100
	// twonorm 400/7000
	// ringnorm 400/7000
	// german 700/300
	// waveform 400/4600
	// breast-cancer 200/77
	// flare-solar 666/400
	// diabetis 468/300
}

// ExampleRatschSplit shows the protocol around a realisation: load it, then
// standardise with the training part's statistics only. (Not run: it needs
// the data directory.)
func ExampleRatschSplit() {
	train, test, official, err := RatschSplit("", "heart", 1, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	std, _ := Standardize(train, test)
	train, test = std[0], std[1]
	fmt.Println(train.N, test.N, official)
}
