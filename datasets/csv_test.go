package datasets

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadCSVErrors checks that each kind of malformed input is rejected
// with a *ParseError whose message starts with the exact file:line:column
// and says what is wrong.
func TestReadCSVErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		opt     CSVOptions
		pos     string // expected ":line:col" (or ":line" or "") after the path
		msg     string // expected substring of the rest of the message
	}{
		{"ragged long", "x1,x2,y\n1,2,0\n3,4,5,1\n", CSVOptions{}, ":3:4", "wrong number of columns: expected 3, got 4"},
		{"ragged short", "1,2,0\n3,1\n", CSVOptions{}, ":2:3", "wrong number of columns: expected 3, got 2"},
		{"non-numeric", "x1,x2,y\n1,2,0\n1,abc,1\n", CSVOptions{}, ":3:2", `"abc" is not a number`},
		{"NaN", "1,2,0\nNaN,2,1\n", CSVOptions{}, ":2:1", `"NaN" is not a finite number`},
		{"nan lower", "1,2,0\n1,nan,1\n", CSVOptions{}, ":2:2", `"nan" is not a finite number`},
		{"Inf", "1,2,0\n1,-Inf,1\n", CSVOptions{}, ":2:2", `"-Inf" is not a finite number`},
		{"overflow", "1,2,0\n1,1e400,1\n", CSVOptions{}, ":2:2", `"1e400" is out of the float64 range`},
		{"label 1.5", "a,b,y\n1,2,0\n1,2,1.5\n", CSVOptions{}, ":3:3", `"1.5" is not an integer class label`},
		{"label -1", "1,2,0\n1,2,-1\n", CSVOptions{}, ":2:3", `"-1" is a negative class label`},
		{"label out of range", "1,2,0\n1,2,2\n", CSVOptions{NumClasses: 2}, ":2:3", `"2" is out of range: NumClasses is 2, so labels must be 0..1`},
		{"label NaN", "1,2,0\n1,2,NaN\n", CSVOptions{}, ":2:3", `"NaN" is not a valid class label`},
		{"label text", "x,y\n\n1,0\n\n2,abc\n", CSVOptions{}, ":5:2", `"abc" is not a number`},
		{"empty cell", "1,,0\n", CSVOptions{}, ":1:2", "empty cell"},
		{"empty file", "", CSVOptions{}, "", "file is empty"},
		{"header only", "a,b,y\n", CSVOptions{}, "", "no data rows after the header line"},
		{"forced no header", "a,b,y\n1,2,0\n", CSVOptions{Header: HeaderAbsent}, ":1:1", `"a" is not a number`},
		{"forced header skips numeric row", "1,2,0\n1,x,0\n", CSVOptions{Header: HeaderPresent}, ":2:2", `"x" is not a number`},
		{"single column", "0\n1\n", CSVOptions{}, ":1", "need at least 2"},
		{"bad quote", "1,\"2,0\n", CSVOptions{}, ":1", "malformed CSV"},
		{"unlabeled ragged", "1,2\n1\n", CSVOptions{Unlabeled: true}, ":2:2", "expected 2, got 1"},
	}
	dir := t.TempDir()
	for k, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "bad"+string(rune('a'+k))+".csv", tc.content)
			ds, err := ReadCSV(p, tc.opt)
			if err == nil {
				t.Fatalf("ReadCSV accepted bad input, got %+v", ds)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			prefix := p + tc.pos + ": "
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
		})
	}
}

