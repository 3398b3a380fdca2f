package datasets

import (
	"fmt"
	"strconv"
)

// LoadDelgadoPart reads one half, part "train" or "test", of a set stored
// as a <name>_train_R.dat / <name>_test_R.dat pair, on its own. It exists
// for sets of which only one half is on disk — adult, whose training part
// could not be obtained (uci-delgado/PROVENANCE.md) — where a caller that
// accepts a stand-in for the whole set says so. The row number, the class
// count and the checks against the paper's sizes are as in LoadDelgado;
// the Name is "<name>-<part>".
func LoadDelgadoPart(dataDir, name, part string, keepRowNumber bool) (*Dataset, error) {
	if part != "train" && part != "test" {
		return nil, fmt.Errorf("datasets: Delgado part %q: want train or test", part)
	}
	if _, ok := DelgadoLookup(name); !ok {
		return nil, fmt.Errorf("datasets: LoadDelgadoPart: %q is not one of the paper's sets (%v)", name, DelgadoNames())
	}
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	_, pair := delgadoFiles(name)
	rel := pair[0]
	if part == "test" {
		rel = pair[1]
	}
	t, err := readDelgadoFile(dataDir, rel)
	if err != nil {
		return nil, err
	}
	known, _ := DelgadoLookup(name)
	if t.d != known.D {
		return nil, perr(t.path, 1, 0, "", "has %d inputs, but %s has %d (the paper's d − 1)", t.d, name, known.D)
	}
	for i, y := range t.y {
		if y >= known.C {
			return nil, perr(t.path, t.lines[i], t.d+2, strconv.Itoa(y), "is not a class of %s (0..%d)", name, known.C-1)
		}
	}
	width := t.d
	if keepRowNumber {
		width++
	}
	ds := &Dataset{Name: name + "-" + part, N: t.n, D: width, C: known.C, X: make([]float64, 0, t.n*width), Y: append([]int(nil), t.y...)}
	if keepRowNumber {
		ds.FeatureNames = append(ds.FeatureNames, "row")
	}
	ds.FeatureNames = append(ds.FeatureNames, t.names...)
	for i := range t.n {
		if keepRowNumber {
			ds.X = append(ds.X, t.row[i])
		}
		ds.X = append(ds.X, t.x[i*t.d:(i+1)*t.d]...)
	}
	return ds, ds.Validate()
}
