package datasets

import (
	"errors"
	"strings"
	"testing"
)

func TestReadLIBSVM(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a.svm", "# header comment\n+1 1:0.5 3:-2 # trailing\n-1 2:1e-3\n\n2 1:1\n-1\n")
	ds, err := ReadLIBSVM(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != 4 || ds.D != 3 || ds.C != 3 {
		t.Fatalf("N=%d D=%d C=%d, want 4 3 3", ds.N, ds.D, ds.C)
	}
	// Sorted distinct labels -1 < 1 < 2 map to 0, 1, 2.
	if want := []float64{-1, 1, 2}; len(ds.LabelValues) != 3 || ds.LabelValues[0] != want[0] || ds.LabelValues[1] != want[1] || ds.LabelValues[2] != want[2] {
		t.Errorf("LabelValues = %v, want %v", ds.LabelValues, want)
	}
	wantY := []int{1, 0, 2, 0}
	for i, y := range wantY {
		if ds.Y[i] != y {
			t.Errorf("Y[%d] = %d, want %d", i, ds.Y[i], y)
		}
	}
	wantX := []float64{0.5, 0, -2, 0, 1e-3, 0, 1, 0, 0, 0, 0, 0}
	for k, v := range wantX {
		if ds.X[k] != v {
			t.Errorf("X[%d] = %v, want %v", k, ds.X[k], v)
		}
	}
	ds, err = ReadLIBSVM(p, 5)
	if err != nil || ds.D != 5 || ds.X[5+1] != 1e-3 {
		t.Fatalf("dim 5: D=%d err=%v", ds.D, err)
	}
}

func TestReadLIBSVMErrors(t *testing.T) {
	cases := []struct {
		name, content string
		dim           int
		pos, msg      string
	}{
		{"index above dim", "1 1:1\n1 4:2\n", 3, ":2:2", "above the dimension 3"},
		{"not increasing", "1 2:1 2:3\n", 0, ":1:3", "strictly increasing"},
		{"not a pair", "1 1:1\n0 1:1 3=2\n", 0, ":2:3", "not an index:value pair"},
		{"zero index", "1 0:1\n", 0, ":1:2", "invalid feature index"},
		{"bad value", "# c\n1 1:abc\n", 0, ":2:2", `"1:abc" is not a number`},
		{"NaN value", "1 1:NaN\n", 0, ":1:2", "not a finite number"},
		{"bad label", "1 1:1\nabc 1:1\n", 0, ":2:1", `"abc" is not a number`},
		{"multi-label", "1,2 1:1\n", 0, ":1:1", "multi-label"},
		{"empty", "# nothing\n\n", 0, "", "no data lines"},
	}
	dir := t.TempDir()
	for k, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "bad"+string(rune('a'+k))+".svm", tc.content)
			_, err := ReadLIBSVM(p, tc.dim)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want *ParseError", err, err)
			}
			if prefix := p + tc.pos + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
		})
	}
}
