package datasets

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Row store file layout, all little endian:
//
//	[0:8)    magic "GPCROWS1" (the trailing digit is the format version)
//	[8:16)   N, uint64: number of rows
//	[16:24)  D, uint64: features per row
//	[24:32)  C, uint64: number of classes (max label + 1)
//	D float64 training-row column means, then D float64 training-row
//	population standard deviations
//	N rows of D float64 features followed by the label as a float64
//
// Storing the label as a float64 keeps every row a whole number of 8-byte
// words, so a row's offset is a single multiplication and the file can be
// inspected with any tool that reads raw float64 arrays.
const (
	rowStoreMagic = "GPCROWS1"
	// rowStoreFixed is the size of the magic plus N, D and C.
	rowStoreFixed = 8 + 3*8
	// maxRowStoreD bounds the D a header may announce, so a corrupt header
	// yields an error instead of a huge allocation for the statistics.
	maxRowStoreD = 1 << 20
)

// rowStoreHeaderSize is the byte offset of row 0 for D features.
func rowStoreHeaderSize(d int) int64 { return rowStoreFixed + 16*int64(d) }

// RowStore is a packed, read-only table of labelled rows on disk, read by
// row index with positioned reads. It exists so that training on data sets
// too large to hold as a Dataset (the SVGP paper's airline delays) keeps
// memory flat in N: only the minibatch being used is ever in memory.
//
// Read, Sample, Count, Indices and the accessors are safe for concurrent
// use: reads use pread (os.File.ReadAt), which has no shared file offset,
// and all other state is immutable after OpenRowStore. Close must not race
// with them.
type RowStore struct {
	f       *os.File
	path    string
	name    string
	n, d, c int
	mean    []float64
	std     []float64
	// scale is std with near-zero entries replaced by 1, precomputed so
	// Read does no per-call work or allocation for it.
	scale []float64
}

