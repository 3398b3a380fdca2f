package graph

import (
	"os"
	"unsafe"

	G "gorgonia.org/gorgonia"
)

// Output buffers shared by liveness. Each node keeps its output buffer
// from one run to the next, so a step's memory is the sum of all its
// intermediates: 49 MB for the additive-noise UCI step (M = 300, batch
// 1024), of which about a third is live at any moment of an in-order run.
// Every op then reads data that left the caches long ago. After the first
// in-order run, the buffers of the package's own ops are reassigned from a
// few slabs, a slab going to a later op once every consumer of the earlier
// one has run: 49 MB of the UCI step's buffers fit in 18.5 MB, and the
// step takes 25.8–26.2 ms on one core instead of 29.7–30.8 (the synthetic
// one 3.97–4.00 instead of 4.14–4.24, astrophysics 2.57–2.61 instead of
// 2.69–2.74; interleaved), the values bit for bit the same.
//
// Kept out: the outputs the caller reads, held steps (whose values outlive
// a run), fast ops and Gorgonia's own ops (their buffers are their own),
// and programs that run ops side by side (whose order is not fixed). A
// step whose output is an argument or a view of one keeps that argument's
// memory alive as long as its own (checked on the first run's values).
// The buffers belong to the graph's nodes, which several programs may
// share (a gradient check compiles one after another): a plan records its
// program as the buffers' owner, a program about to run drops any other
// program's plan over its buffers, and Close gives them back.
// GPC_BUFFERS=own turns the sharing off.

// shareOff is GPC_BUFFERS=own.
var shareOff = os.Getenv("GPC_BUFFERS") == "own"

// share reassigns the eligible steps' output buffers from slabs, after an
// in-order run; outs are the steps whose values the caller reads.
func (f *flat) share(outs map[*G.Node]bool) {
	f.shared = true
	n := len(f.steps)
	last := make([]int, n) // the last step that reads each step's memory
	for i := range f.steps {
		last[i] = i
		for _, j := range f.steps[i].in {
			last[j] = max(last[j], i)
		}
	}
	for i := range f.steps {
		if outs[f.steps[i].node] || (f.held != nil && f.held[i]) {
			last[i] = n
		}
	}
	// An output that is an argument, or a view of one, keeps the
	// argument's memory in use while it is itself in use.
	for i := n - 1; i >= 0; i-- {
		st := &f.steps[i]
		p := dataPtr(st.out)
		for k, j := range st.in {
			if a := st.args[k]; a == st.out || (p != 0 && dataPtr(a) == p) {
				last[j] = max(last[j], last[i])
			}
		}
	}
	type slab struct {
		data []float64
		free int // the slab is free for steps after this one
	}
	var slabs []*slab
	for i := range f.steps {
		st := &f.steps[i]
		if st.leaf || st.fast != nil || last[i] >= n {
			continue
		}
		b := bufOf(st.op)
		if b == nil {
			continue
		}
		if dataPtr(st.out) == 0 || len(b.data) == 0 || dataPtr(st.out) != uintptr(unsafe.Pointer(&b.data[0])) {
			continue // its output is not its buffer (a scalar, or a value it returned)
		}
		size := len(b.data)
		var pick *slab
		for _, s := range slabs { // the smallest free slab with room
			if s.free < i && cap(s.data) >= size && (pick == nil || cap(s.data) < cap(pick.data)) {
				pick = s
			}
		}
		if pick == nil {
			pick = &slab{data: make([]float64, size)}
			slabs = append(slabs, pick)
		}
		pick.free = last[i]
		b.data, b.owner = pick.data[:size:size], f
		f.sharedBufs = append(f.sharedBufs, b)
	}
}

// unshare gives the shared steps their own buffers again (from the next
// run on), before the steps that may keep values change, or when the
// program is closed. A buffer another program has since planned is left
// to that program.
func (f *flat) unshare() {
	for _, b := range f.sharedBufs {
		if b.owner == f {
			b.data, b.owner = nil, nil
		}
	}
	f.sharedBufs = f.sharedBufs[:0]
	f.shared = false
}

// claim drops any other program's plan over this program's buffers before
// it runs: the buffers belong to the graph's nodes, and a program compiled
// from the same graph may have planned them for its own schedule.
func (f *flat) claim() {
	if f.bufs == nil {
		f.bufs = []*outBuf{}
		for i := range f.steps {
			if b := bufOf(f.steps[i].op); b != nil {
				f.bufs = append(f.bufs, b)
			}
		}
	}
	for _, b := range f.bufs {
		if o := b.owner; o != nil && o != f {
			o.unshare()
		}
	}
}
