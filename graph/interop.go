package graph

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// Inter-op parallelism. A multi-class model's graph is C independent
// chains (a kernel, a Cholesky factor, the marginals and their gradients
// per class) joined by the likelihood. Splitting each op across the two
// cores leaves most of them on one: the elementwise passes between the
// products are too short to split (parallelMinWork), and a split product
// of MNIST's per-class size runs at half the rate of one on its own core.
// Running whole ops side by side, one per core, keeps both cores busy on
// every part of such a step; each op then runs on its own goroutine alone
// (gemm.Serial), so the order of its arithmetic, and its result, do not
// depend on which goroutine ran it.

// interOpMode is GPC_INTEROP: "off" always runs steps in order, "on" runs
// every graph side by side on two cores or more; otherwise plan decides.
var interOpMode = os.Getenv("GPC_INTEROP")

const (
	// interOpMinWork is the smallest run, in elements touched and
	// multiply-adds (≈ nanoseconds), worth scheduling across cores: a
	// handoff between them costs microseconds. The waveform step (2.4 M by
	// this count, width 4.8) ran 15% faster side by side; the binary SVGP
	// step (0.75 M) is kept in order, as is anything smaller.
	interOpMinWork = 1 << 21
	// interOpMinWidth is the smallest ratio of a run's total work to its
	// critical path at which two cores can shorten it by a third.
	interOpMinWidth = 1.5
)

// stepCost estimates a step's time in elements touched, or multiply-adds
// for a product.
func (f *flat) stepCost(i int) float64 {
	st := &f.steps[i]
	if st.leaf {
		return 0
	}
	if mm, ok := st.op.(matMulOp); ok {
		return float64(mm.m) * float64(mm.k) * float64(mm.n)
	}
	c := float64(st.node.Shape().TotalSize())
	for _, j := range st.in {
		c += float64(f.steps[j].node.Shape().TotalSize())
	}
	return c
}

// plan lists each step's consumers and chooses the number of workers: more
// than one when the graph's total work is large and at least
// interOpMinWidth times its critical path (the costliest chain of
// dependent steps), as in a model with several classes.
func (f *flat) plan() {
	n := len(f.steps)
	f.users = make([][]int32, n)
	for i := range f.steps {
		for _, j := range f.steps[i].in {
			f.users[j] = append(f.users[j], int32(i))
		}
	}
	f.workers = 1
	procs := runtime.GOMAXPROCS(0)
	if procs < 2 || interOpMode == "off" {
		return
	}
	finish := make([]float64, n)
	var total, longest float64
	for i := range f.steps {
		start := 0.0
		for _, j := range f.steps[i].in {
			start = max(start, finish[j])
		}
		c := f.stepCost(i)
		finish[i] = start + c
		total += c
		longest = max(longest, finish[i])
	}
	if longest == 0 {
		return
	}
	width := total / longest
	if interOpMode == "on" || (total >= interOpMinWork && width >= interOpMinWidth) {
		f.workers = min(procs, max(2, int(width)))
		f.pending = make([]atomic.Int32, n)
	}
}

// oneCorePerRun counts the holders of OneCorePerRun.
var oneCorePerRun atomic.Int32

// OneCorePerRun makes every program run its steps in order and every op
// run on its caller's goroutine, until release is called. A caller that
// already keeps each core busy with its own work, such as an experiment
// runner fitting as many models side by side as there are cores, holds
// it: a fit that spread itself over the cores as well would only add
// handoffs between goroutines contending for them. Results do not change:
// the schedule never changes a program's arithmetic.
func OneCorePerRun() (release func()) {
	oneCorePerRun.Add(1)
	releaseGemm := gemm.Serial()
	var once sync.Once
	return func() {
		once.Do(func() {
			releaseGemm()
			oneCorePerRun.Add(-1)
		})
	}
}

// Cores is the number of goroutines a computation outside a graph should
// spread over now: GOMAXPROCS, or 1 while OneCorePerRun (or an inter-op
// scheduler) holds the products to their callers' goroutines.
func Cores() int { return gemm.Procs() }

// sequential makes the program run its steps in order.
func (f *flat) sequential() { f.workers = 1 }

// runParallel runs the steps on workers goroutines (the caller's and
// workers − 1 more), each step once all its arguments are computed. The
// first error is returned; a panic in an op is raised again on the
// caller's goroutine, where Program.Run turns it into an error as it does
// for the sequential run.
func (f *flat) runParallel(workers int) error {
	n := len(f.steps)
	if n == 0 {
		return nil
	}
	ready := make(chan int32, n)
	for i := range f.steps {
		k := int32(len(f.steps[i].in))
		f.pending[i].Store(k)
		if k == 0 {
			ready <- int32(i)
		}
	}
	var left atomic.Int32
	left.Store(int32(n))
	var (
		failed   atomic.Bool
		mu       sync.Mutex
		firstErr error
		panicked any
	)
	release := gemm.Serial()
	defer release()
	work := func() {
		for i := range ready {
			if !failed.Load() {
				if err, p, bad := f.execRecover(int(i)); bad || err != nil {
					mu.Lock()
					if firstErr == nil && panicked == nil {
						firstErr, panicked = err, p
					}
					mu.Unlock()
					failed.Store(true)
				}
			}
			// Consumers are released even after a failure, so that every
			// step is taken once and the workers finish.
			for _, u := range f.users[i] {
				if f.pending[u].Add(-1) == 0 {
					ready <- u
				}
			}
			if left.Add(-1) == 0 {
				close(ready)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for range workers - 1 {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	if firstErr != nil {
		return firstErr
	}
	if f.held != nil {
		f.ready = true
	}
	return nil
}

// execRecover is exec that also reports a panic (bad) instead of raising it
// on a worker goroutine, where nothing would recover it.
func (f *flat) execRecover(i int) (err error, p any, bad bool) {
	defer func() {
		if r := recover(); r != nil {
			p, bad = r, true
		}
	}()
	return f.exec(i), nil, false
}
