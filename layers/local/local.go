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

// SetOptimizer gives the rows their optimiser (Adam with learning rate lr).
func (p *Param) SetOptimizer(lr float64) { p.opt = NewRowAdam(lr, p.Rows(), p.Width) }

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
	for r, i := range rows {
		p.opt.Step(i, grad[r*p.Width:(r+1)*p.Width], p.Row(i))
	}
	return nil
}

// RowAdam is Adam for parameters with one row per training point, of which
// a batch touches only a few: each row keeps its own step count and moments
// and is updated only when it is in a batch. TensorFlow's Adam, which the
// noisy-input paper's code used, also decays the moments of absent rows;
// lazily skipping them costs O(B·D) per step instead of O(N·D).
type RowAdam struct {
	lr, b1, b2, eps float64
	width           int
	m, v            []float64
	t               []int
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
