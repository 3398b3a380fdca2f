package gemm

import (
	"sync/atomic"
	"time"
)

// timing switches on the accounting of the time spent in products, and
// nanos accumulates it (summed over goroutines).
var (
	timing atomic.Bool
	nanos  atomic.Int64
)

// SetTiming switches the accounting of product time on or off. Off, a
// product pays one atomic load for it.
func SetTiming(on bool) { timing.Store(on) }

// Nanos is the time spent so far in this package's level-3 entry points
// (Implementation's Dgemm, Dtrsm and Dtrmm, and DgemmSum) while timing was
// on, summed over goroutines.
func Nanos() int64 { return nanos.Load() }

// clock starts timing a call; done ends it.
type clock struct{ t0 time.Time }

func start() clock {
	if timing.Load() {
		return clock{time.Now()}
	}
	return clock{}
}

func (c clock) done() {
	if !c.t0.IsZero() {
		nanos.Add(int64(time.Since(c.t0)))
	}
}