// BuildRowStore converts the CSV read from src into a row store at out. The
// first line is a header and is skipped; parse turns each later record into
// features and a label, and receives the record's 1-based line number
// (counting the header as line 1) so its errors can point at the line. The
// fields slice is reused for the next record (encoding/csv's ReuseRecord,
// which keeps the CSV pass allocation-free), so parse must not keep it.
// name is the file name used in error messages.
//
// The training statistics (mean and population standard deviation of each
// column over the rows with !isTest(row), row counting data rows from 0;
// isTest nil means every row is a training row) are accumulated with
// Welford's update while streaming, because the whole point of the store is
// never to hold all rows at once. They are stored in the header so every
// later reader standardises with the same numbers without a second pass.
//
// The rows go to a uniquely named temporary file in out's directory
// (CreateAtomic) that is synced and renamed to out only when everything
// succeeded, so out is
// either absent, the old file, or complete — never a partial store that
// OpenRowStore would have to detect. (A unique name rather than a fixed
// out+".tmp" because two experiment processes may build the same cache at
// once; with a shared temporary name their writes would interleave.)
//
// Every problem is returned as an error naming name, the line and the
// offending value (parse errors of type *ParseError get File and, if unset,
// Line filled in); the temporary file is removed. Records must all have as
// many fields as the header, parse must return the same number of finite
// features for every row, and labels must be non-negative; C is max label
// + 1.
func BuildRowStore(src io.Reader, name string, parse func(line int, fields []string) (x []float64, y int, err error), out string, isTest func(row int) bool) (err error) {
	af, err := CreateAtomic(out)
	if err != nil {
		return fmt.Errorf("datasets: building row store %s from %s: %w", out, name, err)
	}
	defer af.Abort()
	f := af.File
	ioErr := func(err error) error {
		return fmt.Errorf("datasets: building row store %s from %s: %w", out, name, err)
	}

	cr := newCSVReader(src)
	header, err := cr.Read()
	if err == io.EOF {
		return perr(name, 0, 0, "", "is empty: expected a header line followed by data rows")
	}
	if err != nil {
		return csvReadErr(name, err)
	}
	nfields := len(header)

	bw := bufio.NewWriterSize(f, 1<<16)
	var (
		n, d, maxY int
		rowBuf     []byte
		// Welford accumulators over the training rows.
		nTrain int
		mean   []float64
		m2     []float64
	)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return csvReadErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != nfields {
			return perr(name, line, 0, "", "has %d fields, but the header has %d", len(rec), nfields)
		}
		x, y, err := parse(line, rec)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				cp := *pe
				cp.File = name
				if cp.Line == 0 {
					cp.Line = line
				}
				return &cp
			}
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if n == 0 {
			d = len(x)
			if d == 0 {
				return perr(name, line, 0, "", "the parser returned no features for the first data row")
			}
			if d > maxRowStoreD {
				return perr(name, line, 0, "", "the parser returned %d features, more than the row store's limit of %d", d, maxRowStoreD)
			}
			// Reserve the header; its values are known only at the end.
			if _, err := bw.Write(make([]byte, rowStoreHeaderSize(d))); err != nil {
				return ioErr(err)
			}
			rowBuf = make([]byte, 8*(d+1))
			mean = make([]float64, d)
			m2 = make([]float64, d)
		}
		if len(x) != d {
			return perr(name, line, 0, "", "the parser returned %d features, but earlier rows have %d", len(x), d)
		}
		for j, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return perr(name, line, 0, "", "feature %d is %v, not a finite number", j+1, v)
			}
		}
		if y < 0 {
			return perr(name, line, 0, "", "label %d is negative; class labels must be 0, 1, 2, …", y)
		}
		if y > maxLabel {
			return perr(name, line, 0, "", "label %d is too large for a class label (max %d)", y, maxLabel)
		}
		maxY = max(maxY, y)
		for j, v := range x {
			binary.LittleEndian.PutUint64(rowBuf[8*j:], math.Float64bits(v))
		}
		binary.LittleEndian.PutUint64(rowBuf[8*d:], math.Float64bits(float64(y)))
		if _, err := bw.Write(rowBuf); err != nil {
			return ioErr(err)
		}
		if isTest == nil || !isTest(n) {
			nTrain++
			for j, v := range x {
				delta := v - mean[j]
				mean[j] += delta / float64(nTrain)
				m2[j] += delta * (v - mean[j])
			}
		}
		n++
	}
	if n == 0 {
		return perr(name, 0, 0, "", "has a header but no data rows")
	}
	if err := bw.Flush(); err != nil {
		return ioErr(err)
	}
	std := make([]float64, d)
	if nTrain > 0 {
		for j := range std {
			// Population variance, as FitScaler (np.std) uses, so a
			// store and Standardize agree on the same training rows.
			std[j] = math.Sqrt(max(m2[j], 0) / float64(nTrain))
		}
	}
	hdr := encodeRowStoreHeader(n, d, maxY+1, mean, std)
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return ioErr(err)
	}
	if err := af.Commit(); err != nil {
		return ioErr(err)
	}
	return nil
}

