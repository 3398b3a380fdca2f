package models

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models/ep"
)

// tiltedFor returns EP's tilted moments for the model's one-latent
// likelihood: its own (ep.Tilted) when it has them in closed form or by
// its own quadrature, else Gauss–Hermite quadrature of its log p(y|f),
// evaluated as graph code (likelihoods.LogLik). A likelihood written by a
// user therefore runs under EP with nothing added.
func tiltedFor(m *Model) (ep.Tilted, error) {
	if t, ok := m.lik.(ep.Tilted); ok {
		return t, nil
	}
	q, err := newQuadTilted(m.lik, m.C)
	if err != nil {
		return nil, fmt.Errorf("models: tilted moments of the %s likelihood by quadrature: %w", m.Opts.Likelihood.Name, err)
	}
	return q, nil
}

// quadPoints is the number of nodes of each pass: with 96 the probit's
// moments come out within 1e-7 (relative) of its closed form, also for a
// cavity of variance 50; 64 leaves 1e-5 there.
const quadPoints = 96

// quadTilted integrates p(y|f) N(f | m, v) twice: by Gauss–Hermite
// quadrature on the cavity, to locate the tilted distribution, then by the
// trapezoid rule on a grid over it, since for a wide cavity the tilted mass
// sits in a corner of the cavity's nodes.
type quadTilted struct {
	s       *layers.Scope
	prog    *graph.Program
	f, y    feed
	logp    *G.Node
	t, w    []float64
	targets func(y float64) []float64
	err     error
	// nodes, lp and lr are the nodes, log p(y | f) there and the
	// integrand's logarithm: EP calls TiltedMoments once per site per
	// sweep, from one goroutine (the quadrature's graph is shared state
	// anyway).
	nodes, lp, lr []float64
}

func newQuadTilted(lik likelihoods.Likelihood, classes int) (*quadTilted, error) {
	if l := lik.Latent(classes); l != 1 {
		return nil, fmt.Errorf("the likelihood has %d latent functions; EP's sites here touch one", l)
	}
	// The target encoding of one row, from the likelihood's own Targets:
	// EP passes the first column of each row's encoding as y.
	enc := map[float64][]float64{}
	for c := range classes {
		row, width := lik.Targets([]int{c}, classes)
		if width < 1 || len(row) != width {
			return nil, fmt.Errorf("the likelihood's target encoding has width %d", width)
		}
		enc[row[0]] = row
	}
	_, width := lik.Targets([]int{0}, classes)
	g := G.NewGraph()
	q := &quadTilted{s: layers.NewScope(g), nodes: make([]float64, quadPoints), lp: make([]float64, quadPoints), lr: make([]float64, quadPoints)}
	q.t, q.w = likelihoods.Hermite(quadPoints)
	q.f = newFeed(g, "f", quadPoints, 1)
	q.y = newFeed(g, "y", quadPoints, width)
	q.targets = func(y float64) []float64 { return enc[y] }
	var err error
	if q.logp, err = likelihoods.LogLik(lik, q.s, q.f.node, q.y.node); err != nil {
		return nil, err
	}
	if q.prog, err = graph.Compile(g, q.logp); err != nil {
		return nil, err
	}
	return q, nil
}

// logLik writes log p(y | f_k) at the nodes f into out.
func (q *quadTilted) logLik(y float64, f, out []float64) error {
	row := q.targets(y)
	if row == nil {
		return fmt.Errorf("target %v is not one of the likelihood's encodings", y)
	}
	copy(q.f.data, f)
	for k := range quadPoints {
		copy(q.y.data[k*len(row):], row)
	}
	if err := q.s.Sync(); err != nil {
		return err
	}
	if err := q.prog.Run(); err != nil {
		return err
	}
	v, err := q.prog.Float64s(q.logp)
	if err != nil {
		return err
	}
	copy(out, v)
	return nil
}

// TiltedMoments implements ep.Tilted. A failure of the graph (it has no
// error return) yields NaN moments, which EP refuses, and is kept in err.
func (q *quadTilted) TiltedMoments(y, m, v float64) (logZ, mean, variance float64) {
	f, lp, lr := q.nodes, q.lp, q.lr
	moments := func(lr func(k int) float64) (z0, z1, z2 float64) {
		// Log-sum-exp over the nodes: a likelihood of 1e-300 at every node
		// still gives a finite log Z.
		top := math.Inf(-1)
		for k := range f {
			top = math.Max(top, lr(k))
		}
		for k := range f {
			p := q.w[k] / math.SqrtPi * math.Exp(lr(k)-top)
			z0 += p
			z1 += p * f[k]
			z2 += p * f[k] * f[k]
		}
		return z0 * math.Exp(top), z1 / z0, z2 / z0
	}
	sd := math.Sqrt(2 * v)
	for k := range f {
		f[k] = m + sd*q.t[k]
	}
	if err := q.logLik(y, f, lp); err != nil {
		q.err = err
		return math.NaN(), math.NaN(), math.NaN()
	}
	g0, e1, e2 := moments(func(k int) float64 { return lp[k] })
	m1, v1 := e1, e2-e1*e1
	if !(v1 > 0) || math.IsInf(v1, 0) {
		return math.Log(g0), m1, v1
	}
	// The second pass is the trapezoid rule on an even grid over ±10
	// standard deviations of the tilted distribution the first pass
	// estimated: its integrand is smooth and negligible at the ends, where
	// the rule converges geometrically, also when p(y|f) is a step over the
	// cavity's spread (a wide cavity), which defeats a Gaussian rule.
	half := 10 * math.Sqrt(v1)
	h := 2 * half / float64(quadPoints-1)
	for k := range f {
		f[k] = m1 - half + h*float64(k)
	}
	if err := q.logLik(y, f, lp); err != nil {
		q.err = err
		return math.NaN(), math.NaN(), math.NaN()
	}
	top := math.Inf(-1)
	for k := range f {
		lr[k] = -0.5*math.Log(2*math.Pi*v) - (f[k]-m)*(f[k]-m)/(2*v) + lp[k]
		top = math.Max(top, lr[k])
	}
	var z0, z1, z2 float64
	for k := range f {
		p := math.Exp(lr[k] - top)
		if k == 0 || k == quadPoints-1 {
			p /= 2
		}
		z0 += p
		z1 += p * f[k]
		z2 += p * f[k] * f[k]
	}
	mean = z1 / z0
	return math.Log(z0*h) + top, mean, z2/z0 - mean*mean
}

// Err returns the graph's failure, if a run failed.
func (q *quadTilted) Err() error {
	if q.err == nil {
		return nil
	}
	return errors.Join(errors.New("models: quadrature of the tilted moments"), q.err)
}
