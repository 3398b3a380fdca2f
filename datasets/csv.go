package datasets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HeaderMode says whether the first row of a CSV file is a header.
type HeaderMode int

const (
	// HeaderAuto treats the first row as a header when any of its non-empty
	// cells is not a number. This is the default because most exported
	// tables have a header and purely numeric headers do not occur in
	// practice; NaN/Inf spellings count as numbers here so that a bad first
	// data row is reported as bad data rather than silently eaten as a header.
	HeaderAuto HeaderMode = iota
	// HeaderPresent forces the first row to be a header.
	HeaderPresent
	// HeaderAbsent forces the first row to be data.
	HeaderAbsent
)

// CSVOptions controls ReadCSV.
type CSVOptions struct {
	// Header says whether the first row is a header (default: detect).
	Header HeaderMode
	// Unlabeled means every column is an input; the result then has all
	// labels 0 and C = max(1, NumClasses). Use it for test inputs whose
	// labels are unknown.
	Unlabeled bool
	// NumClasses, when > 0, fixes C and makes any label ≥ NumClasses an
	// error. Set it when a file might miss the highest class (a small test
	// set), so that C still matches the model.
	NumClasses int
	// Name overrides the dataset name; the default is the file's base name
	// without extension.
	Name string
}

// ReadCSV reads a comma-separated design matrix whose last column is the
// integer class label 0..C−1 (unless opt.Unlabeled). Blank lines are
// skipped; cells may be quoted and surrounded by spaces. C is max label + 1
// unless opt.NumClasses is given.
//
// Every problem — ragged rows, non-numeric or empty cells, NaN/Inf, labels
// that are fractional, negative or ≥ NumClasses, an empty file or a header
// without data — is returned as a *ParseError with the file, 1-based line
// (counting the header) and 1-based column, because a silent NaN or a
// dropped row would corrupt an experiment without any visible symptom. For a
// ragged row the column is the first surplus cell (too many) or the first
// missing one (too few), and the message says expected vs got.
func ReadCSV(path string, opt CSVOptions) (*Dataset, error) {
	ds, _, err := ReadCSVLines(path, opt)
	return ds, err
}

// ReadCSVLines is ReadCSV that also returns the 1-based line of the file
// each data row starts on, so that a problem found later with row i (a
// prediction that is not finite) can be reported as file:line.
func ReadCSVLines(path string, opt CSVOptions) (*Dataset, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var lines []int
	ds, err := readCSVLines(f, path, opt, &lines)
	if err != nil {
		return nil, nil, err
	}
	return ds, lines, nil
}

func newCSVReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(newLineCapReader(r, MaxLineBytes))
	cr.FieldsPerRecord = -1 // ragged rows are reported by us, with expected vs got
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	return cr
}

// csvReadErr converts an encoding/csv error into a *ParseError. encoding/csv
// reports byte columns, which we mention in the message since our Column
// field means "field index".
func csvReadErr(path string, err error) error {
	var long *LineTooLongError
	if errors.As(err, &long) {
		return perr(path, long.Line, 0, "", "the line is longer than %d MiB, the limit of a line", MaxLineBytes>>20)
	}
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		return perr(path, ce.Line, 0, "", "malformed CSV at byte column %d: %v", ce.Column, ce.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// isHeader implements the HeaderAuto rule.
func isHeader(rec []string) bool {
	for _, cell := range rec {
		s := strings.TrimSpace(cell)
		if s == "" {
			continue
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return true
		}
	}
	return false
}

// parseCell parses one numeric input cell, rejecting empty, non-numeric,
// out-of-range, NaN and infinite values.
func parseCell(path string, line, col int, cell string) (float64, error) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return 0, perr(path, line, col, "", "empty cell, expected a number")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, perr(path, line, col, s, "is out of the float64 range")
		}
		return 0, perr(path, line, col, s, "is not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, perr(path, line, col, s, "is not a finite number (NaN and Inf are not allowed)")
	}
	return v, nil
}

// maxLabel bounds labels so that a typo like 1e9 cannot make us allocate a
// billion per-class slots downstream.
const maxLabel = 1 << 20

