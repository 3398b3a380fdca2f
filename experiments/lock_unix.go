//go:build unix

package experiments

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockResults takes an exclusive advisory lock beside a results file, so
// that a second runner writing the same file (the same directory, or the
// same shard) stops with a clear message instead of doing every run twice.
// The lock dies with the process, so a killed runner never leaves it held.
func lockResults(results string) (unlock func(), err error) {
	path := results + ".lock"
	unlock, busy, err := tryLock(path, false)
	switch {
	case err != nil:
		return nil, fmt.Errorf("locking %s: %w", path, err)
	case busy:
		return nil, fmt.Errorf("another `gpc experiment run` is writing %s (it holds %s); wait for it to finish, or give each runner its own --shard i/n", results, path)
	}
	return unlock, nil
}

// tryLock takes an exclusive advisory lock on the file at path, created if
// need be, without waiting: busy reports that another open file holds it
// (another runner's, or this one's). With remove, unlock deletes the file
// before it lets go, and a lock taken on a file deleted meanwhile is
// dropped and taken again on the file now at path, so that two holders
// never think they hold it.
//
// The file is opened without O_TRUNC, so an existing file is never
// emptied, and a link is followed as datasets.CreateAtomic follows one;
// but what is locked must be a regular file: opening a device or FIFO
// that a lock's name points to could have effects of its own, and a lock
// on it says nothing to another runner.
func tryLock(path string, remove bool) (unlock func(), busy bool, err error) {
	for range 8 {
		if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
			return nil, false, lockRefusal(path, st.Mode())
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, false, err
		}
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			f.Close()
			if err != nil {
				return nil, false, err
			}
			return nil, false, lockRefusal(path, st.Mode())
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, true, nil
			}
			return nil, false, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() {
				if remove {
					os.Remove(path)
				}
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, false, nil
		}
		// The holder before us removed the file as it let go.
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
	return nil, true, nil
}

// lockRefusal says why the special file at path is not used as a lock.
func lockRefusal(path string, m os.FileMode) error {
	return fmt.Errorf("%s is a %s, not a regular file; a lock file must be one (remove it, and gpc creates a new one)", path, fileKind(m))
}

// fileKind names the type of a file mode, for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}
