package datasets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The UCI data sets as preprocessed by Fernández-Delgado et al. (JMLR 2014,
// "Do we need hundreds of classifiers…"), the collection the Bayesian
// Benchmarks package reads and through it the additive-noise GPC paper
// (Liu et al. 2019) its 19 UCI sets; see uci-delgado/PROVENANCE.md under
// the data directory.
//
// Each set is uci-delgado/<name>/<name>_R.dat, or a pair <name>_train_R.dat
// and <name>_test_R.dat: TAB-separated, a header line that starts with a
// TAB ("\tf1\t…\tfD\tclase"), then rows "<row number>\t<D inputs>\t<class>"
// with the inputs already standardised per file and the class an integer
// 0..C−1. Bayesian Benchmarks' pandas reader keeps the row number as a
// first input (the header has as many fields as the rows), so the paper's
// models saw D+1 inputs, and on the sets whose files are sorted by class
// (magic, miniboone, chess-krvk) the row number nearly gives the label
// away; LoadDelgado drops it unless asked to keep it for that ablation.

// DelgadoSet describes one of the paper's 19 data sets.
type DelgadoSet struct {
	Name string
	// N, D and C are the paper's sizes (Table III): rows, inputs without
	// the row number (the paper's d is D+1) and classes.
	N, D, C int
	// Present reports whether the data can be loaded: <name>_R.dat, or both
	// parts of the train/test pair, are on disk.
	Present bool
	// Files are the data files found, Missing the ones looked for and not
	// found (paths under the data directory), when not Present.
	Files, Missing []string
}

// delgadoSets are the paper's 19 sets in its table order (binary first).
var delgadoSets = []DelgadoSet{
	{Name: "adult", N: 48842, D: 14, C: 2},
	{Name: "connect-4", N: 67557, D: 42, C: 2},
	{Name: "magic", N: 19020, D: 10, C: 2},
	{Name: "miniboone", N: 130064, D: 50, C: 2},
	{Name: "mushroom", N: 8124, D: 21, C: 2},
	{Name: "ringnorm", N: 7400, D: 20, C: 2},
	{Name: "twonorm", N: 7400, D: 20, C: 2},
	{Name: "chess-krvk", N: 28056, D: 6, C: 18},
	{Name: "letter", N: 20000, D: 16, C: 26},
	{Name: "nursery", N: 12960, D: 8, C: 5},
	{Name: "page-blocks", N: 5473, D: 10, C: 5},
	{Name: "pendigits", N: 10992, D: 16, C: 10},
	{Name: "statlog-landsat", N: 6435, D: 36, C: 6},
	{Name: "statlog-shuttle", N: 58000, D: 9, C: 7},
	{Name: "thyroid", N: 7200, D: 21, C: 3},
	{Name: "wall-following", N: 5456, D: 24, C: 4},
	{Name: "waveform", N: 5000, D: 21, C: 3},
	{Name: "waveform-noise", N: 5000, D: 40, C: 3},
	{Name: "wine-quality-white", N: 4898, D: 11, C: 7},
}

// DelgadoNames lists the paper's 19 data sets in its table order: the
// seven binary ones, then the twelve multi-class ones.
func DelgadoNames() []string {
	out := make([]string, len(delgadoSets))
	for i, s := range delgadoSets {
		out[i] = s.Name
	}
	return out
}

// DelgadoLookup returns the paper's sizes of one of its 19 sets (Present
// and the file lists are not filled).
func DelgadoLookup(name string) (DelgadoSet, bool) {
	for _, s := range delgadoSets {
		if s.Name == name {
			return s, true
		}
	}
	return DelgadoSet{}, false
}

// DelgadoStatus reports which of the 19 sets are present under dataDir
// ("" means ResolveDataDir("")), in DelgadoNames order.
func DelgadoStatus(dataDir string) ([]DelgadoSet, error) {
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	out := make([]DelgadoSet, len(delgadoSets))
	for i, s := range delgadoSets {
		single, pair := delgadoFiles(s.Name)
		switch {
		case exists(filepath.Join(dataDir, single)):
			s.Present, s.Files = true, []string{single}
		default:
			for _, p := range pair {
				if exists(filepath.Join(dataDir, p)) {
					s.Files = append(s.Files, p)
				} else {
					s.Missing = append(s.Missing, p)
				}
			}
			s.Present = len(s.Missing) == 0
			if len(s.Files) == 0 {
				s.Missing = append([]string{single}, s.Missing...)
			}
		}
		out[i] = s
	}
	return out, nil
}

func exists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// delgadoFiles returns the relative paths of a set's single file and of
// its train/test pair.
func delgadoFiles(name string) (single string, pair [2]string) {
	dir := filepath.Join("uci-delgado", name)
	return filepath.Join(dir, name+"_R.dat"),
		[2]string{filepath.Join(dir, name+"_train_R.dat"), filepath.Join(dir, name+"_test_R.dat")}
}

// hintDelgado tells a user with a missing file what is known about it.
const hintDelgado = "the Fernández-Delgado et al. collection and the files that could not be obtained (adult's training part, connect-4, miniboone) are described in <data dir>/uci-delgado/PROVENANCE.md; " + hintDataDir

// LoadDelgado reads one data set of the Fernández-Delgado et al.
// collection from dataDir/uci-delgado/<name>/ ("" means ResolveDataDir("")):
// <name>_R.dat, or else <name>_train_R.dat followed by <name>_test_R.dat
// merged into one pool (as Bayesian Benchmarks does; random splits are
// drawn from the pool). A missing file — including one half of a pair, as
// adult's training part — is a *MissingDataError naming it; a malformed
// cell is a *ParseError at file:line:column with the value.
//
// The first column, the row number, is dropped unless keepRowNumber, which
// keeps it as input 0 (named "row") the way the paper's pipeline did (in a
// pair the test part's numbers restart at 1). The inputs are returned as
// stored (already standardised per file by the collection's authors).
//
// For the paper's 19 sets (DelgadoNames) the number of inputs must match
// its table and C is its number of classes; for the collection's other
// sets C is the largest label + 1.
func LoadDelgado(dataDir, name string, keepRowNumber bool) (*Dataset, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("datasets: Delgado data set name %q: want a folder name such as twonorm (known: %s)", name, strings.Join(DelgadoNames(), ", "))
	}
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	single, pair := delgadoFiles(name)
	var parts []*delgadoTable
	t, err := readDelgadoFile(dataDir, single)
	var miss *MissingDataError
	switch {
	case err == nil:
		parts = []*delgadoTable{t}
	case errors.As(err, &miss):
		// No single file: the pair, both halves required.
		for _, rel := range pair {
			t, err2 := readDelgadoFile(dataDir, rel)
			if err2 != nil {
				if errors.As(err2, &miss) && !exists(filepath.Join(dataDir, pair[0])) && !exists(filepath.Join(dataDir, pair[1])) {
					// Neither form exists: name the single file, the usual one.
					return nil, err
				}
				return nil, err2
			}
			parts = append(parts, t)
		}
	default:
		return nil, err
	}
	d := parts[0].d
	for _, p := range parts[1:] {
		if p.d != d {
			return nil, perr(p.path, 1, 0, "", "has %d inputs, but %s has %d", p.d, parts[0].path, d)
		}
	}
	known, isKnown := DelgadoLookup(name)
	if isKnown && d != known.D {
		return nil, perr(parts[0].path, 1, 0, "", "has %d inputs, but %s has %d (the paper's d − 1)", d, name, known.D)
	}
	c := 0
	n := 0
	for _, p := range parts {
		n += p.n
		for _, y := range p.y {
			c = max(c, y+1)
		}
	}
	if isKnown {
		if c > known.C {
			for _, p := range parts {
				for i, y := range p.y {
					if y >= known.C {
						return nil, perr(p.path, p.lines[i], d+2, strconv.Itoa(y), "is not a class of %s (0..%d)", name, known.C-1)
					}
				}
			}
		}
		c = known.C
	}
	width := d
	if keepRowNumber {
		width = d + 1
	}
	ds := &Dataset{Name: name, N: n, D: width, C: c, X: make([]float64, 0, n*width), Y: make([]int, 0, n)}
	if keepRowNumber {
		ds.FeatureNames = append(ds.FeatureNames, "row")
	}
	ds.FeatureNames = append(ds.FeatureNames, parts[0].names...)
	for _, p := range parts {
		for i := range p.n {
			if keepRowNumber {
				ds.X = append(ds.X, p.row[i])
			}
			ds.X = append(ds.X, p.x[i*d:(i+1)*d]...)
		}
		ds.Y = append(ds.Y, p.y...)
	}
	if c < 2 {
		return nil, fmt.Errorf("datasets: %s: %d class; a classification set needs at least 2", parts[0].path, c)
	}
	return ds, ds.Validate()
}

