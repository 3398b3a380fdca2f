//go:build unix

package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Round 2, appends: an append keeps every earlier line, starts its own
// line after a torn tail (which stays a line of its own), and creates a
// missing file.
func TestAppendLineKeepsEarlierLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "log.jsonl")
	if err := AppendLine(p, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := AppendLine(p, []byte(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	// A crash cut the third line short.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"c":`)
	f.Close()
	f, _ = os.Open(p)
	if !TornTail(f) {
		t.Error("TornTail: false for a file ending mid-line")
	}
	f.Close()
	if err := AppendLine(p, []byte(`{"d":4}`)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "{\"a\":1}\n{\"b\":2}\n{\"c\":\n{\"d\":4}\n"; string(b) != want {
		t.Errorf("file %q\nwant %q", b, want)
	}
	f, _ = os.Open(p)
	if TornTail(f) {
		t.Error("TornTail: true after an append")
	}
	f.Close()
	if err := AppendLine(p, []byte("two\nlines")); err == nil || !strings.Contains(err.Error(), "the line contains a newline") {
		t.Errorf("a line with a newline: %v", err)
	}
}

// Round 2, appends: links are followed as CreateAtomic follows them (the
// link stays a link), but only to a regular file: a FIFO, a device or a
// directory is refused at once, and a link to nothing is refused.
func TestAppendLineFollowsLinksToFilesOnly(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.jsonl")
	if err := os.WriteFile(real, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := AppendLine(link, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "x\ny\n" {
		t.Errorf("target %q, want %q", b, "x\ny\n")
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v %v", st, err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	toFifo := filepath.Join(dir, "to-fifo.jsonl")
	os.Symlink(fifo, toFifo)
	dangling := filepath.Join(dir, "dangling.jsonl")
	os.Symlink(filepath.Join(dir, "nothing"), dangling)
	for _, c := range []struct{ path, want string }{
		{fifo, "it is a FIFO, not a regular file"},
		{toFifo, "it is a FIFO, not a regular file"},
		{os.DevNull, "it is a character device, not a regular file"},
		{dir, "it is a directory"},
		{dangling, "it is a symbolic link to " + filepath.Join(dir, "nothing") + ", which does not exist"},
	} {
		done := make(chan error, 1)
		go func() { done <- AppendLine(c.path, []byte("z")) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "cannot write "+c.path+": ") {
				t.Errorf("%s: got %v\nwant %q", c.path, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: AppendLine blocked", c.path)
		}
	}
}
