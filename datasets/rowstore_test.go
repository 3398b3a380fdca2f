package datasets

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// parseNumericRow is a generic parser for tests: every field but the last
// is a feature and the last is an integer label. It leaves label range
// checks to BuildRowStore, which is what the tests exercise.
func parseNumericRow(line int, fields []string) ([]float64, int, error) {
	x := make([]float64, len(fields)-1)
	for j := range x {
		v, err := strconv.ParseFloat(fields[j], 64)
		if err != nil {
			return nil, 0, perr("", line, j+1, fields[j], "is not a number")
		}
		x[j] = v
	}
	y, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil {
		return nil, 0, perr("", line, len(fields), fields[len(fields)-1], "is not an integer label")
	}
	return x, y, nil
}

// smallCSV is 20 rows of three features with labels 0..2 and values that
// are not exactly representable in binary, so an exact round trip means
// the store keeps all 64 bits.
func smallCSV() (string, [][]float64, []int) {
	var b strings.Builder
	b.WriteString("a,b,c,label\n")
	var xs [][]float64
	var ys []int
	for i := range 20 {
		row := []float64{0.1 * float64(i), -3.7 + 1.3*float64(i*i%7), 1e-3 * float64(i%5)}
		y := i % 3
		for _, v := range row {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + ",")
		}
		b.WriteString(strconv.Itoa(y) + "\n")
		xs = append(xs, row)
		ys = append(ys, y)
	}
	return b.String(), xs, ys
}

func everyFourth(row int) bool { return row%4 == 3 }

func buildSmall(t *testing.T) (string, [][]float64, []int) {
	t.Helper()
	text, xs, ys := smallCSV()
	out := filepath.Join(t.TempDir(), "small.rows")
	if err := BuildRowStore(strings.NewReader(text), "small.csv", parseNumericRow, out, everyFourth); err != nil {
		t.Fatal(err)
	}
	return out, xs, ys
}

