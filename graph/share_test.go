package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runOutputs sets x, runs p and returns copies of the outputs.
func runOutputs(t *testing.T, p *Program, x *G.Node, xs []float64, outs G.Nodes) [][]float64 {
	t.Helper()
	if err := G.Let(x, tensor.New(tensor.WithShape(x.Shape()...), tensor.WithBacking(append([]float64(nil), xs...)))); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	res := make([][]float64, len(outs))
	for i, o := range outs {
		v, err := p.Float64s(o)
		if err != nil {
			t.Fatal(err)
		}
		res[i] = v
	}
	return res
}

func sameOutputs(t *testing.T, what string, a, b [][]float64) {
	t.Helper()
	for i := range a {
		if len(a[i]) == 0 || len(a[i]) != len(b[i]) {
			t.Fatalf("%s: output %d has %d and %d values", what, i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			if math.Float64bits(a[i][j]) != math.Float64bits(b[i][j]) {
				t.Fatalf("%s: output %d[%d] = %v, want %v", what, i, j, a[i][j], b[i][j])
			}
		}
	}
}

// Output buffers shared by liveness give, run after run with new inputs,
// while held and after release, the outputs of a program whose nodes keep
// their own buffers; the shared plan uses much less memory than the nodes'
// outputs.
func TestSharedBuffersMatchOwn(t *testing.T) {
	if shareOff {
		t.Skip("GPC_BUFFERS=own")
	}
	shared, sx, sOuts := wideGraph(t, 4, false)
	own, ox, oOuts := wideGraph(t, 4, false)
	shared.Sequential()
	own.Sequential()
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 6 {
		switch run {
		case 3:
			shared.Hold(sx)
			own.Hold(ox)
		case 5:
			shared.Release()
			own.Release()
		}
		xs := randMat(rng, 60, 5)
		a := runOutputs(t, shared, sx, xs, sOuts)
		own.f.shared = true // never plans: every node keeps its own buffer
		b := runOutputs(t, own, ox, xs, oOuts)
		sameOutputs(t, "run", a, b)
		if run == 1 && (!shared.f.shared || len(shared.f.sharedBufs) == 0) {
			t.Fatalf("no buffers shared after two runs")
		}
	}
	slabs := map[*float64]bool{}
	for _, b := range shared.f.sharedBufs {
		slabs[&b.data[:1][0]] = true
	}
	if len(slabs) >= len(shared.f.sharedBufs) {
		t.Errorf("%d buffers in %d slabs: nothing shared", len(shared.f.sharedBufs), len(slabs))
	}
}

// Two programs compiled from one graph plan the nodes' buffers each for its
// own schedule; run alternately, each drops the other's plan before it
// runs, and both give what fresh programs give.
func TestSharedBuffersTwoPrograms(t *testing.T) {
	p1, x, outs := wideGraph(t, 3, false)
	p1.Sequential()
	p2, err := Compile(x.Graph(), outs[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	p2.Sequential()
	ref, rx, rOuts := wideGraph(t, 3, false)
	ref.Sequential()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 4 {
		xs := randMat(rng, 60, 5)
		want := runOutputs(t, ref, rx, xs, rOuts)
		sameOutputs(t, "first program", runOutputs(t, p1, x, xs, outs), want)
		sameOutputs(t, "second program", runOutputs(t, p2, x, xs, outs[1:]), want[1:])
	}
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	for _, b := range p1.f.bufs {
		if b.owner == p1.f {
			t.Fatal("a closed program still owns a buffer")
		}
	}
}
