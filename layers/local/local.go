// Package local holds per-row local parameters: variational parameters with
// one row per training point, such as NIMGP's q(x_i) and the mean-field
// model's q(g_i). A minibatch touches only its own rows, so they
// are not global parameters of the optimiser: the training graph reads the
// batch's rows as an input, returns their gradient, and the training loop
// applies it row by row with Step after the global update.
package local

import (
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
)

// InitFunc writes the initial values of training row i into dst (Width values).
type InitFunc func(ds *datasets.Dataset, i int, dst []float64)

// Param is an N×Width table of per-row parameters.
//
// Its values are read through Row and Values (or after Settle), never as
// a stored slice: with the dense optimiser a row outside the recent
// batches is brought up to date only when it is read (see RowAdam).
type Param struct {
	// Name labels the rows in graphs and errors ("qx/mean").
	Name string
	// Width is the number of values per row.
	Width int
	data  []float64 // the rows, row-major
	init  InitFunc
	opt   *RowAdam
}

// New returns a table whose rows are initialised by init.
func New(name string, width int, init InitFunc) *Param {
	return &Param{Name: name, Width: width, init: init}
}

// Rows is the number of rows.
func (p *Param) Rows() int {
	if p.Width == 0 {
		return 0
	}
	return len(p.data) / p.Width
}

// Row returns row i, up to date (a view, valid until the next Step).
func (p *Param) Row(i int) []float64 {
	x := p.data[i*p.Width : (i+1)*p.Width]
	if p.opt != nil && p.opt.Dense {
		p.opt.settle(i, x)
	}
	return x
}

// Values returns the whole table, row-major, every row up to date (a view,
// valid until the next Step; writing to it sets the values).
func (p *Param) Values() []float64 {
	p.Settle(nil)
	return p.data
}

// Settle brings the given rows (every row when rows is nil) up to date:
// the dense optimiser's pending zero-gradient steps are applied, on
// several cores when there are many. Row and Values settle what they
// return; Settle lets a reader of many rows do it at once.
func (p *Param) Settle(rows []int) {
	r := p.opt
	if r == nil || !r.Dense {
		return
	}
	n := len(rows)
	if rows == nil {
		n = p.Rows()
	}
	var cost float64
	for k := range n {
		if owed := r.steps - r.done[rowAt(rows, k)]; owed > 0 {
			cost += r.settleCost(owed)
		}
	}
	if cost == 0 {
		return
	}
	if cost /= float64(n); graph.Splits(n, 1, cost) {
		// A row listed twice (a short batch's padding) must not be
		// settled by two cores at once.
		if rows != nil {
			rows = r.distinct(rows)
			n = len(rows)
		}
		graph.ParallelFor(n, 1, cost, func(lo, hi int) { p.settleRange(rows, lo, hi) })
	} else {
		p.settleRange(rows, 0, n)
	}
}

// distinct returns rows without repeats, in a scratch slice valid until
// the next call.
func (r *RowAdam) distinct(rows []int) []int {
	if len(r.mark) != len(r.done) {
		r.mark = make([]uint32, len(r.done))
	}
	r.gen++
	if r.gen == 0 { // wrapped: old marks could equal it
		clear(r.mark)
		r.gen = 1
	}
	out := r.distinctRows[:0]
	for _, i := range rows {
		if r.mark[i] != r.gen {
			r.mark[i] = r.gen
			out = append(out, i)
		}
	}
	r.distinctRows = out
	return out
}

// rowAt is the k-th row of a list, or row k when the list is nil (every
// row).
func rowAt(rows []int, k int) int {
	if rows == nil {
		return k
	}
	return rows[k]
}

// settleRange settles the rows from k = lo to hi of a Settle list.
func (p *Param) settleRange(rows []int, lo, hi int) {
	w := p.Width
	for k := lo; k < hi; k++ {
		i := rowAt(rows, k)
		p.opt.settle(i, p.data[i*w:(i+1)*w])
	}
}

// Reset initialises one row per training row of ds and drops any
// optimiser state.
func (p *Param) Reset(ds *datasets.Dataset) {
	p.data = make([]float64, ds.N*p.Width)
	p.opt = nil
	for i := 0; i < ds.N; i++ {
		p.init(ds, i, p.Row(i))
	}
}

