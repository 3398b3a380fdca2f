package gemm

import (
	"runtime"
	"sync/atomic"
)

// serial counts the holders of Serial.
var serial atomic.Int32

// Procs is the number of goroutines one call may split its work over:
// GOMAXPROCS, or 1 while any caller holds Serial.
func Procs() int {
	if serial.Load() > 0 {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// Serial makes every call run on its caller's goroutine until release is
// called. An inter-op scheduler holds it while it runs ops side by side,
// one per core: an op that split itself as well would only add handoffs.
func Serial() (release func()) {
	serial.Add(1)
	return func() { serial.Add(-1) }
}
