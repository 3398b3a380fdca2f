package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Cholesky's factor is mat.Cholesky's, bit for bit, above and below
// LAPACK's block size and with a non-symmetric input.
func TestCholeskyMatchesMat(t *testing.T) {
	rng := rand.New(rand.NewPCG(171, 172))
	for _, n := range []int{1, 2, 7, 50, 64, 65, 130} {
		a := spd(rng, n)
		a[n*n-1] += 0.25 // (A + Aᵀ)/2 is what is factorised
		if n > 1 {
			a[1] += 0.5
		}
		s := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				s.SetSym(i, j, 0.5*(a[i*n+j]+a[j*n+i]))
			}
		}
		var c mat.Cholesky
		if !c.Factorize(s) {
			t.Fatalf("n=%d: mat.Cholesky fails", n)
		}
		var l mat.TriDense
		c.LTo(&l)
		g := G.NewGraph()
		L := must(Cholesky(matrix(g, "A", n, n, a...)))
		p := run(t, g, L)
		for range 2 { // the second run reuses the buffers
			got, _ := p.Float64s(L)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if w := l.At(i, j); math.Float64bits(got[i*n+j]) != math.Float64bits(w) {
						t.Fatalf("n=%d: L[%d,%d] = %v, mat's %v", n, i, j, got[i*n+j], w)
					}
				}
			}
			if err := p.Run(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Once a program has run, running it again allocates nothing: its own ops
// write into buffers they keep (products, sums of products, solves, the
// Cholesky factor, fused functions and their adjoints, structural ops)
// and the fast forms of Gorgonia's ops into theirs.
func TestProgramRunDoesNotAllocate(t *testing.T) {
	skipUnderRace(t)
	needFastOps(t)
	rng := rand.New(rand.NewPCG(173, 174))
	const n, m, d = 30, 12, 5
	g := G.NewGraph()
	x := matrix(g, "x", n, d, randMat(rng, n, d)...)
	z := matrix(g, "z", m, d, randMat(rng, m, d)...)
	ls := vec(g, "ls", 0.3, 0.7, 1.1, 0.2, 0.5)
	s2 := leaf(g, "s2", tensor.ScalarShape(), []float64{0.8})
	e := &Chain{}
	xs := e.Do(ScaleColumns(x, ls))
	zs := e.Do(ScaleColumns(z, ls))
	kzz := e.Do(G.HadamardProd(e.Do(Exp(e.Do(G.HadamardProd(e.Do(SqDist(zs, zs)), G.NewConstant(-0.5))))), s2))
	kzz = e.Do(G.Add(kzz, e.Do(DiagMatrix(e.Do(G.HadamardProd(e.Do(Diag(kzz)), G.NewConstant(1e-6)))))))
	kxz := e.Do(Exp(e.Do(G.HadamardProd(e.Do(SqDist(xs, zs)), G.NewConstant(-0.5)))))
	l := e.Do(Cholesky(kzz))
	a := e.Do(TriSolve(l, e.Do(G.Transpose(kxz)), true, false))
	q := e.Do(RowReduce(square, e.Do(Take(e.Do(Reshape(a, tensor.Shape{m, n})), 0, 0, m-2))))
	v := e.Do(G.Sub(e.Do(G.Sum(e.Do(Square(kxz)), 1)), e.Do(G.Sum(e.Do(Square(a)), 0))))
	cost := e.Do(G.Add(e.Do(G.Sum(e.Do(NormCDF(v)))), e.Do(G.Add(e.Do(G.Sum(q)), e.Do(LogDetChol(l))))))
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	grads, err := Grad(cost, x, z, ls, s2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(g, append(G.Nodes{cost}, grads...)...)
	if err != nil {
		t.Fatal(err)
	}
	p.Sequential() // the in-order executor is what allocates nothing; side by side a run costs a few
	for range 2 {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if allocs := testing.AllocsPerRun(20, func() {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}
