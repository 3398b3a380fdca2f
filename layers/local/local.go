// Package local holds per-row local parameters: variational parameters with
// one row per training point, such as NIMGP's q(x_i) (and, later, the
// mean-field model's q(g_i)). A minibatch touches only its own rows, so they
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
type Param struct {
	// Name labels the rows in graphs and errors ("qx/mean").
	Name string
	// Width is the number of values per row.
	Width int
	// Data holds the rows, row-major.
	Data []float64
	init InitFunc
	opt  *RowAdam
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
	return len(p.Data) / p.Width
}

// Row returns row i (a view).
func (p *Param) Row(i int) []float64 { return p.Data[i*p.Width : (i+1)*p.Width] }

// Reset initialises one row per training row of ds and drops any
// optimiser state.
func (p *Param) Reset(ds *datasets.Dataset) {
	p.Data = make([]float64, ds.N*p.Width)
	for i := 0; i < ds.N; i++ {
		p.init(ds, i, p.Row(i))
	}
	p.opt = nil
}

// Grow initialises the rows of ds beyond the ones the table has (a data set
// with rows appended); existing rows and their optimiser state are kept.
func (p *Param) Grow(ds *datasets.Dataset) {
	old := p.Rows()
	for i := old; i < ds.N; i++ {
		p.Data = append(p.Data, make([]float64, p.Width)...)
		p.init(ds, i, p.Row(i))
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
		p.opt.denseStep(rows, grad, p.Data)
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
// one global step count: O(N·D) per step, and in steady state a row moves
// about √(N/B) times further than lazily.
type RowAdam struct {
	lr, b1, b2, eps float64
	width           int
	m, v            []float64
	t               []int
	// Dense selects TensorFlow's update of every row at every step.
	Dense bool
	// steps counts the dense steps.
	steps int
	seen  []int32 // scratch for denseStep: batch position + 1 per row
}

// NewRowAdam returns Adam (β = 0.9, 0.999, ε = 1e-8) for rows×width values.
func NewRowAdam(lr float64, rows, width int) *RowAdam {
	return &RowAdam{lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8, width: width,
		m: make([]float64, rows*width), v: make([]float64, rows*width), t: make([]int, rows)}
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

// denseStep updates every row: the batch's by their gradient (summed over
// repeats, such as the zero-weight padding of a short batch), the others by
// a zero gradient.
func (r *RowAdam) denseStep(rows []int, grad, x []float64) {
	n := len(r.t)
	if len(r.seen) != n {
		r.seen = make([]int32, n)
	}
	w := r.width
	r.steps++
	k := graph.NewAdamConsts(r.lr, r.b1, r.b2, r.eps, r.steps)
	for b, i := range rows {
		if r.seen[i] == 0 {
			r.seen[i] = int32(b + 1)
			continue
		}
		// A repeated row: add its gradient to the first occurrence's.
		first := int(r.seen[i] - 1)
		for k := 0; k < w; k++ {
			grad[first*w+k] += grad[b*w+k]
			grad[b*w+k] = 0
		}
	}
	// The rows are independent, and at MNIST's size (60 000 rows of 1 568
	// values, a square root and a division each) the step is far longer than
	// the graph's, so large tables are split across cores.
	if cost := denseValueCost * float64(w); graph.Splits(n, 1, cost) {
		graph.ParallelFor(n, 1, cost, func(lo, hi int) { r.denseRows(lo, hi, grad, x, k) })
	} else {
		r.denseRows(0, n, grad, x, k)
	}
	for _, i := range rows {
		r.seen[i] = 0
	}
}

// denseValueCost is a dense step's time per value in nanoseconds
// (graph.AdamUpdate from memory), for deciding whether to split it across
// cores.
const denseValueCost = 1.5

// denseRows is denseStep's update of rows [lo, hi) with step constants k,
// by solvers.Adam's update (graph.AdamUpdate; its folded bias corrections
// agree with Step's textbook form to rounding). Rows outside the batch,
// most of a large table, take the zero-gradient update without reading a
// gradient.
func (r *RowAdam) denseRows(lo, hi int, grad, x []float64, k graph.AdamConsts) {
	w := r.width
	// Consecutive rows outside the batch are contiguous in x, m and v: one
	// call updates each such run.
	run := lo
	flush := func(end int) {
		if end > run {
			graph.AdamUpdate(x[run*w:end*w], r.m[run*w:end*w], r.v[run*w:end*w], nil, &k)
		}
	}
	for i := lo; i < hi; i++ {
		if b := r.seen[i]; b > 0 {
			flush(i)
			run = i + 1
			graph.AdamUpdate(x[i*w:(i+1)*w], r.m[i*w:(i+1)*w], r.v[i*w:(i+1)*w], grad[int(b-1)*w:int(b)*w], &k)
		}
		r.t[i] = r.steps
	}
	flush(hi)
}

// grow adds rows with no Adam history (step count and moments zero).
func (r *RowAdam) grow(rows int) {
	if extra := rows - len(r.t); extra > 0 {
		r.m = append(r.m, make([]float64, extra*r.width)...)
		r.v = append(r.v, make([]float64, extra*r.width)...)
		r.t = append(r.t, make([]int, extra)...)
	}
}

// Steps is the number of optimiser steps row i has taken (0 without an
// optimiser or beyond its rows).
func (p *Param) Steps(i int) int {
	if p.opt == nil || i >= len(p.opt.t) {
		return 0
	}
	return p.opt.t[i]
}

// State is a table's values and its optimiser's: what a checkpoint of a
// fit must keep, since the rows are trained outside the global params. Its
// slices are views of the table's storage, valid until the next Step, so
// that saving the state of a large table copies nothing.
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
}

// State returns the table's state (views; see State).
func (p *Param) State() State {
	s := State{Data: p.Data}
	if r := p.opt; r != nil {
		s.Opt = &RowAdamState{LR: r.lr, B1: r.b1, B2: r.b2, Eps: r.eps, Width: r.width, M: r.m, V: r.v, T: r.t, Dense: r.Dense, Steps: r.steps}
	}
	return s
}

// SetState restores a state from State into a table of the same shape (one
// Reset for the same data set), copying it; on error nothing changes.
func (p *Param) SetState(s State) error {
	if len(s.Data) != len(p.Data) {
		return fmt.Errorf("local: state of %s has %d values, the table %d (%d rows of %d)", p.Name, len(s.Data), len(p.Data), p.Rows(), p.Width)
	}
	var opt *RowAdam
	if o := s.Opt; o != nil {
		rows := p.Rows()
		if o.Width != p.Width || len(o.M) != rows*p.Width || len(o.V) != rows*p.Width || len(o.T) != rows {
			return fmt.Errorf("local: optimiser state of %s has width %d, %d and %d moments and %d step counts; the table has %d rows of %d",
				p.Name, o.Width, len(o.M), len(o.V), len(o.T), rows, p.Width)
		}
		opt = &RowAdam{lr: o.LR, b1: o.B1, b2: o.B2, eps: o.Eps, width: o.Width, Dense: o.Dense, steps: o.Steps,
			m: append([]float64(nil), o.M...), v: append([]float64(nil), o.V...), t: append([]int(nil), o.T...)}
	}
	copy(p.Data, s.Data)
	p.opt = opt
	return nil
}
