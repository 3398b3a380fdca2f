package graph

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// holdGraph is a small sparse-GP computation, its cost and gradients, over
// inputs x (n×d) and inducing inputs z (m×d).
func holdGraph(t *testing.T) (p *Program, x, z *G.Node, outs G.Nodes) {
	t.Helper()
	rng := rand.New(rand.NewPCG(31, 32))
	const n, m, d = 20, 8, 3
	g := G.NewGraph()
	x = matrix(g, "x", n, d, randMat(rng, n, d)...)
	z = matrix(g, "z", m, d, randMat(rng, m, d)...)
	s2 := leaf(g, "s2", tensor.ScalarShape(), []float64{0.8})
	e := &Chain{}
	kzz := e.Do(G.HadamardProd(e.Do(Exp(e.Do(G.HadamardProd(e.Do(SqDist(z, z)), G.NewConstant(-0.5))))), s2))
	kzz = e.Do(G.Add(kzz, e.Do(DiagMatrix(e.Do(G.HadamardProd(e.Do(Diag(kzz)), G.NewConstant(1e-6)))))))
	kxz := e.Do(Exp(e.Do(G.HadamardProd(e.Do(SqDist(x, z)), G.NewConstant(-0.5)))))
	l := e.Do(Cholesky(kzz))
	a := e.Do(TriSolve(l, e.Do(G.Transpose(kxz)), true, false))
	v := e.Do(G.Sub(e.Do(G.Sum(e.Do(Square(kxz)), 1)), e.Do(G.Sum(e.Do(Square(a)), 0))))
	cost := e.Do(G.Add(e.Do(G.Sum(e.Do(NormCDF(v)))), e.Do(LogDetChol(l))))
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	grads, err := Grad(cost, x, z, s2)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(G.Nodes{cost, v}, grads...)
	if p, err = Compile(g, outs...); err != nil {
		t.Fatal(err)
	}
	return p, x, z, outs
}

// A held program gives, run after run with new x, the values of a program
// that recomputes everything; it really skips the held work (a change to z
// is not seen while held), and Release brings the change in.
func TestHoldKeepsWorkOnFixedInputs(t *testing.T) {
	held, hx, hz, hOuts := holdGraph(t)
	fresh, fx, fz, fOuts := holdGraph(t)
	held.Hold(hx)
	rng := rand.New(rand.NewPCG(5, 6))
	same := func() bool {
		t.Helper()
		if err := held.Run(); err != nil {
			t.Fatal(err)
		}
		if err := fresh.Run(); err != nil {
			t.Fatal(err)
		}
		for i := range hOuts {
			a, _ := held.Float64s(hOuts[i])
			b, _ := fresh.Float64s(fOuts[i])
			for j := range a {
				if a[j] != b[j] {
					return false
				}
			}
		}
		return true
	}
	set := func(n1, n2 *G.Node) {
		d1, d2 := n1.Value().Data().([]float64), n2.Value().Data().([]float64)
		for j := range d1 {
			d1[j] = rng.NormFloat64()
			d2[j] = d1[j]
		}
	}
	for run := range 4 {
		set(hx, fx)
		if !same() {
			t.Fatalf("run %d: held outputs differ from a full run's", run)
		}
	}
	set(hz, fz)
	if same() {
		t.Fatal("a change to a held input was seen: the held work was recomputed")
	}
	held.Release()
	if !same() {
		t.Fatal("after Release the outputs still differ from a full run's")
	}
}
