package graph

import (
	"fmt"
	"os"
	"sync/atomic"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// useTape selects Gorgonia's tape machine instead of the flat executor
// (GPC_EXECUTOR=tape), to compare the two.
var useTape = os.Getenv("GPC_EXECUTOR") == "tape"

// flat runs a compiled graph as a fixed schedule of its nodes in
// topological order. Gorgonia's tape machine clears its registers after
// every run (so every op allocates its output afresh), starts a goroutine
// and builds an argument slice per instruction; here each node keeps its
// output from one run to the next and hands it back to the op as the
// preallocated destination, and argument slices are built once, so a
// step of a small model allocates little beyond what the ops themselves do.
// The common Gorgonia ops, which allocate even with a destination, run as
// the package's own loops instead (fastops.go).
type flat struct {
	steps []flatStep
	index map[*G.Node]int
	// held marks the steps that hold (see hold): once a run has computed
	// them (ready), later runs keep their outputs.
	held  []bool
	ready bool
	// users lists each step's consumers (once per argument position), and
	// workers is how many goroutines run the steps (1: in order).
	users   [][]int32
	workers int
	pending []atomic.Int32
	// outs are the steps the caller reads; shared says the output buffers
	// have been reassigned by liveness (share.go), sharedBufs which.
	outs       map[*G.Node]bool
	shared     bool
	sharedBufs []*outBuf
	bufs       []*outBuf // every step's managed buffer (claim)
}

type flatStep struct {
	node *G.Node
	op   G.Op
	pd   G.UsePreallocDoer
	// in holds the steps whose outputs are the arguments; a leaf (an input,
	// a parameter, a constant) has none and reads its bound value.
	in   []int
	args []G.Value
	out  G.Value
	leaf bool
	// fast, when set, computes the op without Gorgonia (see fastops.go).
	fast fastOp
}

// newFlat schedules the nodes of g (already reduced to what the outputs
// need).
func newFlat(g *G.ExprGraph) (*flat, error) {
	sorted, err := G.Sort(g)
	if err != nil {
		return nil, err
	}
	f := &flat{index: make(map[*G.Node]int, len(sorted))}
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		kids := children(n)
		st := flatStep{node: n, op: n.Op(), leaf: len(kids) == 0}
		if !st.leaf {
			st.args = make([]G.Value, len(kids))
			for _, c := range kids {
				j, ok := f.index[c]
				if !ok {
					return nil, fmt.Errorf("graph: %s is scheduled before its argument %s", n.Name(), c.Name())
				}
				st.in = append(st.in, j)
			}
			st.pd, _ = st.op.(G.UsePreallocDoer)
			if fastOpsOn {
				st.fast = recognise(n, kids)
			}
		}
		f.index[n] = len(f.steps)
		f.steps = append(f.steps, st)
	}
	f.plan()
	return f, nil
}

// run executes every step once: in schedule order, or side by side on
// f.workers goroutines when the graph is wide enough (see interop.go).
func (f *flat) run() error {
	f.claim()
	if f.workers > 1 && oneCorePerRun.Load() == 0 {
		return f.runParallel(f.workers)
	}
	for i := range f.steps {
		if err := f.exec(i); err != nil {
			return err
		}
	}
	if f.held != nil {
		f.ready = true
	}
	if !f.shared && !shareOff && f.workers == 1 && f.outs != nil {
		f.share(f.outs)
	}
	return nil
}

// exec runs step i, whose arguments are computed.
func (f *flat) exec(i int) error {
	st := &f.steps[i]
	if f.ready && f.held[i] {
		return nil
	}
	if st.leaf {
		if v := st.node.Value(); v != nil {
			st.out = v
			return nil
		}
		if st.op == nil {
			return fmt.Errorf("graph: input %s has no value", st.node.Name())
		}
		if st.out == nil {
			v, err := st.op.Do()
			if err != nil {
				return fmt.Errorf("graph: %s: %w", st.node.Name(), err)
			}
			st.out = v
		}
		return nil
	}
	for k, j := range st.in {
		st.args[k] = f.steps[j].out
	}
	if st.fast != nil {
		if v, ok := st.fast.do(st.args); ok {
			st.out = v
			return nil
		}
	}
	var v G.Value
	var err error
	if st.pd != nil && st.out != nil && !aliases(st.out, st.args) {
		v, err = st.pd.UsePreallocDo(st.out, st.args...)
		if err != nil {
			v, err = st.op.Do(st.args...)
		}
	} else {
		v, err = st.op.Do(st.args...)
	}
	if err != nil {
		return fmt.Errorf("graph: %s (%v): %w", st.node.Name(), st.op, err)
	}
	st.out = v
	return nil
}

// hold makes every op step that does not depend on a varying node keep
// its output from the next run on, and release (varying nil) undoes it.
// Leaves are never held: they only read their bound values. An output
// held this way stays valid because every step writes into its own buffer
// only (an op handed an argument's memory as destination runs unbuffered;
// see aliases).
func (f *flat) hold(varying map[*G.Node]bool) {
	f.unshare() // the steps that keep their values change
	f.ready = false
	if varying == nil {
		f.held = nil
		return
	}
	moves := make([]bool, len(f.steps))
	f.held = make([]bool, len(f.steps))
	for i := range f.steps {
		st := &f.steps[i]
		moves[i] = varying[st.node]
		for _, j := range st.in {
			moves[i] = moves[i] || moves[j]
		}
		f.held[i] = !st.leaf && !moves[i]
	}
}

// value returns a node's output from the last run.
func (f *flat) value(n *G.Node) (G.Value, bool) {
	i, ok := f.index[n]
	if !ok || f.steps[i].out == nil {
		return nil, false
	}
	return f.steps[i].out, true
}

// aliases reports whether out shares memory with an argument: an op that
// returned an argument itself or a view of it must not be handed that
// buffer as its destination, or it would overwrite its own input.
func aliases(out G.Value, args []G.Value) bool {
	p := dataPtr(out)
	if p == 0 {
		return true
	}
	for _, a := range args {
		if a == out || dataPtr(a) == p {
			return true
		}
	}
	return false
}

// dataPtr is the address of a value's first element (0 for scalars and
// empty tensors, which are cheap to reallocate).
func dataPtr(v G.Value) uintptr {
	d, ok := v.(*tensor.Dense)
	if !ok || d == nil || d.Size() == 0 || d.DataSize() == 0 {
		return 0
	}
	return d.Uintptr()
}
