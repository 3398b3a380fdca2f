// Package svi is the stochastic variational inference engine: the negative
// ELBO of one minibatch of a composed model,
//
//	KL(q ‖ p) − (N/|B|) Σ_{i∈B} (E_q log p(y_i | f_i) + extra_i),
//
// where the posterior family gives the KL term and the marginals, the input
// model says where f is evaluated (and adds its per-row terms), and the
// likelihood gives the expected log-likelihood. It is compiled once per
// batch size and implements solvers.Objective, solvers.LocalObjective (for
// input models with per-row local parameters) and solvers.Jitterer.
package svi

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/layers/local"
	"github.com/gpc-dev/gpc/layers/variational"
	"github.com/gpc-dev/gpc/solvers"
)

// Parts are the pieces of a composed model the objective combines.
type Parts struct {
	// C is the number of classes.
	C          int
	Likelihood likelihoods.Likelihood
	Posterior  variational.Family
	Inputs     inputs.Model
	// Params are the global parameters to train (the parts' non-fixed ones).
	Params []*layers.Param
}

// Objective is a compiled minibatch objective.
type Objective struct {
	parts   Parts
	g       *G.ExprGraph
	s       *layers.Scope
	b       int
	d       int
	x, y, w feed
	rows    []rowFeed
	locals  []localFeed
	normals []normalFeed
	cost    *G.Node
	params  []*layers.Param
	grads   G.Nodes
	wrt     G.Nodes
	prog    *graph.Program
	data    *datasets.Dataset
	targets []float64
	width   int
	gbuf    [][]float64 // the gradients Step returns: views of the program's outputs, or zeros
	zeros   [][]float64 // a frozen parameter's gradient
	frozen  map[*layers.Param]bool
	seed    uint64
	// streams survive a rebuild for a new batch size (Continue).
	streams []*normalStream
}

type feed struct {
	node *G.Node
	data []float64
}

func newFeed(g *G.ExprGraph, name string, shape ...int) feed {
	data := make([]float64, tensor.Shape(shape).TotalSize())
	return feed{graph.Input(g, name, shape, data), data}
}

type rowFeed struct {
	feed
	width int
	fill  inputs.RowFill
}

type localFeed struct {
	feed
	p    *local.Param
	grad *G.Node
}

type normalFeed struct {
	feed
	stream *normalStream
}

// New compiles the objective for minibatches of min(batch, N) rows of
// train; seed fixes the stream of standard normal draws.
func New(p Parts, train *datasets.Dataset, batch int, seed uint64) (*Objective, error) {
	o := &Objective{parts: p, seed: seed}
	if err := o.build(min(batch, train.N), train.D); err != nil {
		return nil, err
	}
	o.SetData(train)
	return o, nil
}

// build compiles the graph for batches of b rows.
func (o *Objective) build(b, d int) error {
	p := o.parts
	g := G.NewGraph()
	*o = Objective{parts: p, seed: o.seed, streams: o.streams, frozen: o.frozen, data: o.data, targets: o.targets, width: o.width, g: g, s: layers.NewScope(g), b: b, d: d}
	_, width := p.Likelihood.Targets(make([]int, 1), p.C)
	o.x = newFeed(g, "x", b, d)
	o.y = newFeed(g, "y", b, width)
	o.w = newFeed(g, "w", b)
	post, err := p.Posterior.Bind(o.s)
	if err != nil {
		return err
	}
	mu, v, extra, err := p.Inputs.Train(o, post)
	if err != nil {
		return fmt.Errorf("svi: input model %s: %w", p.Inputs.Name(), err)
	}
	e := &graph.Chain{}
	var ell *G.Node
	if ms, ok := p.Likelihood.(likelihoods.Sampled); ok {
		// A Monte Carlo likelihood gets fresh draws at every step, from its
		// own stream declared after the input model's.
		eps := o.Normals("likelihood/draws", ms.DrawWidth(mu.Shape()[1]))
		ell = e.Do(ms.ExpectedLogLikDraws(o.s, mu, v, o.y.node, eps))
	} else {
		ell = e.Do(p.Likelihood.ExpectedLogLik(o.s, mu, v, o.y.node))
	}
	if e.Err != nil {
		// A likelihood may have no expected log-likelihood to give (the
		// argmax likelihood's is not finite): its reason, not a nil node.
		return fmt.Errorf("svi: %w", e.Err)
	}
	if extra != nil {
		ell = e.Do(G.Add(ell, extra))
	}
	data := e.Do(G.Sum(e.Do(G.HadamardProd(ell, o.w.node))))
	o.cost = e.Do(G.Sub(post.Divergence(), data)) // −ELBO
	if pr, ok := p.Likelihood.(likelihoods.Prior); ok {
		// A prior on the likelihood's parameters: −(ELBO + log p(θ)), once
		// per batch like the KL term, so the fit is MAP in θ.
		lp, err := pr.LogPrior(o.s)
		if err != nil {
			return err
		}
		if lp != nil {
			o.cost = e.Do(G.Sub(o.cost, lp))
		}
	}
	if e.Err != nil {
		return e.Err
	}
	var wrt G.Nodes
	o.params, wrt = o.s.TrainableAmong(p.Params)
	for _, l := range o.locals {
		wrt = append(wrt, l.node)
	}
	o.wrt = wrt
	grads, err := graph.Grad(o.cost, wrt...)
	if err != nil {
		return fmt.Errorf("svi: differentiating the ELBO: %w", err)
	}
	o.grads = grads[:len(o.params)]
	for i := range o.locals {
		o.locals[i].grad = grads[len(o.params)+i]
	}
	if o.prog, err = graph.Compile(g, append(G.Nodes{o.cost}, grads...)...); err != nil {
		return err
	}
	o.gbuf = make([][]float64, len(o.params))
	o.zeros = make([][]float64, len(o.params))
	return nil
}