// Grow initialises the rows of ds beyond the ones the table has (a data set
// with rows appended); existing rows and their optimiser state are kept.
func (p *Param) Grow(ds *datasets.Dataset) {
	old := p.Rows()
	for i := old; i < ds.N; i++ {
		p.data = append(p.data, make([]float64, p.Width)...)
		p.init(ds, i, p.data[i*p.Width:(i+1)*p.Width])
	}
	if p.opt != nil {
		p.opt.grow(ds.N)
	}
}

// SetOptimizer gives the rows their optimiser: Adam with learning rate lr,
// dense (every row at every step, as TensorFlow's Adam, the noisy-input
// paper's optimiser) or lazy (only the batch's rows, each with its own
// step count).
func (p *Param) SetOptimizer(lr float64, dense bool) {
	p.opt = NewRowAdam(lr, p.Rows(), p.Width)
	p.opt.Dense = dense
}

// Check reports a non-finite gradient of the batch's rows: rows[r] is the
// training row of batch row r, grad the batch's len(rows)×Width gradient.
func (p *Param) Check(rows []int, grad []float64) error {
	if n := len(rows) * p.Width; n <= len(grad) && graph.AllFinite(grad[:n]) {
		return nil
	}
	for r, i := range rows {
		for k, g := range grad[r*p.Width : (r+1)*p.Width] {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return fmt.Errorf("local: gradient of %s row %d, element %d is %v", p.Name, i, k, g)
			}
		}
	}
	return nil
}

// Step applies the gradient of the batch's rows (see Check) with the
// table's optimiser.
func (p *Param) Step(rows []int, grad []float64) error {
	if p.opt == nil {
		return fmt.Errorf("local: %s has no optimiser (SetOptimizer)", p.Name)
	}
	if err := p.Check(rows, grad); err != nil {
		return err
	}
	if p.opt.Dense {
		if p.opt.eager(p.Rows()) {
			p.Settle(nil)
		} else {
			p.Settle(rows)
		}
		p.opt.denseStep(rows, grad, p.data)
		return nil
	}
	for r, i := range rows {
		p.opt.Step(i, grad[r*p.Width:(r+1)*p.Width], p.Row(i))
	}
	return nil
}

// RowAdam is Adam for parameters with one row per training point, of which
// a batch touches only a few. Lazily (Dense false) each row keeps its own
// step count and moments and is updated only when it is in a batch: O(B·D)
// per step. Densely, as TensorFlow's Adam that the noisy-input paper's code
// used, every row is updated at every step with a zero gradient where it is
// absent, so its moments decay and it keeps moving on its momentum, with
// one global step count, and in steady state a row moves about √(N/B)
// times further than lazily.
//
// The dense update is applied when a row is read, not at every step: a row
// outside the batch owes the zero-gradient steps since it was last brought
// up to date, and settling it applies them: one by one with their own
// constants when they are few (the operations of stepping every row at
// every step, equal bit for bit), in closed form when they are many (equal
// to the rounding, see settle.go). A step then costs the batch's rows
// instead of a pass over the whole table, where the eager pass streamed
// three values per entry of the table through memory (MNIST's 60 000 rows
// of 1 568 values, 2.3 GB a step), and the closed form costs a row what
// one step does, not one per step owed (300 on MNIST).
type RowAdam struct {
	lr, b1, b2, eps float64
	width           int
	m, v            []float64
	t               []int // lazily: each row's step count
	// Dense selects TensorFlow's update of every row at every step.
	Dense bool
	// steps counts the dense steps.
	steps int
	// stepped is the number of rows that existed at the last dense step
	// (rows added by Grow after it have taken no step).
	stepped int
	// done is the dense step each row is up to date with; a row with done
	// 0 has zero moments (it has had no gradient), on which a
	// zero-gradient step changes nothing.
	done []int
	// recent holds the constants of the last len(recent) dense steps, by
	// step modulo its length, for settling rows without recomputing them.
	recent []graph.AdamConsts
	// recentFrom is the first step recent holds.
	recentFrom int
	// terms is how many steps the closed-form settle sums, 0 when the
	// decays are too slow for it (closedTermsOf).
	terms  int
	seen   []int32 // scratch for denseStep: batch position + 1 per row
	unique []int   // scratch for denseStep: first batch position of each row
	// mark, gen and distinctRows are Settle's scratch for dropping repeats.
	mark         []uint32
	gen          uint32
	distinctRows []int
}

// recentSteps is how many dense steps' constants are kept: more than a few
// epochs of steps at the batch sizes used, after which a row that has not
// been read recomputes them.
const recentSteps = 4096

