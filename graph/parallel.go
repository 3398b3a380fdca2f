package graph

import (
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
	if !splits(n, align, cost) {
		body(0, n)
		return
	}
	workers := gemm.Procs()
	if align < 1 {
		align = 1
	}
	units := n / align
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

// splits reports whether parallelFor(n, align, cost, …) would run in more
// than one chunk. A closure handed to parallelFor lives on the heap, with
// what it captures; ops test this first and call their loop directly when
// it runs in one piece, which is most calls on small models.
func splits(n, align int, cost float64) bool {
	if align < 1 {
		align = 1
	}
	return gemm.Procs() >= 2 && float64(n)*cost >= parallelMinWork && n/align >= 2
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