// Scope implements inputs.Batch.
func (o *Objective) Scope() *layers.Scope { return o.s }

// Size implements inputs.Batch.
func (o *Objective) Size() int { return o.b }

// X implements inputs.Batch.
func (o *Objective) X() *G.Node { return o.x.node }

// Rows implements inputs.Batch.
func (o *Objective) Rows(name string, width int, fill inputs.RowFill) *G.Node {
	f := rowFeed{feed: newFeed(o.g, name, o.b, width), width: width, fill: fill}
	o.rows = append(o.rows, f)
	return f.node
}

// Local implements inputs.Batch.
func (o *Objective) Local(p *local.Param) *G.Node {
	f := localFeed{feed: newFeed(o.g, p.Name, o.b, p.Width), p: p}
	o.locals = append(o.locals, f)
	return f.node
}

// Normals implements inputs.Batch. The k-th declared stream draws from its
// own generator, seeded by the objective's seed and k.
func (o *Objective) Normals(name string, width int) *G.Node {
	k := len(o.normals)
	if k == len(o.streams) {
		o.streams = append(o.streams, newNormalStream(rand.NewPCG(o.seed, 0xe95+uint64(k))))
	}
	f := normalFeed{feed: newFeed(o.g, name, o.b, width), stream: o.streams[k]}
	o.normals = append(o.normals, f)
	return f.node
}

// SetData points the objective at a training set: the one it was built for
// or the same with rows appended (a warm start; see Grow).
func (o *Objective) SetData(ds *datasets.Dataset) {
	o.data = ds
	o.targets, o.width = o.parts.Likelihood.Targets(ds.Y, o.parts.C)
}

// Grow rebuilds for a larger batch size when ds has outgrown the graph's
// batch (a model fitted on fewer rows than a batch), keeping every
// parameter, optimiser state and random stream.
func (o *Objective) Grow(ds *datasets.Dataset, batch int) error {
	if b := min(batch, ds.N); b != o.b {
		old, prog := slices.Clone(o.params), o.prog
		if err := o.build(b, ds.D); err != nil {
			return err
		}
		if err := prog.Close(); err != nil {
			return err
		}
		if !slices.Equal(old, o.params) {
			return errors.New("svi: internal error: the rebuilt objective has other parameters")
		}
	}
	o.SetData(ds)
	return nil
}

// Batch is the graph's fixed batch size.
func (o *Objective) Batch() int { return o.b }

// Load fills the graph's inputs for batch b.
func (o *Objective) Load(b solvers.Batch) {
	ds, D, w := o.data, o.d, o.width
	// Rows owing updates (a dense local optimiser) are brought up to date
	// together, on several cores, before they are copied.
	for _, f := range o.locals {
		f.p.Settle(b.Index)
	}
	for r, i := range b.Index {
		copy(o.x.data[r*D:(r+1)*D], ds.X[i*D:(i+1)*D])
		copy(o.y.data[r*w:(r+1)*w], o.targets[i*w:(i+1)*w])
		o.w.data[r] = b.Weight[r]
		for _, f := range o.rows {
			f.fill(ds, i, f.data[r*f.width:(r+1)*f.width])
		}
		for _, f := range o.locals {
			copy(f.data[r*f.p.Width:(r+1)*f.p.Width], f.p.Row(i))
		}
	}
	for _, f := range o.normals {
		f.stream.Fill(f.data)
	}
}

// view returns an output's data from the last run without copying (valid
// until the next run): the step reads every gradient once per iteration.
func (o *Objective) view(n *G.Node) ([]float64, error) {
	v, err := o.prog.Value(n)
	if err != nil {
		return nil, err
	}
	return graph.Float64s(v)
}

