package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The fuzz targets check the readers' contract on arbitrary bytes: never
// panic, and either return a valid dataset or an error (a *ParseError for
// content problems). The seed corpus (the f.Add calls and the files under
// testdata/fuzz/<target>/) runs as part of the normal tests; run
// `go test -fuzz FuzzReadCSV -fuzztime 30s ./datasets` to explore further
// (one target per run). Inputs that once failed are kept in testdata/fuzz.

var fuzzSeeds = []string{
	"", "\n", "a,b,y\n1,2,0\n", "1,2,0\n3,4,1\n", "1,\"2\",0\n", "1,,0", "1,2,1.5\n", "x\n1\n",
	"1,2\n1\n", "1,NaN,0\n", "\"a\nb\",c,y\n1,2,3\n", "1,2,0\r\n3,4,1", "1e999,1,1\n", "0x1p-2,1,0\n",
}

func FuzzReadCSV(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, unlabeled bool) {
		var lines []int
		ds, err := readCSVLines(bytes.NewReader([]byte(s)), "f.csv", CSVOptions{Unlabeled: unlabeled}, &lines)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			return
		}
		if verr := ds.Validate(); verr != nil {
			t.Fatalf("ReadCSV returned an invalid dataset: %v", verr)
		}
		// One line per row, increasing, within the file.
		if len(lines) != ds.N {
			t.Fatalf("%d lines for %d rows", len(lines), ds.N)
		}
		for i, l := range lines {
			if l < 1 || l > strings.Count(s, "\n")+strings.Count(s, "\r")+1 || (i > 0 && l <= lines[i-1]) {
				t.Fatalf("row %d on line %d (lines %v)", i, l, lines)
			}
		}
		// Every label below C, and C backed by a label when not forced.
		if !unlabeled && ds.C > 1 && !slices.Contains(ds.Y, ds.C-1) {
			t.Fatalf("C = %d without a row of class %d", ds.C, ds.C-1)
		}
	})
}

// FuzzReadIDX checks the idx reader (raw and gzip) on arbitrary bytes:
// no panic, a *ParseError for a bad file, and for a good one exactly as
// many bytes as its header announces.
func FuzzReadIDX(f *testing.F) {
	hdr := func(dims ...uint32) []byte {
		b := []byte{0, 0, idxTypeUbyte, byte(len(dims))}
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, d)
		}
		return b
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	for _, s := range [][]byte{
		nil, {0, 0}, hdr(1), append(hdr(2), 3, 7), append(hdr(2, 1, 2), 1, 2, 3, 4),
		hdr(0xffffffff, 0xffffffff, 2), append(hdr(3), 1, 2), append(hdr(1), 9, 9),
		gz(append(hdr(2), 3, 7)), {0x1f, 0x8b, 0, 0}, {0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0},
	} {
		f.Add(s, 1)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, b []byte, dims int) {
		dims = 1 + (dims&0xff)%3
		got, data, err := readIDXFrom(bytes.NewReader(b), "f.idx", dims)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			return
		}
		total := 1
		for _, d := range got {
			total *= d
		}
		if len(got) != dims || len(data) != total {
			t.Fatalf("dims %v and %d data bytes", got, len(data))
		}
	})
}

func FuzzReadNoiseCSV(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := readNoiseCSV(bytes.NewReader([]byte(s)), "n.csv", 2, 2)
		if err == nil && len(v) != 4 {
			t.Fatalf("got %d variances for a 2×2 request", len(v))
		}
		for _, x := range v {
			if !(x >= 0) {
				t.Fatalf("variance %v returned", x)
			}
		}
	})
}

func FuzzReadLIBSVM(f *testing.F) {
	for _, s := range []string{"", "1 1:1\n", "-1 2:0.5 3:1 # c\n+1\n", "1 3:1 2:1\n", "a 1:1", "1 1:nan", "1 99999999:1\n", "1 2147483647:1\n"} {
		f.Add(s, 0)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, dim int) {
		if dim > 1000 {
			dim %= 1000
		}
		ds, err := readLIBSVM(bytes.NewReader([]byte(s)), "f.svm", dim)
		if err == nil {
			if verr := ds.Validate(); verr != nil {
				t.Fatalf("invalid dataset: %v", verr)
			}
		}
	})
}

func FuzzReadWhitespaceTable(f *testing.F) {
	for _, s := range []string{"", "1 2\n3 4\n", "1\n2 3\n", "1 x\n", "\n\n1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, rows, cols, lines, err := readWhitespaceTable(bytes.NewReader([]byte(s)), "t.txt")
		if err == nil && (len(vals) != rows*cols || len(lines) != rows) {
			t.Fatalf("inconsistent table %d×%d with %d values", rows, cols, len(vals))
		}
	})
}
