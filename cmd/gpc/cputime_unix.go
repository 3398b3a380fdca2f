//go:build unix

package main

import "syscall"

// processCPU is the process's user and system CPU time so far in
// nanoseconds, and whether the system reports it.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