// run evaluates the cost and its gradients at the loaded batch.
func (o *Objective) run() (float64, error) {
	if err := o.s.Sync(); err != nil {
		return 0, err
	}
	if err := o.prog.Run(); err != nil {
		return 0, err
	}
	return o.prog.Scalar(o.cost)
}

// Step implements solvers.Objective: the negative ELBO of one batch and its
// gradient. Local rows are not touched (see StepLocal); a non-finite
// gradient of a batch's local rows is reported here, before any update.
func (o *Objective) Step(b solvers.Batch) (float64, [][]float64, error) {
	o.Load(b)
	loss, err := o.run()
	if err != nil {
		return 0, nil, err
	}
	// The program's own output buffers, not copies (solvers.Objective
	// allows it: the optimiser reads them before the next run); copying
	// MNIST's 850 000 gradient elements took a millisecond of a 28 ms step
	// on one core while the other waited.
	for i, g := range o.grads {
		if o.frozen[o.params[i]] {
			if o.zeros[i] == nil {
				o.zeros[i] = make([]float64, len(o.params[i].Data))
			}
			o.gbuf[i] = o.zeros[i]
			continue
		}
		f, err := o.view(g)
		if err != nil {
			return 0, nil, err
		}
		o.gbuf[i] = f // the optimisers check its length against the parameter's
	}
	for _, l := range o.locals {
		g, err := o.view(l.grad)
		if err != nil {
			return 0, nil, err
		}
		if err := l.p.Check(b.Index[:b.Real], g); err != nil {
			return 0, nil, &solvers.NonFiniteError{Quantity: "gradient", Param: l.p.Name, Index: -1, Value: firstNonFinite(g), Where: err.Error()}
		}
	}
	return loss, o.gbuf, nil
}

func firstNonFinite(g []float64) float64 {
	for _, v := range g {
		if v != v || v > 1e308 || v < -1e308 {
			return v
		}
	}
	return 0
}

// Freeze makes Step report a zero gradient for these parameters (nil:
// none), which holds them where they are under Adam, Adadelta and L-BFGS
// started after the freeze.
func (o *Objective) Freeze(ps map[*layers.Param]bool) { o.frozen = ps }

// LocalParams implements solvers.LocalObjective.
func (o *Objective) LocalParams() int { return len(o.locals) }

// StepLocal implements solvers.LocalObjective: the batch's real rows of
// each local table take the last Step's gradient.
func (o *Objective) StepLocal(b solvers.Batch) error {
	for _, l := range o.locals {
		g, err := o.view(l.grad)
		if err != nil {
			return err
		}
		if err := l.p.Step(b.Index[:b.Real], g); err != nil {
			return err
		}
	}
	return nil
}

// Params returns the trained global parameters, in the gradients' order.
func (o *Objective) Params() []*layers.Param { return o.params }

// SolverParams returns the global parameters as the solvers see them.
func (o *Objective) SolverParams() []solvers.Param { return AsSolverParams(o.params) }

// Cost is the negative-ELBO node, for gradient checks.
func (o *Objective) Cost() *G.Node { return o.cost }

// Wrt returns the nodes the cost is differentiated with respect to: the
// global parameters' raw nodes, then the local rows' inputs.
func (o *Objective) Wrt() G.Nodes { return o.wrt }

// Sync refreshes scalar parameters' node values (before a run outside Step).
func (o *Objective) Sync() error { return o.s.Sync() }

// Jitter implements solvers.Jitterer.
func (o *Objective) Jitter() float64 { return o.parts.Posterior.Jitter().Data[0] }

// SetJitter implements solvers.Jitterer.
func (o *Objective) SetJitter(v float64) error {
	if !(v > 0) {
		return errors.New("svi: jitter must be positive")
	}
	o.parts.Posterior.Jitter().Data[0] = v
	return nil
}

// Close releases the compiled graph.
func (o *Objective) Close() error { return o.prog.Close() }

// Fed returns the values last loaded into the graph input of that name
// ("x", "y", "w", or one an input model declared, such as "noise"), nil if
// there is none: for tests and debugging of what a batch sees.
func (o *Objective) Fed(name string) []float64 {
	switch name {
	case "x":
		return o.x.data
	case "y":
		return o.y.data
	case "w":
		return o.w.data
	}
	for _, f := range o.rows {
		if f.node.Name() == name {
			return f.data
		}
	}
	for _, f := range o.locals {
		if f.p.Name == name {
			return f.data
		}
	}
	for _, f := range o.normals {
		if f.node.Name() == name {
			return f.data
		}
	}
	return nil
}

// AsSolverParams presents the parts' parameters to the solvers (name and
// storage): the parts know nothing of the optimisers that move them.
func AsSolverParams(ps []*layers.Param) []solvers.Param {
	out := make([]solvers.Param, len(ps))
	for i, p := range ps {
		out[i] = solvers.Param{Name: p.Name, Data: p.Data}
	}
	return out
}
