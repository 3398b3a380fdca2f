//go:build unix

package graph

import "syscall"

// ProcessCPU is the process's user and system CPU time so far in
// nanoseconds, and whether the system reports it: the measure of a
// computation's cost that neither a busy machine nor a paused process
// inflates, as they do its wall time.
func ProcessCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
