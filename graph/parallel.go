package graph

import (
	"runtime"
	"sync"
)

// parallelMinWork is the smallest loop, in elements times per-element cost
// (≈ nanoseconds), worth splitting across cores: starting and joining a
// goroutine costs a few microseconds.
const parallelMinWork = 1 << 16

// parallelFor runs body over [0, n) in one contiguous chunk per core when
// n·cost (cost ≈ nanoseconds per element) is large enough, else in one
// call. Chunk boundaries are multiples of align, so that a chunk of a
// row-major matrix holds whole rows. Elementwise ops use it: the matrix
// products already use both cores, and the elementwise passes between them
// would otherwise leave one idle.
func parallelFor(n, align, cost int, body func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if align < 1 {
		align = 1
	}
	units := n / align
	if workers < 2 || n*cost < parallelMinWork || units < 2 {
		body(0, n)
		return
	}
	workers = min(workers, units)
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	lo := 0
	for w := 0; w < workers; w++ {
		hi := n
		if w+1 < workers {
			hi = (units * (w + 1) / workers) * align
		}
		if w+1 == workers {
			body(lo, hi)
			break
		}
		go func(lo, hi int) {
			defer wg.Done()
			body(lo, hi)
		}(lo, hi)
		lo = hi
	}
	wg.Wait()
}
