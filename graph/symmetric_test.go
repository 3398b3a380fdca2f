package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestKnownSymmetric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := G.NewGraph()
	z := matrix(g, "z", 5, 7, randMat(rng, 5, 7)...)
	w := vec(g, "w", randMat(rng, 1, 7)...)
	a := matrix(g, "a", 5, 5, randMat(rng, 5, 5)...)
	v := vec(g, "v", randMat(rng, 1, 5)...)
	gram := must(WeightedDot(z, z, w))
	cases := []struct {
		name string
		n    *G.Node
		want bool
	}{
		{"gram", gram, true},
		{"cross product", must(WeightedDot(z, must(G.Add(z, z)), w)), false},
		{"leaf", a, false},
		{"sym", must(symScaled(a, 1)), true},
		{"gram ⊙ gram", must(G.HadamardProd(gram, gram)), true},
		{"gram ⊙ a", must(G.HadamardProd(gram, a)), false},
		{"2·gram", must(G.HadamardProd(gram, G.NewConstant(2.0))), true},
		{"gram + diag", must(G.Add(gram, must(DiagMatrix(v)))), true},
		{"gram a", must(MatMul(gram, a, false, false)), false},
		{"AddN", must(AddN(gram, must(symScaled(a, 1)))), true},
		{"columns scaled", must(ScaleColumns(gram, v)), false},
		{"vector", w, false},
	}
	for _, c := range cases {
		if got := knownSymmetric(c.n); got != c.want {
			t.Errorf("%s: knownSymmetric %v, want %v", c.name, got, c.want)
		}
	}
}

// With a symmetric adjoint a Gram matrix's reverse pass skips the
// symmetrising pass and gives the same gradients to the bit: through a
// Cholesky factor (the prior's K_ZZ) and through NIMGP_FO's quadratic form
// of S ⊙ ααᵀ, whose product skips its own symmetrising of S ⊙ ααᵀ.
func TestSymmetricGramAdjointBitIdentical(t *testing.T) {
	const m, d, n = 9, 6, 11
	build := func() (*G.ExprGraph, *G.Node, G.Nodes) {
		rng := rand.New(rand.NewPCG(8, 9))
		g := G.NewGraph()
		z := matrix(g, "z", m, d, randMat(rng, m, d)...)
		w := vec(g, "w", randMat(rng, 1, d)...)
		u := vec(g, "u", randMat(rng, 1, d)...)
		al := vec(g, "al", randMat(rng, 1, m)...)
		k := matrix(g, "k", m, n, randMat(rng, m, n)...)
		b := matrix(g, "b", m, 2, randMat(rng, m, 2)...)
		gram := must(WeightedDot(z, z, must(G.HadamardProd(w, w))))
		kzz := must(G.Add(must(G.HadamardProd(gram, gram)), must(DiagMatrix(must(G.Add(must(G.HadamardProd(al, al)), G.NewConstant(1.0)))))))
		sol := must(TriSolve(must(Cholesky(kzz)), b, true, false))
		s := must(WeightedDot(z, z, must(G.HadamardProd(u, u))))
		q := must(QuadForm(must(G.HadamardProd(s, must(Outer(al, al)))), k))
		cost := must(G.Add(must(G.Sum(must(G.Square(sol)))), must(G.Sum(must(G.HadamardProd(q, q))))))
		grads, err := Grad(cost, z, w, u, al, k)
		if err != nil {
			t.Fatal(err)
		}
		return g, cost, grads
	}
	// Sym ops, plus quadratic-form products that symmetrise A themselves.
	symOps := func(g *G.ExprGraph) (c int) {
		for _, nd := range g.AllNodes() {
			switch op := nd.Op().(type) {
			case symOp:
				c++
			case quadFormOp:
				if op.product && !op.symmetric {
					c++
				}
			}
		}
		return c
	}
	values := func(on bool) ([][]float64, int) {
		defer func(v bool) { symmetricAdjoints = v }(symmetricAdjoints)
		symmetricAdjoints = on
		g, cost, grads := build()
		p := run(t, g, append(G.Nodes{cost}, grads...)...)
		var out [][]float64
		for _, nd := range append(G.Nodes{cost}, grads...) {
			v, err := p.Float64s(nd)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float64(nil), v...))
		}
		return out, symOps(g)
	}
	fast, nFast := values(true)
	slow, nSlow := values(false)
	if nSlow-nFast != 3 {
		t.Errorf("symmetrising passes: %d with the shortcut, %d without; want the two Grams' and the form's saved", nFast, nSlow)
	}
	for i := range slow {
		for j := range slow[i] {
			if math.Float64bits(fast[i][j]) != math.Float64bits(slow[i][j]) {
				t.Fatalf("output %d[%d]: %v with the shortcut, %v without", i, j, fast[i][j], slow[i][j])
			}
		}
	}
	_ = tensor.Float64
}

func TestKnownSymmetricOuter(t *testing.T) {
	g := G.NewGraph()
	a := vec(g, "a", 1, 2, 3)
	b := vec(g, "b", 1, 2, 3)
	if !knownSymmetric(must(Outer(a, a))) {
		t.Error("a aᵀ not known symmetric")
	}
	if knownSymmetric(must(Outer(a, b))) {
		t.Error("a bᵀ taken for symmetric")
	}
}
