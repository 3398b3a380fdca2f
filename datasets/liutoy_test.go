package datasets

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The paper's toy: 400 points in the unit square, two inputs, three
// classes; the same seed gives the same draw and another seed another.
func TestLiuToyShapeAndDeterminism(t *testing.T) {
	a, err := LiuToy(LiuToyN, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.N != 400 || a.D != 2 || a.C != 3 || len(a.X) != 800 || len(a.Y) != 400 {
		t.Fatalf("N=%d D=%d C=%d, %d inputs, %d labels", a.N, a.D, a.C, len(a.X), len(a.Y))
	}
	for k, v := range a.X {
		if !(v >= 0 && v < 1) {
			t.Fatalf("input %d = %v outside [0, 1)", k, v)
		}
	}
	b, err := LiuToy(LiuToyN, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.X, b.X) || !slices.Equal(a.Y, b.Y) {
		t.Error("two draws at one seed differ")
	}
	c, err := LiuToy(LiuToyN, 8)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.X, c.X) || slices.Equal(a.Y, c.Y) {
		t.Error("seeds 7 and 8 give the same inputs or labels")
	}
	for _, n := range []int{0, 2, maxLiuToyN + 1} {
		if _, err := LiuToy(n, 1); err == nil {
			t.Errorf("n = %d accepted", n)
		}
	}
}

// classShares returns the share of each of c classes among labels.
func classShares(y []int, c int) []float64 {
	out := make([]float64, c)
	for _, v := range y {
		out[v] += 1 / float64(len(y))
	}
	return out
}

// Over many seeds every class has about a third of the points (the three
// draws are exchangeable), every class is present in nearly every draw, and
// the seed of liu_fig2_toys.yaml (3, split 0: 3·1000003) gives no class
// below a fifth.
func TestLiuToyBalance(t *testing.T) {
	const draws = 30
	mean := make([]float64, 3)
	absent := 0
	for s := range uint64(draws) {
		ds, err := LiuToy(LiuToyN, 1000+s)
		if err != nil {
			t.Fatal(err)
		}
		for c, v := range classShares(ds.Y, 3) {
			mean[c] += v / draws
			if v == 0 {
				absent++
			}
		}
	}
	for c, v := range mean {
		if v < 0.25 || v > 0.42 {
			t.Errorf("class %d: mean share %.3f over %d draws, want about 1/3", c, v, draws)
		}
	}
	if absent > 2 {
		t.Errorf("a class is missing in %d of %d draws", absent, draws)
	}
	ds, err := LiuToy(LiuToyN, 3*1_000_003)
	if err != nil {
		t.Fatal(err)
	}
	for c, v := range classShares(ds.Y, 3) {
		if v < 0.2 {
			t.Errorf("spec seed: class %d has share %.3f", c, v)
		}
	}
}

// The labels are the argmax of smooth functions (length-scale 0.2), so
// nearly every point shares its nearest neighbour's label; labels drawn
// independently of the inputs would agree a third of the time.
func TestLiuToyRegionsAreSpatial(t *testing.T) {
	ds, err := LiuToy(LiuToyN, 11)
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	for i := range ds.N {
		best, nn := 1e9, -1
		for j := range ds.N {
			if j == i {
				continue
			}
			dx, dy := ds.X[2*i]-ds.X[2*j], ds.X[2*i+1]-ds.X[2*j+1]
			if d := dx*dx + dy*dy; d < best {
				best, nn = d, j
			}
		}
		if ds.Y[nn] == ds.Y[i] {
			agree++
		}
	}
	if share := float64(agree) / float64(ds.N); share < 0.85 {
		t.Errorf("nearest neighbours agree on %.2f of the labels, want ≥ 0.85", share)
	}
}

// adultRows returns a Delgado file with n rows of adult's 14 inputs whose
// classes are labels[i % len(labels)].
func adultRows(n int, labels ...int) string {
	var b strings.Builder
	for j := 1; j <= 14; j++ {
		fmt.Fprintf(&b, "\tf%d", j)
	}
	b.WriteString("\tclase\n")
	for i := range n {
		fmt.Fprintf(&b, "%d", i+1)
		for j := range 14 {
			fmt.Fprintf(&b, "\t%g", float64(i)+float64(j)/100)
		}
		fmt.Fprintf(&b, "\t%d\n", labels[i%len(labels)])
	}
	return b.String()
}

// One half of a pair loads on its own where LoadDelgado needs both.
func TestLoadDelgadoPart(t *testing.T) {
	dir := writeDelgado(t, map[string]string{"adult/adult_test_R.dat": adultRows(5, 0, 1)})
	if _, err := LoadDelgado(dir, "adult", false); err == nil {
		t.Fatal("LoadDelgado accepted adult without its training part")
	}
	ds, err := LoadDelgadoPart(dir, "adult", "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "adult-test" || ds.N != 5 || ds.D != 14 || ds.C != 2 || !slices.Equal(ds.Y, []int{0, 1, 0, 1, 0}) || ds.Row(2)[1] != 2.01 {
		t.Errorf("N=%d D=%d C=%d Y=%v row 2 %v", ds.N, ds.D, ds.C, ds.Y, ds.Row(2))
	}
	row, err := LoadDelgadoPart(dir, "adult", "test", true)
	if err != nil {
		t.Fatal(err)
	}
	if row.D != 15 || row.FeatureNames[0] != "row" || row.Row(4)[0] != 5 || row.Row(4)[1] != 4 {
		t.Errorf("with the row number: D=%d names %v row 4 %v", row.D, row.FeatureNames[:2], row.Row(4))
	}
	var miss *MissingDataError
	if _, err := LoadDelgadoPart(dir, "adult", "train", false); !errors.As(err, &miss) {
		t.Errorf("missing training part: %v, want a MissingDataError", err)
	}
	for _, c := range []struct{ name, part string }{{"adult", "validation"}, {"toy", "test"}} {
		if _, err := LoadDelgadoPart(dir, c.name, c.part, false); err == nil {
			t.Errorf("%s/%s accepted", c.name, c.part)
		}
	}
	bad := writeDelgado(t, map[string]string{"adult/adult_test_R.dat": adultRows(3, 0, 2)})
	if _, err := LoadDelgadoPart(bad, "adult", "test", false); err == nil || !strings.Contains(err.Error(), "not a class of adult") {
		t.Errorf("class 2 of a binary set: %v", err)
	}
}
