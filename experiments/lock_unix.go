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
func tryLock(path string, remove bool) (unlock func(), busy bool, err error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, false, err
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
