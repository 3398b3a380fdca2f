package graph

import (
	"runtime"
	"sync"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// parallelMinWork is the smallest loop, in elements times per-element cost
// (≈ nanoseconds), worth splitting across cores. Handing a chunk to the
// other core costs tens of microseconds on the 2-vCPU machines this runs
// on (waking an idle virtual CPU): a 30 µs loop took 70–120 µs split, and
// memory-bound loops (a pass over one or two arrays) gained nothing below
// a million elements, so only work of about a quarter millisecond and more
// is split.
const parallelMinWork = 1 << 18

// parallelFor runs body over [0, n) in one contiguous chunk per core when
// n·cost (cost ≈ nanoseconds per element) is large enough, else in one
// call. Chunk boundaries are multiples of align, so that a chunk of a
// row-major matrix holds whole rows. Elementwise ops use it: the matrix
// products already use both cores, and the elementwise passes between them
// would otherwise leave one idle.
func parallelFor(n, align int, cost float64, body func(lo, hi int)) {
	parallelChunks(n, align, cost, func(_, lo, hi int) { body(lo, hi) })
}

// parallelChunks is parallelFor that also tells body its chunk's index.
// The chunks depend only on n, align, cost and GOMAXPROCS, never on what
// else is running: while an inter-op scheduler holds gemm.Serial they run
// one after another on the caller's goroutine, so a reduction that combines
// its chunks' partial results in chunk order rounds the same either way
// (and the same whether another program's graph runs side by side or not).
func parallelChunks(n, align int, cost float64, body func(chunk, lo, hi int)) {
	if !splits(n, align, cost) {
		body(0, 0, n)
		return
	}
	if align < 1 {
		align = 1
	}
	units := n / align
	chunks := min(runtime.GOMAXPROCS(0), units)
	bound := func(w int) int {
		if w >= chunks {
			return n
		}
		return (units * w / chunks) * align
	}
	if gemm.Procs() < 2 {
		for w := range chunks {
			body(w, bound(w), bound(w+1))
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(chunks - 1)
	for w := 1; w < chunks; w++ {
		go func(w int) {
			defer wg.Done()
			body(w, bound(w), bound(w+1))
		}(w)
	}
	body(0, bound(0), bound(1))
	wg.Wait()
}

// splits reports whether parallelFor(n, align, cost, …) would run in more
// than one chunk. A closure handed to parallelFor lives on the heap, with
// what it captures; ops test this first and call their loop directly when
// it runs in one piece, which is most calls on small models.
func splits(n, align int, cost float64) bool {
	if align < 1 {
		align = 1
	}
	return runtime.GOMAXPROCS(0) >= 2 && float64(n)*cost >= parallelMinWork && n/align >= 2
}

// ParallelFor is parallelFor for loops outside graphs (per-row work of
// likelihoods and of per-point tables): body over [0, n) in one contiguous
// chunk per core, chunk boundaries multiples of align, when n·cost (cost ≈
// nanoseconds per element) is worth splitting, else in one call.
func ParallelFor(n, align int, cost float64, body func(lo, hi int)) {
	parallelFor(n, align, cost, body)
}

// Splits reports whether ParallelFor(n, align, cost, …) would split: a
// caller in a hot path tests it first and calls its loop directly
// otherwise, as the closure it would hand ParallelFor is a heap allocation.
func Splits(n, align int, cost float64) bool { return splits(n, align, cost) }