func TestRowStoreRoundTrip(t *testing.T) {
	out, xs, ys := buildSmall(t)
	rs, err := OpenRowStore(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if rs.N() != 20 || rs.D() != 3 || rs.C() != 3 {
		t.Fatalf("N, D, C = %d, %d, %d; want 20, 3, 3", rs.N(), rs.D(), rs.C())
	}
	all := make([]int, 20)
	for i := range all {
		all[i] = i
	}
	x := make([]float64, 20*3)
	y := make([]int, 20)
	if err := rs.Read(all, x, y, false); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for j := range 3 {
			if x[i*3+j] != xs[i][j] {
				t.Errorf("row %d col %d = %v, want %v", i, j, x[i*3+j], xs[i][j])
			}
		}
		if y[i] != ys[i] {
			t.Errorf("row %d label %d, want %d", i, y[i], ys[i])
		}
	}

	// Training statistics computed here independently (two-pass, population).
	var train []int
	for i := range 20 {
		if !everyFourth(i) {
			train = append(train, i)
		}
	}
	wantMean := make([]float64, 3)
	wantSD := make([]float64, 3)
	for _, i := range train {
		for j := range 3 {
			wantMean[j] += xs[i][j] / float64(len(train))
		}
	}
	for _, i := range train {
		for j := range 3 {
			d := xs[i][j] - wantMean[j]
			wantSD[j] += d * d / float64(len(train))
		}
	}
	for j := range 3 {
		wantSD[j] = math.Sqrt(wantSD[j])
		if math.Abs(rs.Mean()[j]-wantMean[j]) > 1e-12*math.Max(1, math.Abs(wantMean[j])) {
			t.Errorf("mean[%d] = %v, want %v", j, rs.Mean()[j], wantMean[j])
		}
		if math.Abs(rs.Std()[j]-wantSD[j]) > 1e-12*math.Max(1, wantSD[j]) {
			t.Errorf("std[%d] = %v, want %v", j, rs.Std()[j], wantSD[j])
		}
	}

	// Standardised training rows have mean 0 and population sd 1.
	xt := make([]float64, len(train)*3)
	yt := make([]int, len(train))
	if err := rs.Read(train, xt, yt, true); err != nil {
		t.Fatal(err)
	}
	for j := range 3 {
		var m, v float64
		for k := range train {
			m += xt[k*3+j] / float64(len(train))
		}
		for k := range train {
			v += (xt[k*3+j] - m) * (xt[k*3+j] - m) / float64(len(train))
		}
		if math.Abs(m) > 1e-12 || math.Abs(v-1) > 1e-12 {
			t.Errorf("standardised column %d: mean %v, variance %v; want 0, 1", j, m, v)
		}
	}

	// Sample agrees with Read and is a valid Dataset.
	ds, err := rs.Sample([]int{2, 7}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != 2 || ds.D != 3 || ds.C != 3 || ds.Name != "small" {
		t.Errorf("Sample: N, D, C, Name = %d, %d, %d, %q", ds.N, ds.D, ds.C, ds.Name)
	}
	for j := range 3 {
		if want := (xs[7][j] - rs.Mean()[j]) / rs.Std()[j]; ds.X[3+j] != want {
			t.Errorf("Sample row 7 col %d = %v, want %v", j, ds.X[3+j], want)
		}
	}

	train2, test2 := rs.Count(everyFourth)
	if train2 != 15 || test2 != 5 {
		t.Errorf("Count = %d, %d; want 15, 5", train2, test2)
	}
	var got []int
	for i := range rs.Indices(everyFourth, true) {
		got = append(got, i)
	}
	if fmt.Sprint(got) != "[3 7 11 15 19]" {
		t.Errorf("test Indices = %v", got)
	}
	n := 0
	for range rs.Indices(nil, false) {
		n++
	}
	if n != 20 {
		t.Errorf("Indices(nil, false) yields %d rows, want 20", n)
	}
}

func TestRowStoreReadShuffledAndDuplicates(t *testing.T) {
	out, xs, ys := buildSmall(t)
	rs, err := OpenRowStore(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	idx := []int{5, 0, 5, 19, 3, 3, 12}
	x := make([]float64, len(idx)*3)
	y := make([]int, len(idx))
	if err := rs.Read(idx, x, y, false); err != nil {
		t.Fatal(err)
	}
	for k, i := range idx {
		for j := range 3 {
			if x[k*3+j] != xs[i][j] {
				t.Errorf("batch position %d (row %d) col %d = %v, want %v", k, i, j, x[k*3+j], xs[i][j])
			}
		}
		if y[k] != ys[i] {
			t.Errorf("batch position %d (row %d) label %d, want %d", k, i, y[k], ys[i])
		}
	}
	if err := rs.Read([]int{20}, make([]float64, 3), make([]int, 1), false); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("index 20 of 20: %v", err)
	}
	if err := rs.Read([]int{-1}, make([]float64, 3), make([]int, 1), false); err == nil {
		t.Error("index -1 accepted")
	}
	if err := rs.Read([]int{1, 2}, make([]float64, 3), make([]int, 2), false); err == nil || !strings.Contains(err.Error(), "len(x)") {
		t.Errorf("short x: %v", err)
	}
	rs.Close()
	if err := rs.Read([]int{1}, make([]float64, 3), make([]int, 1), false); err == nil {
		t.Error("Read after Close succeeded")
	}
	if err := rs.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRowStoreBuildErrors(t *testing.T) {
	cases := []struct {
		what, text string
		want       []string
	}{
		{"bad number", "a,b,y\n1,2,0\n3,abc,1\n", []string{"data.csv:3:2", `"abc"`, "not a number"}},
		{"negative label", "a,b,y\n1,2,0\n3,4,1\n5,6,-1\n", []string{"data.csv:4", "label -1", "negative"}},
		{"too few fields", "a,b,y\n1,2,0\n3,4\n", []string{"data.csv:3", "2 fields", "header has 3"}},
		{"too many fields", "a,b,y\n1,2,0\n\n3,4,5,6\n", []string{"data.csv:4", "4 fields"}},
		{"header only", "a,b,y\n", []string{"data.csv", "no data rows"}},
		{"empty", "", []string{"data.csv", "empty"}},
		{"infinite feature", "a,b,y\n1,2,0\n3,Inf,1\n", []string{"data.csv:3", "feature 2", "+Inf"}},
		{"malformed quotes", "a,b,y\n1,\"2,0\n", []string{"data.csv:2", "malformed CSV"}},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "x.rows")
			err := BuildRowStore(strings.NewReader(c.text), "data.csv", parseNumericRow, out, nil)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 0 {
				t.Errorf("files left behind after the error: %v", ents)
			}
		})
	}
	// A non-ParseError from the parser is wrapped with file and line and
	// stays inspectable.
	sentinel := errors.New("boom")
	out := filepath.Join(t.TempDir(), "x.rows")
	err := BuildRowStore(strings.NewReader("a\n1\n"), "f.csv", func(int, []string) ([]float64, int, error) { return nil, 0, sentinel }, out, nil)
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "f.csv:2") {
		t.Errorf("wrapped parser error: %v", err)
	}
	// A failing build leaves an existing store untouched.
	good, _, _ := buildSmall(t)
	before, _ := os.ReadFile(good)
	if err := BuildRowStore(strings.NewReader("a,y\nx,0\n"), "bad.csv", parseNumericRow, good, nil); err == nil {
		t.Fatal("bad CSV accepted")
	}
	after, _ := os.ReadFile(good)
	if string(before) != string(after) {
		t.Error("a failed rebuild changed the existing store")
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(good), "*.tmp")); len(m) != 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
}