// NewRowAdam returns Adam (β = 0.9, 0.999, ε = 1e-8) for rows×width values.
func NewRowAdam(lr float64, rows, width int) *RowAdam {
	r := newRowAdam(lr, 0.9, 0.999, 1e-8, width)
	r.m, r.v = make([]float64, rows*width), make([]float64, rows*width)
	r.t, r.done = make([]int, rows), make([]int, rows)
	return r
}

// newRowAdam returns the optimiser with its settings and no rows, with
// what depends on the settings alone worked out once.
func newRowAdam(lr, b1, b2, eps float64, width int) *RowAdam {
	r := &RowAdam{lr: lr, b1: b1, b2: b2, eps: eps, width: width}
	r.terms = closedTermsOf(b1, b2)
	return r
}

// consts returns the constants of dense step s (1 ≤ s ≤ steps).
func (r *RowAdam) consts(s int) *graph.AdamConsts {
	if s >= r.recentFrom && s > r.steps-len(r.recent) {
		return &r.recent[s%len(r.recent)]
	}
	k := graph.NewAdamConsts(r.lr, r.b1, r.b2, r.eps, s)
	return &k
}

// settle applies to row i, held in x, the zero-gradient dense steps it
// owes. Safe to call for different rows at once.
func (r *RowAdam) settle(i int, x []float64) {
	from := r.done[i]
	if from == r.steps {
		return
	}
	r.done[i] = r.steps
	if from == 0 {
		return
	}
	w := r.width
	m, v := r.m[i*w:(i+1)*w], r.v[i*w:(i+1)*w]
	if r.steps-from >= closedMin {
		r.settleClosed(x, m, v, from, r.steps)
		return
	}
	r.settleSteps(x, m, v, from, r.steps)
}

// Step updates row i, held in x, by its gradient g.
func (r *RowAdam) Step(i int, g, x []float64) {
	r.t[i]++
	c1 := 1 - math.Pow(r.b1, float64(r.t[i]))
	c2 := 1 - math.Pow(r.b2, float64(r.t[i]))
	for k, gk := range g {
		j := i*r.width + k
		r.m[j] = r.b1*r.m[j] + (1-r.b1)*gk
		r.v[j] = r.b2*r.v[j] + (1-r.b2)*gk*gk
		x[k] -= r.lr * (r.m[j] / c1) / (math.Sqrt(r.v[j]/c2) + r.eps)
	}
}

// denseStep takes one dense step. The batch's rows, up to date (Step
// settles them), are stepped by their gradient, a repeated row (such as the
// zero-weight padding of a short batch) by the sum of its gradients; every
// other row owes the step's zero-gradient update until it is read.
func (r *RowAdam) denseStep(rows []int, grad, x []float64) {
	n := len(r.done)
	if len(r.seen) != n {
		r.seen = make([]int32, n)
	}
	if r.recent == nil {
		r.recent = make([]graph.AdamConsts, recentSteps)
		r.recentFrom = r.steps + 1
	}
	w := r.width
	first := r.unique[:0]
	for b, i := range rows {
		if r.seen[i] == 0 {
			r.seen[i] = int32(b + 1)
			first = append(first, b)
			continue
		}
		// A repeated row: add its gradient to the first occurrence's.
		f := int(r.seen[i] - 1)
		for k := 0; k < w; k++ {
			grad[f*w+k] += grad[b*w+k]
			grad[b*w+k] = 0
		}
	}
	r.unique = first
	for _, i := range rows {
		r.seen[i] = 0
	}
	r.steps++
	r.stepped = n
	k := graph.NewAdamConsts(r.lr, r.b1, r.b2, r.eps, r.steps)
	r.recent[r.steps%len(r.recent)] = k
	if r.eager(n) {
		r.eagerStep(rows, first, grad, x, &k)
		return
	}
	for _, b := range first {
		i := rows[b]
		graph.AdamUpdate(x[i*w:(i+1)*w], r.m[i*w:(i+1)*w], r.v[i*w:(i+1)*w], grad[b*w:(b+1)*w], &k)
		r.done[i] = r.steps
	}
}

// eager reports whether a table of n rows is stepped whole, every row at
// every step, rather than its rows settled when read: when it fits in a
// core's cache, or when its rows are narrow, where a call per owed step of
// each row costs more than streaming the table (settling when read, rows
// of 20 values took 1.9 times as long as stepping whole, of 60 1.2 times,
// of 200 0.94, of 1 568 (MNIST's mean and variance) 0.34;
// BenchmarkDenseWidths).
func (r *RowAdam) eager(n int) bool {
	return n*r.width <= eagerValues || r.width < eagerWidth
}