// parseLabel parses a class label: a non-negative integer (written as an
// integer or an integral float such as "2.0"), below numClasses if > 0.
func parseLabel(path string, line, col int, cell string, numClasses int) (int, error) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return 0, perr(path, line, col, "", "empty label cell, expected an integer class label")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, perr(path, line, col, s, "is not a number (class labels must be integers 0..C−1)")
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, perr(path, line, col, s, "is not a valid class label (labels must be finite integers 0..C−1)")
	case v != math.Trunc(v):
		return 0, perr(path, line, col, s, "is not an integer class label (labels must be integers 0..C−1)")
	case v < 0:
		return 0, perr(path, line, col, s, "is a negative class label (labels must be integers 0..C−1)")
	case numClasses > 0 && v >= float64(numClasses):
		return 0, perr(path, line, col, s, "is out of range: NumClasses is %d, so labels must be 0..%d", numClasses, numClasses-1)
	case v > maxLabel:
		return 0, perr(path, line, col, s, "is too large for a class label (max %d)", maxLabel)
	}
	return int(v), nil
}

// labelHint returns hint for labelled files and "" for unlabelled ones.
func labelHint(unlabeled bool, hint string) string {
	if unlabeled {
		return ""
	}
	return hint
}

func readCSV(r io.Reader, path string, opt CSVOptions) (*Dataset, error) {
	return readCSVLines(r, path, opt, nil)
}

// readCSVLines is readCSV recording each data row's line in *lines when
// lines is not nil.
func readCSVLines(r io.Reader, path string, opt CSVOptions, lines *[]int) (*Dataset, error) {
	cr := newCSVReader(r)
	ds := &Dataset{Name: opt.Name}
	if ds.Name == "" {
		ds.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	ncol := -1
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvReadErr(path, err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			hdr := opt.Header == HeaderPresent || (opt.Header == HeaderAuto && isHeader(rec))
			ncol = len(rec)
			minCols := 2
			if opt.Unlabeled {
				minCols = 1
			}
			if ncol < minCols {
				return nil, perr(path, line, 0, "", "found %d column(s); need at least %d (inputs%s)", ncol, minCols, labelHint(opt.Unlabeled, " and a label in the last column"))
			}
			ds.D = ncol
			if !opt.Unlabeled {
				ds.D = ncol - 1
			}
			if hdr {
				ds.FeatureNames = make([]string, ds.D)
				for j := range ds.D {
					ds.FeatureNames[j] = strings.TrimSpace(rec[j])
				}
				continue
			}
		}
		if len(rec) != ncol {
			return nil, perr(path, line, min(len(rec), ncol)+1, "", "wrong number of columns: expected %d, got %d", ncol, len(rec))
		}
		for j := range ds.D {
			v, err := parseCell(path, line, j+1, rec[j])
			if err != nil {
				return nil, err
			}
			ds.X = append(ds.X, v)
		}
		y := 0
		if !opt.Unlabeled {
			y, err = parseLabel(path, line, ncol, rec[ncol-1], opt.NumClasses)
			if err != nil {
				return nil, err
			}
		}
		ds.Y = append(ds.Y, y)
		ds.N++
		if lines != nil {
			*lines = append(*lines, line)
		}
	}
	if first {
		return nil, perr(path, 0, 0, "", "file is empty: expected comma-separated rows of inputs%s", labelHint(opt.Unlabeled, " followed by an integer label"))
	}
	if ds.N == 0 {
		return nil, perr(path, 0, 0, "", "no data rows after the header line")
	}
	ds.C = 1
	for _, y := range ds.Y {
		ds.C = max(ds.C, y+1)
	}
	if opt.NumClasses > 0 {
		ds.C = opt.NumClasses
	}
	if err := ds.Validate(); err != nil { // cannot fail after the checks above; kept as a guard
		return nil, err
	}
	return ds, nil
}

// ReadNoiseCSV reads an n×d table of input-noise variances (comma-separated,
// optional header detected as in ReadCSV) whose rows and columns correspond
// one-to-one to the rows and input columns of a data file. Entries are
// variances, not standard deviations. Shape mismatches name the file, the
// expected n×d and the first offending line; negative, NaN, Inf and
// non-numeric entries are reported with file:line:column.
func ReadNoiseCSV(path string, n, d int) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNoiseCSV(f, path, n, d)
}