// delgadoTable is one parsed _R.dat file.
type delgadoTable struct {
	path  string
	names []string // input names from the header
	n, d  int
	row   []float64 // the row-number column
	x     []float64 // n×d inputs
	y     []int
	lines []int // file line of each row
}

// readDelgadoFile reads dataDir/rel, a *MissingDataError if it is absent.
func readDelgadoFile(dataDir, rel string) (*delgadoTable, error) {
	f, err := openData(dataDir, rel, hintDelgado)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readDelgado(f, filepath.Join(dataDir, rel))
}

// readDelgado parses one _R.dat file: the header "\tf1\t…\tfD\tclase",
// then rows of D+2 TAB-separated fields (row number, inputs, class).
func readDelgado(r io.Reader, path string) (*delgadoTable, error) {
	sc := newLineScanner(r)
	t := &delgadoTable{path: path}
	line := 0
	var fields int
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			hdr := strings.Split(text, "\t")
			if len(hdr) < 3 || strings.TrimSpace(hdr[0]) != "" {
				first := ""
				if len(hdr) > 0 {
					first = hdr[0]
				}
				return nil, perr(path, 1, 1, first, "is not the header's empty first field: want a header line \"\\tf1\\t…\\tfD\\tclase\" (row-number column, D inputs, class)")
			}
			fields = len(hdr)
			t.d = fields - 2
			t.names = append([]string(nil), hdr[1:fields-1]...)
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		cells := strings.Split(text, "\t")
		if len(cells) != fields {
			return nil, perr(path, line, 0, "", "has %d TAB-separated fields, want %d as in the header (row number, %d inputs, class)", len(cells), fields, t.d)
		}
		rn, err := parseCell(path, line, 1, cells[0])
		if err != nil {
			return nil, err
		}
		for j := 1; j <= t.d; j++ {
			v, err := parseCell(path, line, j+1, cells[j])
			if err != nil {
				return nil, err
			}
			t.x = append(t.x, v)
		}
		y, err := parseLabel(path, line, fields, cells[fields-1], 0)
		if err != nil {
			return nil, err
		}
		t.row = append(t.row, rn)
		t.y = append(t.y, y)
		t.lines = append(t.lines, line)
		t.n++
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(path, line, err)
	}
	switch {
	case line == 0:
		return nil, perr(path, 0, 0, "", "is empty (want a header line and data rows)")
	case t.n == 0:
		return nil, perr(path, 0, 0, "", "has a header but no data rows")
	}
	return t, nil
}