// encodeRowStoreHeader lays out the header described at rowStoreMagic.
func encodeRowStoreHeader(n, d, c int, mean, std []float64) []byte {
	b := make([]byte, rowStoreHeaderSize(d))
	copy(b, rowStoreMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	binary.LittleEndian.PutUint64(b[16:], uint64(d))
	binary.LittleEndian.PutUint64(b[24:], uint64(c))
	off := rowStoreFixed
	for _, v := range append(append([]float64(nil), mean...), std...) {
		binary.LittleEndian.PutUint64(b[off:], math.Float64bits(v))
		off += 8
	}
	return b
}

// OpenRowStore opens a store written by BuildRowStore. It reads only the
// header, and checks the magic and that the file size is exactly what the
// header implies, so a truncated or foreign file is rejected here rather
// than surfacing as a short read in the middle of training.
func OpenRowStore(path string) (*RowStore, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: opening row store: %w", err)
	}
	s, err := readRowStoreHeader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func readRowStoreHeader(f *os.File, path string) (*RowStore, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("datasets: row store %s: %s", path, fmt.Sprintf(format, args...))
	}
	st, err := f.Stat()
	if err != nil {
		return nil, bad("%v", err)
	}
	size := st.Size()
	var fixed [rowStoreFixed]byte
	if _, err := f.ReadAt(fixed[:], 0); err != nil {
		return nil, bad("file is %d bytes, too short for the %d-byte header (%v); it is not a row store or was truncated", size, rowStoreFixed, err)
	}
	if string(fixed[:8]) != rowStoreMagic {
		return nil, bad("bad magic %q, want %q: not a row store written by this version of gpc", fixed[:8], rowStoreMagic)
	}
	n64 := binary.LittleEndian.Uint64(fixed[8:])
	d64 := binary.LittleEndian.Uint64(fixed[16:])
	c64 := binary.LittleEndian.Uint64(fixed[24:])
	if d64 == 0 || d64 > maxRowStoreD {
		return nil, bad("header announces D = %d features, want 1..%d; the header is corrupt", d64, maxRowStoreD)
	}
	if c64 == 0 || c64 > maxLabel+1 {
		return nil, bad("header announces C = %d classes, want 1..%d; the header is corrupt", c64, maxLabel+1)
	}
	d := int(d64)
	hdrSize := rowStoreHeaderSize(d)
	rowBytes := 8 * (int64(d) + 1)
	if n64 > uint64((math.MaxInt64-hdrSize)/rowBytes) {
		return nil, bad("header announces N = %d rows, more than any file can hold; the header is corrupt", n64)
	}
	want := hdrSize + int64(n64)*rowBytes
	if size != want {
		return nil, bad("file is %d bytes, but its header (N = %d, D = %d) implies %d; the file is truncated or corrupt", size, n64, d, want)
	}
	stats := make([]byte, 16*d)
	if _, err := f.ReadAt(stats, rowStoreFixed); err != nil {
		return nil, bad("reading the column statistics: %v", err)
	}
	s := &RowStore{
		f:     f,
		path:  path,
		name:  strings.TrimSuffix(filepath.Base(path), ".rows"),
		n:     int(n64),
		d:     d,
		c:     int(c64),
		mean:  make([]float64, d),
		std:   make([]float64, d),
		scale: make([]float64, d),
	}
	for j := range d {
		s.mean[j] = math.Float64frombits(binary.LittleEndian.Uint64(stats[8*j:]))
		s.std[j] = math.Float64frombits(binary.LittleEndian.Uint64(stats[8*(d+j):]))
		if math.IsNaN(s.mean[j]) || math.IsInf(s.mean[j], 0) || math.IsNaN(s.std[j]) || math.IsInf(s.std[j], 0) || s.std[j] < 0 {
			return nil, bad("column %d has mean %v and standard deviation %v; the header is corrupt", j+1, s.mean[j], s.std[j])
		}
		// The same constant-column rule as FitScaler, so standardising
		// through the store matches Standardize.
		s.scale[j] = s.std[j]
		if s.scale[j] <= constantTol*math.Max(1, math.Abs(s.mean[j])) {
			s.scale[j] = 1
		}
	}
	return s, nil
}

// N returns the number of rows, training and test together.
func (s *RowStore) N() int { return s.n }

// D returns the number of features per row.
func (s *RowStore) D() int { return s.d }

// C returns the number of classes, max label + 1 over all rows, so a model
// sized from it has a latent function for every class the test rows use.
func (s *RowStore) C() int { return s.c }

// Mean returns a copy of the training-row column means stored in the
// header; a copy so callers cannot change what Read standardises with.
func (s *RowStore) Mean() []float64 { return append([]float64(nil), s.mean...) }

// Std returns a copy of the training-row population standard deviations
// stored in the header. A column without variance (or a store without
// training rows) has 0 here; Read divides by 1 for it instead.
func (s *RowStore) Std() []float64 { return append([]float64(nil), s.std...) }

// Path returns the file the store was opened from, for log lines.
func (s *RowStore) Path() string { return s.path }