func TestOpenRowStoreRejectsDamage(t *testing.T) {
	out, _, _ := buildSmall(t)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	magic := append([]byte("NOTROWS1"), data[8:]...)
	cases := []struct {
		path string
		want string
	}{
		{write("truncated.rows", data[:len(data)-3]), "truncated"},
		{write("extra.rows", append(append([]byte(nil), data...), 0)), "implies"},
		{write("magic.rows", magic), "bad magic"},
		{write("tiny.rows", data[:10]), "too short"},
		{filepath.Join(dir, "absent.rows"), "no such file"},
	}
	for _, c := range cases {
		rs, err := OpenRowStore(c.path)
		if err == nil {
			rs.Close()
			t.Errorf("%s accepted", c.path)
			continue
		}
		t.Log(err)
		if !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q should name the file and say %q", filepath.Base(c.path), err, c.want)
		}
	}
}

func TestHashSplitRowStore(t *testing.T) {
	const n = 100000
	for _, frac := range []float64{0.1, 0.3, 0.5} {
		split := HashSplit(42, frac)
		again := HashSplit(42, frac)
		test := 0
		for i := range n {
			if split(i) {
				test++
			}
			if split(i) != again(i) {
				t.Fatalf("HashSplit(42, %v) not deterministic at row %d", frac, i)
			}
		}
		if got := float64(test) / n; math.Abs(got-frac) > 0.01 {
			t.Errorf("HashSplit(42, %v): test fraction %v", frac, got)
		}
	}
	// Neighbouring seeds must give independent splits: the overlap of two
	// test sets of fraction 1/2 is about 1/4, not about 1/2.
	a, b := HashSplit(0, 0.5), HashSplit(1, 0.5)
	both := 0
	for i := range n {
		if a(i) && b(i) {
			both++
		}
	}
	if got := float64(both) / n; math.Abs(got-0.25) > 0.01 {
		t.Errorf("seeds 0 and 1 share %v of rows as test, want about 0.25", got)
	}
	none, all := HashSplit(7, 0), HashSplit(7, 1)
	for i := range 1000 {
		if none(i) || !all(i) {
			t.Fatalf("testFrac 0 or 1 not respected at row %d", i)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("HashSplit(0, 1.5) did not panic")
		}
	}()
	HashSplit(0, 1.5)
}

// syntheticRows streams n CSV rows of four features and a binary label
// without holding them in memory.
func syntheticRows(n int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		w := io.Writer(pw)
		fmt.Fprintln(w, "a,b,c,d,y")
		r := rand.New(rand.NewPCG(1, 2))
		for i := range n {
			fmt.Fprintf(w, "%g,%g,%g,%d,%d\n", r.NormFloat64(), r.Float64(), float64(i)/1000, i%17, i%2)
		}
		pw.Close()
	}()
	return pr
}

func TestRowStoreReadDoesNotAllocatePerRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 200 000-row store")
	}
	const n, batches, batch = 200000, 2000, 100
	out := filepath.Join(t.TempDir(), "big.rows")
	if err := BuildRowStore(syntheticRows(n), "synthetic.csv", parseNumericRow, out, HashSplit(3, 0.2)); err != nil {
		t.Fatal(err)
	}
	rs, err := OpenRowStore(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if rs.N() != n || rs.D() != 4 || rs.C() != 2 {
		t.Fatalf("N, D, C = %d, %d, %d", rs.N(), rs.D(), rs.C())
	}
	r := rand.New(rand.NewPCG(4, 5))
	idx := make([]int, batch)
	x := make([]float64, batch*4)
	y := make([]int, batch)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b := range batches {
		for k := range idx {
			idx[k] = r.IntN(n)
		}
		if err := rs.Read(idx, x, y, b%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d reads of %d rows allocated %d bytes", batches, batch, grew)
	if grew >= 1<<20 {
		t.Errorf("%d reads of %d rows allocated %d bytes, want < 1 MB (no per-row allocation)", batches, batch, grew)
	}
	// Spot-check a row against the generator: column 3 is i/1000.
	if err := rs.Read([]int{123456}, x[:4], y[:1], false); err != nil {
		t.Fatal(err)
	}
	if x[2] != 123.456 || y[0] != 0 {
		t.Errorf("row 123456 = %v label %d", x[:4], y[0])
	}
}
