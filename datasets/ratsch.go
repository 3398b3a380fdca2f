package datasets

import (
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// Rätsch (IDA) benchmark collection, the binary data of Table 1 of the SVGP
// classification paper (Hensman, Matthews & Ghahramani 2015), and GPflow's
// 400-point banana training set of its figure, as described in
// raetsch/PROVENANCE.md and banana/PROVENANCE.md under the data directory.
//
// What exists on disk shapes the API: the predefined 100 realisations
// (benchmarks.mat) could not be obtained, so only heart and ringnorm have
// official realisations 1..10 and banana, german and titanic realisation 1;
// every other (data set, realisation) pair is a seeded random split of the
// full pool with the published train/test sizes, and RatschSplit says which
// of the two it returned.

// ratschSpec describes one benchmark: the file stem under raetsch/full/ ("" if
// there is no full pool, only split files), the input dimension, the
// published train/test sizes (their sum is the pool size) and how many
// official IDA realisations are on disk. The loaders check the files against
// it, so a truncated or swapped file fails at load time rather than as an odd
// error rate later.
type ratschSpec struct {
	file           string
	d, train, test int
	officialSplits int
}

// ratschSpecs follows raetsch/PROVENANCE.md (sizes and dimensions, verified
// there against the published sizes of Rätsch et al. 2001).
var ratschSpecs = map[string]ratschSpec{
	"thyroid":       {file: "thyroid", d: 5, train: 140, test: 75},
	"heart":         {d: 13, train: 170, test: 100, officialSplits: 10},
	"twonorm":       {file: "twonorm", d: 20, train: 400, test: 7000},
	"ringnorm":      {d: 20, train: 400, test: 7000, officialSplits: 10},
	"german":        {file: "german", d: 20, train: 700, test: 300, officialSplits: 1},
	"waveform":      {file: "waveform", d: 21, train: 400, test: 4600},
	"breast-cancer": {file: "breast_cancer", d: 9, train: 200, test: 77},
	"flare-solar":   {file: "flare_solar", d: 9, train: 666, test: 400},
	"diabetis":      {file: "diabetis", d: 8, train: 468, test: 300},
	"banana":        {file: "banana", d: 2, train: 400, test: 4900, officialSplits: 1},
	"image":         {file: "image", d: 18, train: 1300, test: 1010},
	"splice":        {file: "splice", d: 60, train: 1000, test: 2175},
	"titanic":       {file: "titanic", d: 3, train: 150, test: 2051, officialSplits: 1},
}

// ratschAliases maps the other spellings in use to the canonical names:
// the file stems (breast_cancer, flare_solar), the English spelling of
// Rätsch's misspelt "diabetis", and the short names of the paper's Table 1
// (cancer, flare, diabetes).
var ratschAliases = map[string]string{
	"diabetes":      "diabetis",
	"breast_cancer": "breast-cancer",
	"cancer":        "breast-cancer",
	"flare_solar":   "flare-solar",
	"flare":         "flare-solar",
}

// RatschNames lists the benchmarks LoadRatsch and RatschSplit know: first the
// nine of Table 1 of the SVGP paper in the paper's order, then the other four
// of the collection that are on disk. Callers iterate it to run the whole
// table; the names are the canonical ones used in Dataset.Name.
func RatschNames() []string {
	return []string{
		"thyroid", "heart", "twonorm", "ringnorm", "german", "waveform", "breast-cancer", "flare-solar", "diabetis",
		"banana", "image", "splice", "titanic",
	}
}

// RatschSizes returns the published train/test sizes of one realisation of
// the benchmark (any name or alias RatschNames/LoadRatsch accept), so that
// experiment code and reports can state them without loading data. ok is
// false for an unknown name.
func RatschSizes(name string) (train, test int, ok bool) {
	canon, ok := ratschCanonical(name)
	if !ok {
		return 0, 0, false
	}
	s := ratschSpecs[canon]
	return s.train, s.test, true
}

func ratschCanonical(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := ratschAliases[n]; ok {
		n = a
	}
	_, ok := ratschSpecs[n]
	return n, ok
}

func ratschLookup(name string) (string, ratschSpec, error) {
	canon, ok := ratschCanonical(name)
	if !ok {
		return "", ratschSpec{}, fmt.Errorf("datasets: unknown Rätsch benchmark %q; known: %s (aliases: diabetes, breast_cancer, cancer, flare_solar, flare)", name, strings.Join(RatschNames(), ", "))
	}
	return canon, ratschSpecs[canon], nil
}

// hintRatsch tells a user with a missing file where the collection is
// documented, since it was assembled from several sources.
const hintRatsch = "the Rätsch benchmark files are described in <data dir>/raetsch/PROVENANCE.md; " + hintDataDir

// hintBanana does the same for GPflow's banana training set.
const hintBanana = "GPflow's banana training set is described in <data dir>/banana/PROVENANCE.md; " + hintDataDir

// LoadRatsch returns the full pool of one Rätsch benchmark (dataDir "" means
// ResolveDataDir("")): every pattern of the data set, which is what a random
// re-split needs. Names are those of RatschNames; "diabetes",
// "breast_cancer", "cancer", "flare_solar" and "flare" are accepted too.
//
// Labels ±1 become classes 0 (−1) and 1 (+1), C = 2, and LabelValues records
// {−1, +1}, because every model here expects 0..C−1 while the result tables
// speak of the positive class.
//
// The pool is raetsch/full/<name>.csv where it exists. heart and ringnorm have
// no full file: their pool is the union of realisation 1's train and test
// files (train rows first), which PROVENANCE checked to be the same set for
// all ten realisations. N and D are checked against the published sizes.
//
// The inputs are returned as stored and deliberately not standardised: the
// experiment protocol standardises on each training part (Standardize), and
// standardising the pool would leak test statistics. The files are not
// uniformly scaled — most are Rätsch's globally standardised copies, twonorm
// is raw, diabetis is the raw Pima table (see PROVENANCE) — which that
// per-split standardisation makes irrelevant.
func LoadRatsch(dataDir, name string) (*Dataset, error) {
	canon, spec, err := ratschLookup(name)
	if err != nil {
		return nil, err
	}
	dataDir, err = resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	var pool *Dataset
	if spec.file == "" {
		train, test, err := readRatschRealisation(dataDir, canon, spec, 1)
		if err != nil {
			return nil, err
		}
		pool = concatDatasets(train, test)
	} else {
		pool, err = readRatschCSV(dataDir, canon, spec)
		if err != nil {
			return nil, err
		}
	}
	return pool, pool.Validate()
}

// RatschSplit returns realisation k (1-based) of a Rätsch benchmark as
// train and test sets, and whether it is an official IDA realisation.
//
// Official realisations (heart and ringnorm k = 1..10; banana, german and
// titanic k = 1) are read verbatim from raetsch/splits/<name>/ so that results
// on them are comparable to the published ones; seed is then ignored. Every
// other k is a uniformly random partition of the LoadRatsch pool with the
// published sizes (RatschSizes), official = false: the official splits were
// not obtained, and a caller reporting results must say so. The random split
// depends only on (name, k, seed) — aliases give the same split — and
// different k give different splits, so k = 1..100 with one seed mimics the
// collection's 100 realisations.
//
// Labels and scaling are as in LoadRatsch: nothing is standardised here;
// standardise with statistics of train only (Standardize(train, test)).
func RatschSplit(dataDir, name string, k int, seed uint64) (train, test *Dataset, official bool, err error) {
	canon, spec, err := ratschLookup(name)
	if err != nil {
		return nil, nil, false, err
	}
	if k < 1 {
		return nil, nil, false, fmt.Errorf("datasets: RatschSplit(%q, k=%d): realisations are numbered from 1", canon, k)
	}
	dataDir, err = resolveIfEmpty(dataDir)
	if err != nil {
		return nil, nil, false, err
	}
	if k <= spec.officialSplits {
		train, test, err = readRatschRealisation(dataDir, canon, spec, k)
		if err != nil {
			return nil, nil, false, err
		}
		if err := train.Validate(); err != nil {
			return nil, nil, false, err
		}
		return train, test, true, test.Validate()
	}
	pool, err := LoadRatsch(dataDir, canon)
	if err != nil {
		return nil, nil, false, err
	}
	tr, te := ratschSplitIndices(canon, spec, k, seed)
	return pool.Subset(tr), pool.Subset(te), false, nil
}

// streamRatsch is the PCG stream of RatschSplit's random realisations, kept
// apart from the streams of protocol.go (see there why streams are used).
const streamRatsch = 0x5241_4554_0000_0009 // "RAET"

// ratschSplitIndices draws the random realisation k: the first spec.train
// entries of a permutation of the pool rows, then the rest. The stream mixes
// the name and k in (k times an odd constant, a bijection mod 2⁶⁴), so
// distinct k, or distinct data sets, draw from distinct PCG streams.
func ratschSplitIndices(canon string, spec ratschSpec, k int, seed uint64) (train, test []int) {
	h := fnv.New64a()
	h.Write([]byte(canon))
	stream := streamRatsch ^ h.Sum64() ^ uint64(k)*0x9e37_79b9_7f4a_7c15
	perm := newRand(seed, stream).Perm(spec.train + spec.test)
	return perm[:spec.train:spec.train], perm[spec.train:]
}

// readRatschCSV reads raetsch/full/<file>.csv: header x1..xD,y, the ±1 label
// last.
func readRatschCSV(dataDir, canon string, spec ratschSpec) (*Dataset, error) {
	rel := filepath.Join("raetsch", "full", spec.file+".csv")
	f, err := openData(dataDir, rel, hintRatsch)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	path := filepath.Join(dataDir, rel)
	vals, n, cols, lines, err := readNumericCSV(f, path)
	if err != nil {
		return nil, err
	}
	if cols != spec.d+1 {
		return nil, perr(path, lines[0], 0, "", "expected %d columns (%d inputs and the ±1 label), got %d", spec.d+1, spec.d, cols)
	}
	ds := newRatschDataset(canon, n, spec.d)
	for i := range n {
		row := vals[i*cols : (i+1)*cols]
		copy(ds.X[i*spec.d:], row[:spec.d])
		if ds.Y[i], err = pm1Label(path, lines[i], cols, row[spec.d]); err != nil {
			return nil, err
		}
	}
	if n != spec.train+spec.test {
		return nil, fmt.Errorf("datasets: %s: %d patterns, but the published size of %s is %d (%d train + %d test; see raetsch/PROVENANCE.md)", path, n, canon, spec.train+spec.test, spec.train, spec.test)
	}
	return ds, nil
}

// readRatschRealisation reads the official IDA files of realisation k:
// <name>_{train,test}_{data,labels}_<k>.asc, checking each part's size
// against the published one.
func readRatschRealisation(dataDir, canon string, spec ratschSpec, k int) (train, test *Dataset, err error) {
	train, err = readRatschPart(dataDir, canon, spec, "train", k, spec.train)
	if err != nil {
		return nil, nil, err
	}
	test, err = readRatschPart(dataDir, canon, spec, "test", k, spec.test)
	if err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func readRatschPart(dataDir, canon string, spec ratschSpec, part string, k, want int) (*Dataset, error) {
	dir := filepath.Join("raetsch", "splits", canon)
	stem := fmt.Sprintf("%s_%s_%%s_%d.asc", canon, part, k)
	x, n, d, xlines, xpath, err := readDataTable(dataDir, filepath.Join(dir, fmt.Sprintf(stem, "data")), hintRatsch)
	if err != nil {
		return nil, err
	}
	yv, ny, yc, ylines, ypath, err := readDataTable(dataDir, filepath.Join(dir, fmt.Sprintf(stem, "labels")), hintRatsch)
	if err != nil {
		return nil, err
	}
	if d != spec.d {
		return nil, perr(xpath, xlines[0], 0, "", "expected %d inputs per line for %s, got %d", spec.d, canon, d)
	}
	if yc != 1 {
		return nil, perr(ypath, ylines[0], 0, "", "expected one ±1 label per line, got %d columns", yc)
	}
	ds := newRatschDataset(canon, n, d)
	copy(ds.X, x)
	for i, v := range yv {
		if ds.Y[i], err = pm1Label(ypath, ylines[i], 1, v); err != nil {
			return nil, err
		}
	}
	if ny != n {
		return nil, fmt.Errorf("datasets: %s has %d rows but %s has %d labels", xpath, n, ypath, ny)
	}
	if n != want {
		return nil, fmt.Errorf("datasets: %s: %d patterns, but a %s %s part has %d (see raetsch/PROVENANCE.md)", xpath, n, canon, part, want)
	}
	return ds, nil
}

func newRatschDataset(name string, n, d int) *Dataset {
	return &Dataset{Name: name, N: n, D: d, C: 2, X: make([]float64, n*d), Y: make([]int, n), LabelValues: []float64{-1, 1}}
}

// pm1Label maps the collection's labels −1 → 0 and +1 → 1. Anything else is
// a corrupted file, not a third class, so it is an error at its position.
func pm1Label(path string, line, col int, v float64) (int, error) {
	switch v {
	case -1:
		return 0, nil
	case 1:
		return 1, nil
	}
	return 0, perr(path, line, col, strconv.FormatFloat(v, 'g', -1, 64), "is not a class label −1 or +1")
}

// concatDatasets appends b's rows to a's (same D, C and metadata as a).
func concatDatasets(a, b *Dataset) *Dataset {
	out := a.shallowMeta()
	out.N = a.N + b.N
	out.X = append(append(make([]float64, 0, len(a.X)+len(b.X)), a.X...), b.X...)
	out.Y = append(append(make([]int, 0, out.N), a.Y...), b.Y...)
	return out
}

// bananaN is the size of GPflow's banana training set (banana/PROVENANCE.md).
const bananaN = 400

// LoadBanana returns the 400-point banana training set of GPflow's
// notebooks, the data of the SVGP paper's banana figure, from
// <dataDir>/banana/banana_{X,Y}_train (dataDir "" means ResolveDataDir("")).
// It is the training part of Rätsch banana realisation 1 (RatschSplit
// "banana", k = 1) in the same row order, kept separately so the figure can
// be reproduced from exactly the files GPflow uses.
//
// The labels are already 0/1 (0 = Rätsch −1, 1 = +1), so C = 2 and
// LabelValues is nil. The inputs are not standardised, for the same reason
// as in LoadRatsch.
func LoadBanana(dataDir string) (*Dataset, error) {
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	xrel := filepath.Join("banana", "banana_X_train")
	f, err := openData(dataDir, xrel, hintBanana)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	xpath := filepath.Join(dataDir, xrel)
	x, n, d, xlines, err := readNumericCSV(f, xpath)
	if err != nil {
		return nil, err
	}
	if d != 2 {
		return nil, perr(xpath, xlines[0], 0, "", "expected 2 comma-separated inputs per line, got %d", d)
	}
	yv, ny, yc, ylines, ypath, err := readDataTable(dataDir, filepath.Join("banana", "banana_Y_train"), hintBanana)
	if err != nil {
		return nil, err
	}
	if yc != 1 {
		return nil, perr(ypath, ylines[0], 0, "", "expected one 0/1 label per line, got %d columns", yc)
	}
	ds := &Dataset{Name: "banana-gpflow", N: n, D: d, C: 2, X: x, Y: make([]int, n)}
	for i, v := range yv {
		if v != 0 && v != 1 {
			return nil, perr(ypath, ylines[i], 1, strconv.FormatFloat(v, 'g', -1, 64), "is not a class label 0 or 1")
		}
		ds.Y[i] = int(v)
	}
	if ny != n {
		return nil, fmt.Errorf("datasets: %s has %d rows but %s has %d labels", xpath, n, ypath, ny)
	}
	if n != bananaN {
		return nil, fmt.Errorf("datasets: %s: %d rows, but GPflow's banana training set has %d (see banana/PROVENANCE.md)", xpath, n, bananaN)
	}
	return ds, ds.Validate()
}

// readNumericCSV reads a comma-separated numeric table with an optional
// header (detected as by HeaderAuto) and no label semantics, because the
// Rätsch labels are ±1 (which ReadCSV rejects as negative classes) and
// GPflow's banana keeps inputs and labels in separate files. It returns the
// values row-major and the physical line of each row, like
// readWhitespaceTable.
func readNumericCSV(r io.Reader, path string) (vals []float64, rows, cols int, lines []int, err error) {
	cr := newCSVReader(r)
	cols = -1
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, 0, nil, csvReadErr(path, err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			cols = len(rec)
			if isHeader(rec) {
				continue
			}
		}
		if len(rec) != cols {
			return nil, 0, 0, nil, perr(path, line, min(len(rec), cols)+1, "", "wrong number of columns: expected %d, got %d", cols, len(rec))
		}
		for j, cell := range rec {
			v, err := parseCell(path, line, j+1, cell)
			if err != nil {
				return nil, 0, 0, nil, err
			}
			vals = append(vals, v)
		}
		lines = append(lines, line)
		rows++
	}
	if rows == 0 {
		return nil, 0, 0, nil, perr(path, 0, 0, "", "no data rows")
	}
	return vals, rows, cols, lines, nil
}