// Close releases the file. Further reads fail; closing twice is harmless.
func (s *RowStore) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Read fills x (len(idx)·D values, row-major) and y (len(idx) labels) with
// the rows idx, in that order; indices may repeat and need not be sorted,
// which is what random minibatches and bootstrap resamples produce. With
// standardize, each feature becomes (v − mean)/std with the stored
// training statistics (std 0 counts as 1, as in FitScaler).
//
// It allocates only a one-row buffer per call, whatever len(idx) is, so a
// training loop can call it for every minibatch without garbage piling up.
// Each row costs one positioned read; the OS page cache, not this type,
// is what makes repeated reads of a file that fits in RAM cheap.
func (s *RowStore) Read(idx []int, x []float64, y []int, standardize bool) error {
	d := s.d
	if len(x) != len(idx)*d || len(y) != len(idx) {
		return fmt.Errorf("datasets: row store %s: Read of %d rows needs len(x) = %d and len(y) = %d, got %d and %d", s.path, len(idx), len(idx)*d, len(idx), len(x), len(y))
	}
	if len(idx) == 0 {
		return nil
	}
	if s.f == nil {
		return fmt.Errorf("datasets: row store %s: Read after Close", s.path)
	}
	rowBytes := 8 * (d + 1)
	hdr := rowStoreHeaderSize(d)
	buf := make([]byte, rowBytes)
	for k, i := range idx {
		if i < 0 || i >= s.n {
			return fmt.Errorf("datasets: row store %s: row index %d out of range [0,%d)", s.path, i, s.n)
		}
		if _, err := s.f.ReadAt(buf, hdr+int64(i)*int64(rowBytes)); err != nil {
			return fmt.Errorf("datasets: row store %s: reading row %d: %w", s.path, i, err)
		}
		xr := x[k*d : (k+1)*d]
		for j := range xr {
			v := math.Float64frombits(binary.LittleEndian.Uint64(buf[8*j:]))
			if standardize {
				v = (v - s.mean[j]) / s.scale[j]
			}
			xr[j] = v
		}
		lab := math.Float64frombits(binary.LittleEndian.Uint64(buf[8*d:]))
		// A label outside 0..C−1 can only come from a damaged file; catch
		// it here rather than as an index panic deep inside a model.
		if !(lab >= 0 && lab < float64(s.c)) || lab != math.Trunc(lab) {
			return fmt.Errorf("datasets: row store %s: row %d has label %v, not an integer in 0..%d; the file is corrupt", s.path, i, lab, s.c-1)
		}
		y[k] = int(lab)
	}
	return nil
}

// Sample returns the rows idx as an in-memory Dataset (named after the
// store file), for the parts of a pipeline that need a matrix: a held-out
// evaluation subset, inducing-point initialisation, or small runs.
func (s *RowStore) Sample(idx []int, standardize bool) (*Dataset, error) {
	ds := &Dataset{
		Name: s.name,
		X:    make([]float64, len(idx)*s.d),
		Y:    make([]int, len(idx)),
		N:    len(idx),
		D:    s.d,
		C:    s.c,
	}
	if err := s.Read(idx, ds.X, ds.Y, standardize); err != nil {
		return nil, err
	}
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	return ds, nil
}

// Count returns how many rows isTest assigns to training and to test (nil
// isTest: all training). It calls isTest once per row and stores nothing,
// so it stays cheap for split functions such as HashSplit.
func (s *RowStore) Count(isTest func(row int) bool) (train, test int) {
	for i := range s.n {
		if isTest != nil && isTest(i) {
			test++
		} else {
			train++
		}
	}
	return train, test
}

// Indices yields, in increasing order, the rows whose isTest(row) equals
// wantTest (nil isTest: every row is a training row). It is an iterator
// rather than a slice so that walking the test set of a store with millions
// of rows needs no index array.
func (s *RowStore) Indices(isTest func(row int) bool, wantTest bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range s.n {
			if (isTest != nil && isTest(i)) == wantTest {
				if !yield(i) {
					return
				}
			}
		}
	}
}

// HashSplit returns a train/test assignment in which row i is a test row
// iff a 64-bit hash of (seed, i) mapped to [0,1) is below testFrac. Unlike
// Split it needs no permutation array, so it costs nothing per row of
// memory, and it gives the same answer for a row whenever it is asked — the
// build of a row store and every later reader agree without sharing state.
// The fraction of test rows is testFrac up to binomial noise.
//
// The seed is hashed before it is combined with the row number: with
// splitmix64(seed^i), seeds s and s' would give the same split shifted by
// i → i^s^s', so splits of nearby seeds would be near-copies of each other
// (e.g. seeds 0 and 1 would only swap neighbouring rows) and repeated
// experiments over seeds would not be independent.
//
// It panics if testFrac is NaN or outside [0,1], a programming error.
func HashSplit(seed uint64, testFrac float64) func(row int) bool {
	if !(testFrac >= 0 && testFrac <= 1) {
		panic(fmt.Sprintf("datasets: HashSplit testFrac %v is not in [0,1]", testFrac))
	}
	key := splitmix64(seed)
	return func(row int) bool {
		u := float64(splitmix64(key^uint64(row))>>11) * 0x1p-53
		return u < testFrac
	}
}

// splitmix64 is the finaliser of Steele et al.'s SplitMix64 generator: a
// bijection on uint64 whose output bits each depend on all input bits,
// which is what makes consecutive row numbers look independent.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
