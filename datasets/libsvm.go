package datasets

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ReadLIBSVM reads a LIBSVM/svmlight file: one point per line,
// "label index:value index:value … [# comment]", indices 1-based and
// strictly increasing, absent indices meaning 0. Blank and comment-only
// lines are skipped.
//
// dim fixes D; an index above dim is then an error. With dim ≤ 0, D is the
// largest index seen. Labels may be any finite numbers (+1/−1, 1..K, …): the
// distinct values are sorted ascending and mapped to 0..C−1 in that order,
// and the original value of class c is recorded in LabelValues[c], so that
// −1/+1 becomes 0/1 and predictions can be mapped back. Errors are
// *ParseError values with file:line:column, the column being the 1-based
// whitespace-separated token.
func ReadLIBSVM(path string, dim int) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLIBSVM(f, path, dim)
}

// maxDenseElements bounds the dense matrix a sparse file may expand to
// (2 GiB of float64), so one stray huge index cannot exhaust memory.
const maxDenseElements = 1 << 28

func readLIBSVM(r io.Reader, path string, dim int) (*Dataset, error) {
	type entry struct {
		idx int
		val float64
	}
	var (
		rawLabels []float64
		rows      [][]entry
		maxIdx    int
	)
	sc := newLineScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if k := strings.IndexByte(text, '#'); k >= 0 {
			text = text[:k]
		}
		toks := strings.Fields(text)
		if len(toks) == 0 {
			continue
		}
		lab, err := strconv.ParseFloat(toks[0], 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			msg := "is not a number (expected the class label first)"
			if strings.Contains(toks[0], ",") {
				msg = "is a multi-label entry, which is not supported (one class label per line)"
			}
			return nil, perr(path, line, 1, toks[0], "%s", msg)
		}
		if math.IsNaN(lab) || math.IsInf(lab, 0) {
			return nil, perr(path, line, 1, toks[0], "is not a finite class label")
		}
		var row []entry
		prev := 0
		for t, tok := range toks[1:] {
			col := t + 2
			colon := strings.IndexByte(tok, ':')
			if colon < 0 {
				return nil, perr(path, line, col, tok, "is not an index:value pair")
			}
			idx, err := strconv.Atoi(tok[:colon])
			if err != nil || idx < 1 {
				return nil, perr(path, line, col, tok, "has an invalid feature index (must be an integer ≥ 1)")
			}
			if dim > 0 && idx > dim {
				return nil, perr(path, line, col, tok, "has feature index %d above the dimension %d", idx, dim)
			}
			if idx > maxLabel*8 {
				return nil, perr(path, line, col, tok, "has an implausibly large feature index %d; pass dim to bound it", idx)
			}
			if idx <= prev {
				return nil, perr(path, line, col, tok, "has feature index %d after index %d: indices must be strictly increasing", idx, prev)
			}
			prev = idx
			v, perr1 := parseCell(path, line, col, tok[colon+1:])
			if perr1 != nil {
				pe := perr1.(*ParseError)
				pe.Value = tok
				return nil, pe
			}
			row = append(row, entry{idx, v})
			maxIdx = max(maxIdx, idx)
		}
		rawLabels = append(rawLabels, lab)
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(path, line, err)
	}
	if len(rows) == 0 {
		return nil, perr(path, 0, 0, "", "file has no data lines (expected \"label index:value …\")")
	}
	d := dim
	if d <= 0 {
		d = maxIdx
	}
	if d == 0 {
		return nil, perr(path, 0, 0, "", "no feature appears in any line, so the dimension is 0; pass dim")
	}
	if len(rows) > maxDenseElements/d {
		return nil, perr(path, 0, 0, "", "a dense %d×%d matrix is too large (more than %d entries); is dim right?", len(rows), d, maxDenseElements)
	}
	vals := slices.Clone(rawLabels)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	ds := &Dataset{
		Name:        strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
		N:           len(rows),
		D:           d,
		C:           len(vals),
		X:           make([]float64, len(rows)*d),
		Y:           make([]int, len(rows)),
		LabelValues: vals,
	}
	for i, row := range rows {
		for _, e := range row {
			ds.X[i*d+e.idx-1] = e.val
		}
		ds.Y[i], _ = slices.BinarySearch(vals, rawLabels[i])
	}
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	return ds, nil
}
