package datasets

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Item 4 of the hardening issue: WriteCSV checks every value before the
// target is touched, writes through a temporary file renamed over it, and
// leaves neither an emptied file nor a temporary one behind on failure.
func TestWriteCSVAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.csv")
	if err := os.WriteFile(out, []byte("precious\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	err := WriteCSV(out, []float64{0.5, 0.5, math.NaN(), 1}, 2, 2)
	if err == nil || err.Error() != out+": row 2 (1-based), p0: probability NaN is not finite" {
		t.Errorf("NaN: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "precious\n" {
		t.Errorf("the existing file became %q", b)
	}
	if err := WriteCSV(dir, []float64{1, 0}, 1, 2); err == nil || err.Error() != "cannot write "+dir+": it is a directory" {
		t.Errorf("directory: %v", err)
	}
	missing := filepath.Join(dir, "nope", "p.csv")
	if err := WriteCSV(missing, []float64{1, 0}, 1, 2); err == nil || err.Error() != "cannot write "+missing+": directory "+filepath.Dir(missing)+" does not exist" {
		t.Errorf("missing directory: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	// A successful write replaces the file, keeping its permissions.
	if err := WriteCSV(out, []float64{0.25, 0.75}, 1, 2); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "p0,p1\n0.25,0.75\n" {
		t.Errorf("written %q", b)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o640 {
		t.Errorf("permissions %v, want the replaced file's 0640", st.Mode().Perm())
	}
}

// ReadCSVLines reports each data row's line, counting the header and blank
// lines, so a later problem with a row can be reported as file:line.
func TestReadCSVLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(p, []byte("a,b,y\n1,2,0\n\n3,4,1\n\"5\",6,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, lines, err := ReadCSVLines(p, CSVOptions{})
	if err != nil || ds.N != 3 || !slices.Equal(lines, []int{2, 4, 5}) {
		t.Errorf("rows %v, lines %v, %v", ds, lines, err)
	}
}

// Item 3: the classes without rows are named, as ranges where long.
func TestMissingClasses(t *testing.T) {
	ds := &Dataset{Name: "d", N: 3, D: 1, C: 1000001, X: make([]float64, 3), Y: []int{0, 1, 1000000}}
	want := "f.csv: classes 2–999999 have no rows: the labels make 1000001 classes (0..1000000), but only 0, 1 and 1000000 occur; number the classes 0..C−1 with every class present"
	if err := ds.MissingClasses("f.csv", ""); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	ds.C, ds.Y = 3, []int{2, 2, 2}
	want = "classes 0 and 1 have no rows: the labels make 3 classes (0..2), but only 2 occurs; a classifier needs rows of at least two classes"
	if err := ds.MissingClasses("", "ignored with one class"); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	ds.Y = []int{0, 1, 2}
	if err := ds.MissingClasses("", ""); err != nil {
		t.Errorf("every class present: %v", err)
	}
	many := []int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}
	if got := ClassList(many); !strings.HasSuffix(got, "14, … (10 in all)") {
		t.Errorf("ClassList(%v) = %q", many, got)
	}
}