func readNoiseCSV(r io.Reader, path string, n, d int) ([]float64, error) {
	if n < 0 || d < 1 {
		return nil, fmt.Errorf("%s: invalid expected noise shape %d×%d", path, n, d)
	}
	cr := newCSVReader(r)
	out := make([]float64, 0, n*d)
	rows, lastLine := 0, 0
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvReadErr(path, err)
		}
		line, _ := cr.FieldPos(0)
		lastLine = line
		if first {
			first = false
			if isHeader(rec) {
				if len(rec) != d {
					return nil, perr(path, line, 0, "", "shape mismatch: expected %d×%d noise variances, but the header has %d columns", n, d, len(rec))
				}
				continue
			}
		}
		if rows == n {
			return nil, perr(path, line, 0, "", "shape mismatch: expected %d×%d noise variances, got more than %d rows", n, d, n)
		}
		if len(rec) != d {
			return nil, perr(path, line, min(len(rec), d)+1, "", "shape mismatch: expected %d×%d noise variances (%d columns), got %d columns", n, d, d, len(rec))
		}
		for j := range d {
			v, err := parseCell(path, line, j+1, rec[j])
			if err != nil {
				return nil, err
			}
			if v < 0 {
				return nil, perr(path, line, j+1, strings.TrimSpace(rec[j]), "is negative: noise variances must be ≥ 0")
			}
			out = append(out, v)
		}
		rows++
	}
	if rows != n {
		return nil, perr(path, lastLine+1, 0, "", "shape mismatch: expected %d×%d noise variances, got %d rows (file ends here)", n, d, rows)
	}
	return out, nil
}

// WriteCSV writes an n×c row-major matrix of class probabilities to path
// with the header p0,…,p{c−1}, one row per test point. Values are written in
// the shortest form that reads back bit-for-bit. It refuses NaN and Inf
// rather than writing a file downstream tools would misread.
//
// The file is written atomically (WriteAtomic): a failure, such as a
// non-finite probability, leaves an existing file at path untouched and no
// temporary file behind.
func WriteCSV(path string, probs []float64, n, c int) error {
	return WriteAtomic(path, func(w io.Writer) error {
		if err := WriteProbabilities(w, probs, n, c); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// WriteProbabilities is WriteCSV to an io.Writer (e.g. stdout).
func WriteProbabilities(w io.Writer, probs []float64, n, c int) error {
	if c < 1 || n < 0 || len(probs) != n*c {
		return fmt.Errorf("datasets: WriteProbabilities: len(probs) = %d, want n×c = %d×%d", len(probs), n, c)
	}
	hdr := make([]string, c)
	for k := range c {
		hdr[k] = "p" + strconv.Itoa(k)
	}
	return writeTable(w, hdr, n, c, func(i, j int) (string, error) {
		v := probs[i*c+j]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", fmt.Errorf("row %d (1-based), p%d: probability %v is not finite", i+1, j, v)
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	})
}

// WriteDatasetCSV writes ds in the format ReadCSV reads: a header (the
// feature names, or x1..xD, then "y") and one row per point with the label
// last. Noise is not written; use WriteNoiseCSV for it. Floats use the
// shortest exact representation so a write/read round trip is lossless.
func WriteDatasetCSV(path string, ds *Dataset) error {
	if err := ds.Validate(); err != nil {
		return err
	}
	hdr := featureHeader(ds)
	hdr = append(hdr, "y")
	return WriteAtomic(path, func(f io.Writer) error {
		err := writeTable(f, hdr, ds.N, ds.D+1, func(i, j int) (string, error) {
			if j == ds.D {
				return strconv.Itoa(ds.Y[i]), nil
			}
			return strconv.FormatFloat(ds.X[i*ds.D+j], 'g', -1, 64), nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// WriteNoiseCSV writes ds.Noise in the format ReadNoiseCSV reads, with the
// feature header, so a noisy dataset can be saved as a pair of files.
func WriteNoiseCSV(path string, ds *Dataset) error {
	if err := ds.Validate(); err != nil {
		return err
	}
	if ds.Noise == nil {
		return fmt.Errorf("%s: dataset %q has no Noise to write", path, ds.Name)
	}
	return WriteAtomic(path, func(f io.Writer) error {
		err := writeTable(f, featureHeader(ds), ds.N, ds.D, func(i, j int) (string, error) {
			return strconv.FormatFloat(ds.Noise[i*ds.D+j], 'g', -1, 64), nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// featureHeader returns the feature names, or x1..xD when there are none
// (a header keeps HeaderAuto detection unambiguous on read-back).
func featureHeader(ds *Dataset) []string {
	hdr := make([]string, ds.D)
	for j := range ds.D {
		if ds.FeatureNames != nil && ds.FeatureNames[j] != "" {
			hdr[j] = ds.FeatureNames[j]
		} else {
			hdr[j] = "x" + strconv.Itoa(j+1)
		}
	}
	return hdr
}

func writeTable(w io.Writer, hdr []string, n, c int, cell func(i, j int) (string, error)) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(hdr); err != nil {
		return err
	}
	rec := make([]string, c)
	for i := range n {
		for j := range c {
			s, err := cell(i, j)
			if err != nil {
				return err
			}
			rec[j] = s
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
