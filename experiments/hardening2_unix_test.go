//go:build unix

package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Round 2, appends and locks: a results file or lock file that is a link
// to a FIFO is refused at once instead of being written or locked into
// (results written into a FIFO are lost; the old append wrote them there),
// and an existing lock file is never emptied.
func TestStoreAndLocksRefuseSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	if err := os.Symlink(fifo, filepath.Join(out, "results.jsonl")); err != nil {
		t.Fatal(err)
	}
	st := &store{path: filepath.Join(out, "results.jsonl"), done: map[string]Result{}}
	done := make(chan error, 1)
	go func() { done <- st.append(Result{Key: "k1"}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "it is a FIFO, not a regular file") {
			t.Errorf("append to a link to a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("append to a link to a FIFO blocked")
	}

	lockDir := filepath.Join(dir, "locks")
	os.MkdirAll(lockDir, 0o755)
	os.Symlink(fifo, filepath.Join(lockDir, "results.jsonl.lock"))
	if unlock, err := lockResults(filepath.Join(lockDir, "results.jsonl")); err == nil || !strings.Contains(err.Error(), "is a FIFO, not a regular file; a lock file must be one") {
		t.Errorf("lock on a link to a FIFO: %v", err)
		if unlock != nil {
			unlock()
		}
	}
	held := filepath.Join(dir, "results.jsonl.lock")
	if err := os.WriteFile(held, []byte("someone's notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockResults(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if b, _ := os.ReadFile(held); string(b) != "someone's notes\n" {
		t.Errorf("the lock file's content became %q", b)
	}
}
