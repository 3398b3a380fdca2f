package graph

import (
	"errors"
	"fmt"
	"strings"

	G "gorgonia.org/gorgonia"
)

// Program is a compiled graph whose chosen outputs are copied out after each
// run. Gorgonia reuses registers in place, so reading an intermediate node's
// Value after a run can return clobbered data; Program reads through
// gorgonia.Read instead. The nodes of this package keep their output
// buffers from run to run, so two programs of one graph must not run at the
// same time.
type Program struct {
	g     *G.ExprGraph
	m     G.VM
	reads map[*G.Node]*G.Value
	// f is the flat executor (nil with GPC_EXECUTOR=tape); outs are the
	// nodes whose values Value returns.
	f    *flat
	outs map[*G.Node]bool
}

// Compile prepares g for repeated execution, recording the values of outputs.
// Create every node before compiling: nodes added later are not run.
func Compile(g *G.ExprGraph, outputs ...*G.Node) (*Program, error) {
	for _, n := range g.AllNodes() {
		if fmt.Sprintf("%T", n.Op()) != "gorgonia.reshapeOp" {
			continue
		}
		if c := children(n)[0]; c.Op() == nil || c.IsVar() {
			return nil, fmt.Errorf("graph: gorgonia.Reshape of input %q would let in-place ops overwrite its value; use graph.Reshape", c.Name())
		}
	}
	if err := sharedBuffers(g); err != nil {
		return nil, err
	}
	if !useTape {
		p := &Program{g: g, outs: map[*G.Node]bool{}}
		for _, o := range outputs {
			p.outs[o] = true
		}
		if len(outputs) > 0 {
			g = g.ExactSubgraphRoots(outputs...)
		}
		f, err := newFlat(g)
		if err != nil {
			return nil, err
		}
		f.outs = p.outs
		p.f = f
		return p, nil
	}
	p := &Program{g: g, reads: map[*G.Node]*G.Value{}}
	var roots G.Nodes
	for _, o := range outputs {
		if _, ok := p.reads[o]; ok {
			continue
		}
		v := new(G.Value)
		roots = append(roots, G.Read(o, v))
		p.reads[o] = v
	}
	// Run only what the outputs need: an op's SymDiff builds gradients for
	// every input, and those nobody asked for would otherwise be computed.
	if len(roots) > 0 {
		g = g.ExactSubgraphRoots(roots...)
	}
	p.m = G.NewTapeMachine(g)
	return p, nil
}

// Run executes the program once with the current input values.
func (p *Program) Run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("graph: run failed: %v", r)
		}
	}()
	runEpoch.Add(1) // every node's output buffer may be reused (see outBuf)
	var runErr error
	if p.f != nil {
		runErr = p.f.run()
	} else {
		defer p.m.Reset()
		runErr = p.m.RunAll()
	}
	if err := runErr; err != nil {
		// Gorgonia's VM flattens error chains into text; restore the one
		// that callers act on.
		if strings.Contains(err.Error(), ErrNotPositiveDefinite.Error()) && !errors.Is(err, ErrNotPositiveDefinite) {
			return fmt.Errorf("%w: %v", ErrNotPositiveDefinite, err)
		}
		return err
	}
	return nil
}

// Hold tells the program that from now on only the given input nodes change
// between runs: every op that depends on none of them is computed by the
// next run and then kept. Repeated runs over one fixed set of parameters
// (prediction by many draws of the inputs, say) then skip the work on the
// parameters alone, such as the Cholesky factors of K_ZZ. Changing any other
// input while held leaves stale values; Release ends it. Under the tape
// machine (GPC_EXECUTOR=tape) Hold does nothing.
func (p *Program) Hold(varying ...*G.Node) {
	if p.f == nil {
		return
	}
	v := make(map[*G.Node]bool, len(varying))
	for _, n := range varying {
		if n != nil {
			v[n] = true
		}
	}
	p.f.hold(v)
}

// Sequential makes the program run its ops one after another on the
// caller's goroutine. A program whose graph is wide (several classes' chains
// of work) otherwise runs its ops side by side on the machine's cores; a
// caller that already runs one program per core asks for this.
func (p *Program) Sequential() {
	if p.f != nil {
		p.f.sequential()
	}
}

// Release ends Hold: every run computes every op again.
func (p *Program) Release() {
	if p.f != nil {
		p.f.hold(nil)
	}
}

// Value returns the value an output took in the last run (owned by the
// program; copy it if it must outlive the next run).
func (p *Program) Value(n *G.Node) (G.Value, error) {
	if p.f != nil {
		if !p.outs[n] {
			return nil, fmt.Errorf("graph: %v is not an output of the program", n.Name())
		}
		v, ok := p.f.value(n)
		if !ok {
			return nil, fmt.Errorf("graph: %v has no value; has the program run?", n.Name())
		}
		return v, nil
	}
	v, ok := p.reads[n]
	if !ok {
		return nil, fmt.Errorf("graph: %v is not an output of the program", n.Name())
	}
	if *v == nil {
		return nil, fmt.Errorf("graph: %v has no value; has the program run?", n.Name())
	}
	return *v, nil
}

// Float64s returns a copy of an output's data from the last run.
func (p *Program) Float64s(n *G.Node) ([]float64, error) {
	v, err := p.Value(n)
	if err != nil {
		return nil, err
	}
	f, err := Float64s(v)
	return append([]float64(nil), f...), err
}

// Scalar returns a scalar output's value from the last run.
func (p *Program) Scalar(n *G.Node) (float64, error) {
	v, err := p.Value(n)
	if err != nil {
		return 0, err
	}
	return Scalar(v)
}

// Close releases the machine.
func (p *Program) Close() error {
	if p.f != nil {
		p.f.unshare() // the nodes' buffers go back to being their own
	}
	if p.m == nil {
		return nil
	}
	return p.m.Close()
}
