package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/solvers"
)

// Epoch is one training epoch's record, passed to Fit's callback.
type Epoch = solvers.Epoch

// FitConfig holds the optional hooks of Fit.
type FitConfig struct {
	// Progress receives a line per epoch (epoch, ELBO, time, ETA); nil is silent.
	Progress io.Writer
	// Callback is called after each epoch; returning solvers.ErrStopTraining
	// stops early, any other error aborts.
	Callback func(Epoch) error
	// Warnings receives jitter warnings (nil: os.Stderr).
	Warnings io.Writer
	// MaxIterations stops after that many optimiser steps (0: no limit).
	MaxIterations int
}

// Fit trains the model on train by maximising the ELBO with Adam over
// shuffled minibatches (Options.Epochs, Batch, LR, Seed). It stops early with
// ctx's error when ctx is cancelled. Fit starts from scratch; Continue trains
// a fitted model further on a data set with rows appended, so Fit keeps the
// training graph and optimiser state in the model.
func (m *Model) Fit(ctx context.Context, train *datasets.Dataset, cfg FitConfig) error {
	if err := train.Validate(); err != nil {
		return err
	}
	warn := cfg.Warnings
	if warn == nil {
		warn = os.Stderr
	}
	m.fit = nil
	if err := m.initialize(train, warn); err != nil {
		return err
	}
	obj, err := m.newObjective(train)
	if err != nil {
		return err
	}
	hist, err := solvers.Train(ctx, obj, obj.solverParams(), solvers.TrainConfig{
		N: m.N, BatchSize: obj.t.B, Epochs: m.Opts.Epochs, Seed: m.Opts.Seed,
		Optimizer: obj.adam, Progress: cfg.Progress, Callback: cfg.Callback,
		Warnings: cfg.Warnings, MaxIterations: cfg.MaxIterations,
	})
	// Keep the graph and optimiser state for Continue, also after a failed
	// or cancelled run (the parameters are the last finite ones).
	m.fit = &trainState{obj: obj, rows: rowPrints(train, m.trainNoise), epochs: len(hist)}
	return err
}

// objective adapts a training graph to solvers.Objective.
type objective struct {
	m     *Model
	t     *trainGraph
	data  *trainingData
	eps   *normalStream // ε of the reparameterised sample of q(x)
	adam  *solvers.Adam
	grads [][]float64
	qAdam *rowAdam
}

func (m *Model) newObjective(train *datasets.Dataset) (*objective, error) {
	B := min(m.Opts.Batch, train.N)
	t, err := m.buildTrain(B)
	if err != nil {
		return nil, err
	}
	targets, _ := m.lik.Targets(train.Y, m.C)
	o := &objective{
		m: m, t: t,
		data: &trainingData{n: train.N, d: train.D, x: train.X, y: train.Y, targets: targets},
		eps:  newNormalStream(rand.New(rand.NewPCG(m.Opts.Seed, 0xe95))),
		adam: solvers.NewAdam(m.Opts.LR),
	}
	for _, p := range t.params {
		o.grads = append(o.grads, make([]float64, len(p.Data)))
	}
	if m.Opts.Kind == NIMGP {
		o.qAdam = newRowAdam(m.Opts.LR, m.N, 2*m.D)
	}
	return o, nil
}

func (o *objective) solverParams() []solvers.Param {
	ps := make([]solvers.Param, len(o.t.params))
	for i, p := range o.t.params {
		ps[i] = solvers.Param{Name: p.Name, Data: p.Data}
	}
	return ps
}

// Step implements solvers.Objective: the negative ELBO of one batch and its
// gradient. NIMGP's q(x_i) rows are updated here, by their own Adam, because
// only the batch's rows have a gradient (see rowAdam).
func (o *objective) Step(b solvers.Batch) (float64, [][]float64, error) {
	o.t.load(o.data, b.Index, b.Weight, o.eps)
	loss, err := o.t.run()
	if err != nil {
		return 0, nil, err
	}
	for i, g := range o.t.grads {
		v, err := o.t.prog.Value(g)
		if err != nil {
			return 0, nil, err
		}
		f, err := graph.Float64s(v)
		if err != nil {
			return 0, nil, err
		}
		copy(o.grads[i], f)
	}
	if o.qAdam != nil {
		if err := o.stepQX(b); err != nil {
			return 0, nil, err
		}
	}
	return loss, o.grads, nil
}

// stepQX applies the batch's gradients to the q(x_i) rows it holds.
func (o *objective) stepQX(b solvers.Batch) error {
	m, D := o.m, o.m.D
	gm, err := o.t.prog.Float64s(o.t.qGrads[0])
	if err != nil {
		return err
	}
	gl, err := o.t.prog.Float64s(o.t.qGrads[1])
	if err != nil {
		return err
	}
	row := make([]float64, 2*D)
	for r, i := range b.Index[:b.Real] {
		copy(row[:D], gm[r*D:(r+1)*D])
		copy(row[D:], gl[r*D:(r+1)*D])
		for _, g := range row {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return fmt.Errorf("models: gradient of q(x_%d) became %v", i, g)
			}
		}
		o.qAdam.step(i, row, m.qxMean[i*D:(i+1)*D], m.qxLogVar[i*D:(i+1)*D])
	}
	return nil
}

// Jitter implements solvers.Jitterer.
func (o *objective) Jitter() float64 { return o.m.post.JitterParam.Data[0] }

// SetJitter implements solvers.Jitterer.
func (o *objective) SetJitter(v float64) error {
	if !(v > 0) {
		return errors.New("models: jitter must be positive")
	}
	o.m.post.JitterParam.Data[0] = v
	return nil
}

// rowAdam is Adam for parameters with one row per training point, of which a
// batch touches only a few: each row keeps its own step count and moments and
// is updated only when it is in a batch. TensorFlow's Adam, which the
// original code used, also decays the moments of absent rows; lazily skipping
// them costs O(B·D) per step instead of O(N·D).
type rowAdam struct {
	lr, b1, b2, eps float64
	width           int
	m, v            []float64
	t               []int
}

func newRowAdam(lr float64, rows, width int) *rowAdam {
	return &rowAdam{lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8, width: width,
		m: make([]float64, rows*width), v: make([]float64, rows*width), t: make([]int, rows)}
}

// step updates row i (split across a and b, in that order) by gradient g.
func (r *rowAdam) step(i int, g []float64, a, b []float64) {
	r.t[i]++
	c1 := 1 - math.Pow(r.b1, float64(r.t[i]))
	c2 := 1 - math.Pow(r.b2, float64(r.t[i]))
	for k, gk := range g {
		j := i*r.width + k
		r.m[j] = r.b1*r.m[j] + (1-r.b1)*gk
		r.v[j] = r.b2*r.v[j] + (1-r.b2)*gk*gk
		d := r.lr * (r.m[j] / c1) / (math.Sqrt(r.v[j]/c2) + r.eps)
		if k < len(a) {
			a[k] -= d
		} else {
			b[k-len(a)] -= d
		}
	}
}
