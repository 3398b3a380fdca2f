//go:build linux

package datasets

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Class 1 of the second hardening round: the write path never replaces
// what --out names when it is not a regular file. Before AtomicFile the
// temporary file was renamed over a FIFO, a device node or a link alike.
func TestWriteAtomicKeepsSpecialFiles(t *testing.T) {
	dir := t.TempDir()

	// A FIFO nobody reads is refused at once, not blocked on, and stays.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() { done <- WriteFileAtomic(fifo, []byte("x\n")) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "FIFO that no process is reading") {
			t.Errorf("FIFO without a reader: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("writing a FIFO without a reader blocked")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v (%v)", st.Mode(), err)
	}

	// With a reader, the bytes go through the FIFO.
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	var err error
	for range 200 { // until the reader has opened its end
		if err = WriteFileAtomic(fifo, []byte("through\n")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through\n" {
		t.Errorf("the reader got %q", s)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", st.Mode())
	}

	// A link is followed: its target is replaced, the link stays a link.
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target.json", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link became %v", st.Mode())
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("the link's target holds %q", b)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o640 {
		t.Errorf("the target's permissions became %v", st.Mode().Perm())
	}

	// A link to nothing is refused and left alone.
	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink("nowhere/x.json", dangling); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(dangling, []byte("x")); err == nil || !strings.Contains(err.Error(), "symbolic link to nowhere/x.json") {
		t.Errorf("dangling link: %v", err)
	}
	if st, _ := os.Lstat(dangling); st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the dangling link became %v", st.Mode())
	}

	// A character device is written through (as root, renaming over it
	// would have replaced the node). A private copy of /dev/null's node,
	// so a regression cannot touch the real one.
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		if err := WriteFileAtomic(null, []byte("gone\n")); err != nil {
			t.Errorf("device: %v", err)
		}
		if st, _ := os.Lstat(null); st.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("the device node became %v", st.Mode())
		}
	}

	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") || strings.Contains(e.Name(), ".probe-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// Class 1: CheckWritableSize finds, before any work, a target its file
// system has no room for and a directory no file can be created in.
func TestCheckWritableBeforeWork(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.json")
	err := CheckWritableSize(out, 1<<62)
	if err == nil || !strings.Contains(err.Error(), "it needs about 4.0 EiB but "+dir+" has") {
		t.Errorf("no room: %v", err)
	}
	if err := CheckWritableSize(out, 1); err != nil {
		t.Errorf("a small file: %v", err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root creates files in any directory
		if err := CheckWritable(filepath.Join(ro, "m.json")); err == nil || !strings.Contains(err.Error(), "no permission to create files in "+ro) {
			t.Errorf("read-only directory: %v", err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the checks left files: %v", entries)
	}
}

// endlessLine yields n bytes of "1," and then "0\n" without holding them.
type endlessLine struct{ n int }

func (e *endlessLine) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := min(len(p), e.n)
	for i := range k {
		p[i] = "1,"[i%2]
	}
	e.n -= k
	if e.n == 0 && k < len(p) {
		p[k] = '\n'
		k++
	}
	return k, nil
}

// Class 5: a line of hundreds of megabytes is refused after the line cap
// with bounded memory (encoding/csv buffered it whole: a 300 MB line of
// one-character cells allocated gigabytes), in every text reader.
func TestReadersCapLines(t *testing.T) {
	const size = 300 << 20
	readers := map[string]func(r io.Reader) error{
		"csv":    func(r io.Reader) error { _, err := readCSV(r, "big.csv", CSVOptions{}); return err },
		"noise":  func(r io.Reader) error { _, err := readNoiseCSV(r, "big.csv", 1, 2); return err },
		"libsvm": func(r io.Reader) error { _, err := readLIBSVM(r, "big.libsvm", 0); return err },
		"whitespace": func(r io.Reader) error {
			_, _, _, _, err := readWhitespaceTable(r, "big.txt")
			return err
		},
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := read(&endlessLine{n: size})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), ":1: the line is longer than 4 MiB") {
				t.Errorf("got %v", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*MaxLineBytes {
				t.Errorf("reading allocated %d MiB", grew>>20)
			}
		})
	}
}

// Class 5: an error quotes a short excerpt of a bad cell, never the cell.
func TestErrorsQuoteExcerpts(t *testing.T) {
	cell := strings.Repeat("x", 1<<20)
	_, err := readCSV(strings.NewReader("1,2,0\n3,"+cell+",1\n"), "bad.csv", CSVOptions{})
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), `bad.csv:2:2: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (1048576 bytes)" is not a number`) {
		t.Errorf("got %.300v", err)
	}
}

// The cap is on a line's content: a line of exactly max bytes (with or
// without its newline) passes whole, one byte more fails on its line.
func TestLineCapBoundary(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		err  bool
	}{
		{"abcd\nef\n", "abcd\nef\n", false},
		{"abcd", "abcd", false},
		{"ab\nabcde\n", "ab\n", true},
		{"abcde", "", true},
	} {
		b, err := io.ReadAll(newLineCapReader(strings.NewReader(c.in), 4))
		var long *LineTooLongError
		if string(b) != c.want || errors.As(err, &long) != c.err {
			t.Errorf("%q: read %q, %v", c.in, b, err)
		}
		if c.err && long.Line != strings.Count(c.want, "\n")+1 {
			t.Errorf("%q: error on line %d", c.in, long.Line)
		}
	}
}
