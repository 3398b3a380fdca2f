package datasets

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeDelgado writes files (relative path → content) under a new data
// directory and returns it.
func writeDelgado(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, "uci-delgado", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const delgadoToy = "\tf1\tf2\tf3\tclase\n" +
	"1\t0.5\t-1\t2e-1\t0\n" +
	"2\t1.5\t0\t-0.25\t2\n" +
	"3\t-0.5\t1\t0\t1\n"

func TestDelgadoSingleFile(t *testing.T) {
	dir := writeDelgado(t, map[string]string{
		"toy/toy_R.dat":   delgadoToy,
		"crlf/crlf_R.dat": strings.ReplaceAll(delgadoToy, "\n", "\r\n") + "\r\n",
	})
	for _, name := range []string{"toy", "crlf"} {
		ds, err := LoadDelgado(dir, name, false)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Name != name || ds.N != 3 || ds.D != 3 || ds.C != 3 {
			t.Fatalf("%s: N=%d D=%d C=%d", name, ds.N, ds.D, ds.C)
		}
		if want := []float64{0.5, -1, 0.2, 1.5, 0, -0.25, -0.5, 1, 0}; !slices.Equal(ds.X, want) {
			t.Errorf("%s: X = %v, want %v", name, ds.X, want)
		}
		if !slices.Equal(ds.Y, []int{0, 2, 1}) || !slices.Equal(ds.FeatureNames, []string{"f1", "f2", "f3"}) {
			t.Errorf("%s: Y = %v, names %v", name, ds.Y, ds.FeatureNames)
		}
	}
	ds, err := LoadDelgado(dir, "toy", true)
	if err != nil {
		t.Fatal(err)
	}
	if ds.D != 4 || ds.FeatureNames[0] != "row" || ds.Row(0)[0] != 1 || ds.Row(2)[0] != 3 || ds.Row(1)[1] != 1.5 {
		t.Errorf("with the row number: D=%d names %v X %v", ds.D, ds.FeatureNames, ds.X)
	}
}

// A train/test pair is one pool, training part first; the row numbers
// restart in the test part (as the paper's pipeline saw them).
func TestDelgadoPair(t *testing.T) {
	dir := writeDelgado(t, map[string]string{
		"two/two_train_R.dat": "\ta\tb\tclase\n1\t1\t2\t0\n2\t3\t4\t1\n",
		"two/two_test_R.dat":  "\ta\tb\tclase\n1\t5\t6\t1\n",
	})
	ds, err := LoadDelgado(dir, "two", true)
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != 3 || ds.D != 3 || ds.C != 2 || !slices.Equal(ds.X, []float64{1, 1, 2, 2, 3, 4, 1, 5, 6}) || !slices.Equal(ds.Y, []int{0, 1, 1}) {
		t.Errorf("pair: N=%d D=%d C=%d X=%v Y=%v", ds.N, ds.D, ds.C, ds.X, ds.Y)
	}
}

func TestDelgadoMissing(t *testing.T) {
	dir := writeDelgado(t, map[string]string{
		"half/half_test_R.dat": "\ta\tclase\n1\t1\t0\n2\t2\t1\n",
	})
	for name, want := range map[string]string{
		"half":   filepath.Join("half", "half_train_R.dat"),
		"absent": filepath.Join("absent", "absent_R.dat"),
	} {
		_, err := LoadDelgado(dir, name, false)
		var miss *MissingDataError
		if !errors.As(err, &miss) || !strings.HasSuffix(miss.Path, want) || !strings.Contains(err.Error(), "PROVENANCE") {
			t.Errorf("%s: error %v, want a missing-data error naming …/%s", name, err, want)
		}
	}
	st, err := DelgadoStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 19 {
		t.Fatalf("%d sets", len(st))
	}
	for _, s := range st {
		if s.Present || len(s.Missing) == 0 {
			t.Errorf("%s present in an empty directory: %+v", s.Name, s)
		}
	}
	if _, err := LoadDelgado(dir, "../half", false); err == nil {
		t.Error("a name with a path separator was accepted")
	}
}

// Malformed input is reported at file:line:column with the value.
func TestDelgadoBadInput(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"badval", "\tf1\tf2\tclase\n1\t0\t1\t0\n2\tabc\t1\t1\n", `badval_R.dat:3:2: "abc" is not a number`},
		{"badlabel", "\tf1\tclase\n1\t0\t0\n2\t1\t1.5\n", `badlabel_R.dat:3:3: "1.5" is not an integer class label`},
		{"fields", "\tf1\tf2\tclase\n1\t0\t1\t0\n2\t1\t1\n", "fields_R.dat:3: has 3 TAB-separated fields, want 4"},
		{"header", "f1\tf2\tclase\n1\t0\t1\n", `header_R.dat:1:1: "f1" is not the header's empty first field`},
		{"rownum", "\tf1\tclase\n1\t0\t0\nx\t1\t1\n", `rownum_R.dat:3:1: "x" is not a number`},
		{"empty", "", "empty_R.dat: is empty"},
		{"nodata", "\tf1\tclase\n", "nodata_R.dat: has a header but no data rows"},
		{"oneclass", "\tf1\tclase\n1\t0\t0\n", "1 class"},
		// A set of the paper must have its number of inputs and classes.
		{"twonorm", "\tf1\tclase\n1\t0\t0\n2\t1\t1\n", "twonorm_R.dat:1: has 1 inputs, but twonorm has 20"},
		{"magic", "\t" + strings.Repeat("f\t", 10) + "clase\n1\t" + strings.Repeat("0\t", 10) + "2\n", `magic_R.dat:2:12: "2" is not a class of magic (0..1)`},
	}
	for _, c := range cases {
		dir := writeDelgado(t, map[string]string{c.name + "/" + c.name + "_R.dat": c.body})
		_, err := LoadDelgado(dir, c.name, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestDelgadoNames(t *testing.T) {
	names := DelgadoNames()
	if len(names) != 19 || names[0] != "adult" || names[6] != "twonorm" || names[7] != "chess-krvk" || names[18] != "wine-quality-white" {
		t.Errorf("names %v", names)
	}
	binary := 0
	for _, n := range names {
		s, ok := DelgadoLookup(n)
		if !ok || s.N < 4000 || s.D < 6 || s.C < 2 {
			t.Errorf("%s: %+v", n, s)
		}
		if s.C == 2 {
			binary++
		}
	}
	if binary != 7 {
		t.Errorf("%d binary sets, want 7", binary)
	}
}

// The real twonorm file, if the data are present: 7400 rows, 20 inputs
// (21 with the row number), 2 classes with the documented counts; and the
// status of the files PROVENANCE lists as missing.
func TestDelgadoTwonormReal(t *testing.T) {
	dir, err := ResolveDataDir("")
	if err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(dir, "uci-delgado", "twonorm", "twonorm_R.dat")) {
		t.Skipf("no uci-delgado/twonorm under %s", dir)
	}
	for _, keep := range []bool{false, true} {
		ds, err := LoadDelgado(dir, "twonorm", keep)
		if err != nil {
			t.Fatal(err)
		}
		wantD := 20
		if keep {
			wantD = 21
		}
		if ds.N != 7400 || ds.D != wantD || ds.C != 2 || !slices.Equal(ds.ClassCounts(), []int{3703, 3697}) {
			t.Errorf("keep=%v: N=%d D=%d C=%d counts %v", keep, ds.N, ds.D, ds.C, ds.ClassCounts())
		}
		if keep && (ds.Row(0)[0] != 1 || ds.Row(7399)[0] != 7400) {
			t.Errorf("row-number column: first %v, last %v", ds.Row(0)[0], ds.Row(7399)[0])
		}
	}
	st, err := DelgadoStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		t.Logf("%-18s present=%v files=%v missing=%v", s.Name, s.Present, s.Files, s.Missing)
		if s.Name == "twonorm" && !s.Present {
			t.Error("twonorm not reported present")
		}
		if s.Name == "adult" && (s.Present || len(s.Missing) != 1 || !strings.HasSuffix(s.Missing[0], "adult_train_R.dat")) {
			t.Errorf("adult: %+v, want its training part missing", s)
		}
	}
}