// TestParseErrorFormat pins the exact message layout of the brief's example.
func TestParseErrorFormat(t *testing.T) {
	e := &ParseError{File: "data/train.csv", Line: 17, Column: 3, Value: "abc", Msg: "is not a number"}
	if got, want := e.Error(), `data/train.csv:17:3: "abc" is not a number`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = &ParseError{File: "f.csv", Line: 2, Msg: "bad line"}
	if got, want := e.Error(), "f.csv:2: bad line"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = &ParseError{File: "f.csv", Msg: "file is empty"}
	if got, want := e.Error(), "f.csv: file is empty"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadCSVValid(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "ok.csv", "f1, f2 ,label\r\n 1.5,-2,1\r\n\r\n3e-3,\"4\",0\r\n0,0,2.0\r\n")
	ds, err := ReadCSV(p, CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.N != 3 || ds.D != 2 || ds.C != 3 || ds.Name != "ok" {
		t.Fatalf("got N=%d D=%d C=%d name=%q, want 3 2 3 ok", ds.N, ds.D, ds.C, ds.Name)
	}
	wantX := []float64{1.5, -2, 3e-3, 4, 0, 0}
	for k := range wantX {
		if ds.X[k] != wantX[k] {
			t.Errorf("X[%d] = %v, want %v", k, ds.X[k], wantX[k])
		}
	}
	if ds.Y[0] != 1 || ds.Y[1] != 0 || ds.Y[2] != 2 {
		t.Errorf("Y = %v, want [1 0 2]", ds.Y)
	}
	if ds.FeatureNames[0] != "f1" || ds.FeatureNames[1] != "f2" {
		t.Errorf("FeatureNames = %q", ds.FeatureNames)
	}
	// NumClasses widens C beyond max label + 1.
	ds, err = ReadCSV(p, CSVOptions{NumClasses: 5})
	if err != nil || ds.C != 5 {
		t.Fatalf("NumClasses 5: C=%v err=%v", ds.C, err)
	}
	// No header: first row is data.
	p2 := writeFile(t, dir, "nohdr.csv", "1,2,0\n3,4,1\n")
	ds, err = ReadCSV(p2, CSVOptions{})
	if err != nil || ds.N != 2 || ds.FeatureNames != nil {
		t.Fatalf("no header: %+v %v", ds, err)
	}
}

func TestReadNoiseCSVErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		n, d    int
		pos     string
		msg     string
	}{
		{"too few rows", "0.1,0.1\n0.2,0.2\n", 3, 2, ":3", "expected 3×2 noise variances, got 2 rows"},
		{"too many rows", "v1,v2\n0.1,0.1\n0.2,0.2\n", 1, 2, ":3", "expected 1×2 noise variances, got more than 1 rows"},
		{"wrong columns", "0.1,0.1\n0.2\n", 2, 2, ":2:2", "expected 2×2 noise variances (2 columns), got 1 columns"},
		{"header width", "a,b,c\n0.1,0.1\n", 1, 2, ":1", "expected 1×2 noise variances, but the header has 3 columns"},
		{"negative", "v1,v2\n0.1,-0.2\n", 1, 2, ":2:2", `"-0.2" is negative`},
		{"NaN", "0.1,NaN\n", 1, 2, ":1:2", `"NaN" is not a finite number`},
		{"Inf", "0.1,0.1\n+Inf,0.1\n", 2, 2, ":2:1", `"+Inf" is not a finite number`},
		{"non-numeric", "0.1,0.1\n0.1,x\n", 2, 2, ":2:2", `"x" is not a number`},
	}
	dir := t.TempDir()
	for k, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "noise"+string(rune('a'+k))+".csv", tc.content)
			_, err := ReadNoiseCSV(p, tc.n, tc.d)
			if err == nil {
				t.Fatal("ReadNoiseCSV accepted bad input")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
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

func TestCSVRoundTrips(t *testing.T) {
	dir := t.TempDir()
	ds := &Dataset{
		Name: "rt", N: 3, D: 2, C: 4,
		X:            []float64{0.1, -1e-300, math.Pi, 1.0 / 3, 12345678.9, -0},
		Y:            []int{3, 0, 1},
		Noise:        []float64{0, 0.25, 1e-7, 2, 0.1, 0.5},
		FeatureNames: []string{"alpha", "beta"},
	}
	p := filepath.Join(dir, "rt.csv")
	if err := WriteDatasetCSV(p, ds); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCSV(p, CSVOptions{NumClasses: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got.N != ds.N || got.D != ds.D || got.C != ds.C {
		t.Fatalf("shape %d×%d C=%d, want %d×%d C=%d", got.N, got.D, got.C, ds.N, ds.D, ds.C)
	}
	for k := range ds.X {
		if got.X[k] != ds.X[k] {
			t.Errorf("X[%d] = %v, want %v (bit-exact)", k, got.X[k], ds.X[k])
		}
	}
	for i := range ds.Y {
		if got.Y[i] != ds.Y[i] {
			t.Errorf("Y[%d] = %d, want %d", i, got.Y[i], ds.Y[i])
		}
	}
	if got.FeatureNames[1] != "beta" {
		t.Errorf("FeatureNames = %q", got.FeatureNames)
	}

	np := filepath.Join(dir, "rt-noise.csv")
	if err := WriteNoiseCSV(np, ds); err != nil {
		t.Fatal(err)
	}
	noise, err := ReadNoiseCSV(np, ds.N, ds.D)
	if err != nil {
		t.Fatal(err)
	}
	for k := range ds.Noise {
		if noise[k] != ds.Noise[k] {
			t.Errorf("Noise[%d] = %v, want %v", k, noise[k], ds.Noise[k])
		}
	}

	probs := []float64{0.2, 0.3, 0.5, 1, 0, 0}
	pp := filepath.Join(dir, "probs.csv")
	if err := WriteCSV(pp, probs, 2, 3); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(pp)
	if !strings.HasPrefix(string(b), "p0,p1,p2\n") {
		t.Errorf("probabilities header: %q", b)
	}
	back, err := ReadCSV(pp, CSVOptions{Unlabeled: true})
	if err != nil {
		t.Fatal(err)
	}
	if back.N != 2 || back.D != 3 {
		t.Fatalf("probabilities read back as %d×%d", back.N, back.D)
	}
	for k := range probs {
		if back.X[k] != probs[k] {
			t.Errorf("prob %d = %v, want %v", k, back.X[k], probs[k])
		}
	}
	if err := WriteCSV(filepath.Join(dir, "nan.csv"), []float64{0.5, math.NaN()}, 1, 2); err == nil {
		t.Error("WriteCSV wrote a NaN probability without error")
	}
	if err := WriteCSV(filepath.Join(dir, "shape.csv"), []float64{0.5}, 1, 2); err == nil {
		t.Error("WriteCSV accepted a probs slice of the wrong length")
	}
}
