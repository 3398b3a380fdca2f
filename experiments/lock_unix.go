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
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another `gpc experiment run` is writing %s (it holds %s); wait for it to finish, or give each runner its own --shard i/n", results, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