// eagerValues and eagerWidth are eager's limits, variables for tests.
var eagerValues, eagerWidth = 1 << 16, 128

// eagerStep is denseStep's update of a table stepped whole: the batch's
// rows (first: each row's first batch position) by their gradient, runs of
// the other rows by a zero gradient, every row then up to date. The
// table's rows are all up to date before (it was stepped so last time, or
// Step settled it).
func (r *RowAdam) eagerStep(rows, first []int, grad, x []float64, k *graph.AdamConsts) {
	for _, b := range first {
		r.seen[rows[b]] = int32(b + 1)
	}
	n := len(r.done)
	// A large table is streamed by several cores.
	if cost := eagerValueCost * float64(r.width); graph.Splits(n, 1, cost) {
		graph.ParallelFor(n, 1, cost, func(lo, hi int) { r.eagerRows(lo, hi, grad, x, k) })
	} else {
		r.eagerRows(0, n, grad, x, k)
	}
	for _, b := range first {
		r.seen[rows[b]] = 0
	}
}

// eagerValueCost is the time of one value's step in a pass over a table
// in nanoseconds, for deciding whether to split it across cores.
const eagerValueCost = 1.5

// eagerRows is eagerStep's pass over rows [lo, hi).
func (r *RowAdam) eagerRows(lo, hi int, grad, x []float64, k *graph.AdamConsts) {
	w := r.width
	// Consecutive rows outside the batch are contiguous in x, m and v: one
	// call updates each such run.
	run := lo
	flush := func(end int) {
		if end > run {
			graph.AdamUpdate(x[run*w:end*w], r.m[run*w:end*w], r.v[run*w:end*w], nil, k)
		}
	}
	for i := lo; i < hi; i++ {
		if b := r.seen[i]; b > 0 {
			flush(i)
			run = i + 1
			graph.AdamUpdate(x[i*w:(i+1)*w], r.m[i*w:(i+1)*w], r.v[i*w:(i+1)*w], grad[int(b-1)*w:int(b)*w], k)
		}
		r.done[i] = r.steps
	}
	flush(hi)
}

// denseValueCost is the time of one value's zero-gradient step in
// nanoseconds (graph.AdamUpdate on a row in cache), closedValueCost that of
// one value's settle in closed form and closedStepCost that of one step in
// its weights, for deciding whether to split settling across cores.
const (
	denseValueCost  = 0.5
	closedValueCost = 3
	closedStepCost  = 10
)

// settleCost is the time in nanoseconds of settling a row that owes
// pending steps.
func (r *RowAdam) settleCost(pending int) float64 {
	switch {
	case pending == 0:
		return 0
	}
	terms, ok := r.closedTerms()
	if pending < closedMin || !ok {
		return denseValueCost * float64(r.width*pending)
	}
	return closedValueCost*float64(r.width) + closedStepCost*float64(min(pending, terms))
}

// grow adds rows with no Adam history (step count and moments zero).
func (r *RowAdam) grow(rows int) {
	if extra := rows - len(r.t); extra > 0 {
		r.m = append(r.m, make([]float64, extra*r.width)...)
		r.v = append(r.v, make([]float64, extra*r.width)...)
		r.t = append(r.t, make([]int, extra)...)
		r.done = append(r.done, make([]int, extra)...)
	}
}

// Steps is the number of optimiser steps row i has taken (0 without an
// optimiser or beyond its rows).
func (p *Param) Steps(i int) int {
	r := p.opt
	switch {
	case r == nil || i >= len(r.t):
		return 0
	case r.Dense && i < r.stepped:
		// Every row that existed at a dense step took it.
		return r.steps
	case r.Dense:
		return 0
	}
	return r.t[i]
}

// State is a table's values and its optimiser's: what a checkpoint of a
// fit must keep, since the rows are trained outside the global params. Its
// slices are views of the table's storage, valid until the next Step, so
// that saving the state of a large table copies nothing. With the dense
// optimiser, Data is the rows as stored, each up to date with the step
// Opt.Done gives, not what Values returns.
type State struct {
	Data []float64
	// Opt is nil when the table has no optimiser.
	Opt *RowAdamState
}

