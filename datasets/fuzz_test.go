package datasets

import (
	"bytes"
	"errors"
	"testing"
)

// The fuzz targets check the readers' contract on arbitrary bytes: never
// panic, and either return a valid dataset or an error (a *ParseError for
// content problems). The seed corpus runs as part of the normal tests; run
// `go test -fuzz FuzzReadCSV ./datasets` to explore further.

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
		ds, err := readCSV(bytes.NewReader([]byte(s)), "f.csv", CSVOptions{Unlabeled: unlabeled})
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