// RowAdamState is RowAdam's state, every field Step and denseStep read.
type RowAdamState struct {
	LR, B1, B2, Eps float64
	Width           int
	M, V            []float64
	T               []int
	Dense           bool
	Steps           int
	// Done is, with Dense, the step each row is up to date with (the rest
	// it owes; see RowAdam); nil when every row is (states saved before
	// rows were kept unsettled).
	Done []int
}

// State returns the table's state (views; see State). The dense
// optimiser's rows are left owing what they owe (Done): settling them here
// would round them otherwise than the uninterrupted fit, which settles them
// when they are next read, and a fit resumed from a checkpoint would not
// end bit for bit where it does.
func (p *Param) State() State {
	s := State{Data: p.data}
	if r := p.opt; r != nil {
		if r.Dense {
			for i := range r.t {
				r.t[i] = p.Steps(i)
			}
		}
		s.Opt = &RowAdamState{LR: r.lr, B1: r.b1, B2: r.b2, Eps: r.eps, Width: r.width, M: r.m, V: r.v, T: r.t, Dense: r.Dense, Steps: r.steps}
		if r.Dense {
			s.Opt.Done = r.done
		}
	}
	return s
}

// SetState restores a state from State into a table of the same shape (one
// Reset for the same data set), copying it; on error nothing changes.
func (p *Param) SetState(s State) error {
	if len(s.Data) != len(p.data) {
		return fmt.Errorf("local: state of %s has %d values, the table %d (%d rows of %d)", p.Name, len(s.Data), len(p.data), p.Rows(), p.Width)
	}
	var opt *RowAdam
	if o := s.Opt; o != nil {
		if len(o.M) != len(p.data) || len(o.V) != len(p.data) {
			return fmt.Errorf("local: optimiser state of %s has %d and %d moments; the table has %d rows of %d",
				p.Name, len(o.M), len(o.V), p.Rows(), p.Width)
		}
		var err error
		if opt, err = p.restoredAdam(*o, len(p.data)); err != nil {
			return err
		}
		copy(opt.m, o.M)
		copy(opt.v, o.V)
	}
	copy(p.data, s.Data)
	p.opt = opt
	return nil
}

// restoredAdam checks an optimiser state against the table and builds the
// optimiser it describes, with moments of n values for the caller to fill:
// the table's current optimiser's when it has them, so that a restore of
// gigabytes allocates no second copy of them; p.opt is left for the caller
// to replace.
func (p *Param) restoredAdam(o RowAdamState, n int) (*RowAdam, error) {
	rows := p.Rows()
	if o.Width != p.Width || len(o.T) != rows || (o.Done != nil && len(o.Done) != rows) {
		return nil, fmt.Errorf("local: optimiser state of %s has width %d, %d step counts and %d settled steps; the table has %d rows of %d",
			p.Name, o.Width, len(o.T), len(o.Done), rows, p.Width)
	}
	for i, d := range o.Done {
		if d < 0 || d > o.Steps {
			return nil, fmt.Errorf("local: optimiser state of %s: row %d is settled to step %d of %d", p.Name, i, d, o.Steps)
		}
	}
	opt := newRowAdam(o.LR, o.B1, o.B2, o.Eps, o.Width)
	opt.Dense, opt.steps, opt.t = o.Dense, o.Steps, append([]int(nil), o.T...)
	if old := p.opt; old != nil && cap(old.m) >= n && cap(old.v) >= n {
		opt.m, opt.v = old.m[:n], old.v[:n]
	} else {
		opt.m, opt.v = make([]float64, n), make([]float64, n)
	}
	// Each row is done with the steps Done says, or, in a state that has
	// none, with the steps it counts (such states were settled); the rows
	// that took the last dense step are the ones that count it.
	if o.Done != nil {
		opt.done = append([]int(nil), o.Done...)
	} else {
		opt.done = append([]int(nil), o.T...)
	}
	if o.Dense {
		for opt.stepped < rows && o.T[opt.stepped] == o.Steps && o.Steps > 0 {
			opt.stepped++
		}
		// The constants of the last steps, as denseStep keeps them: without
		// them the rows that owe steps at the resume would each recompute
		// theirs (a second over the first epoch of NIMGP on MNIST).
		if o.Steps > 0 {
			opt.recent = make([]graph.AdamConsts, recentSteps)
			opt.recentFrom = max(1, o.Steps-recentSteps+1)
			for s := opt.recentFrom; s <= o.Steps; s++ {
				opt.recent[s%recentSteps] = graph.NewAdamConsts(opt.lr, opt.b1, opt.b2, opt.eps, s)
			}
		}
	}
	return opt, nil
}
