package variational

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
)

func randData(rng *rand.Rand, n, d int) []float64 {
	x := make([]float64, n*d)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// seK is the SE kernel matrix with σ₀² + jitter on the diagonal, in plain Go.
func seK(x []float64, n, d int, ell, amp, noise, jitter float64) *mat.SymDense {
	k := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			var s float64
			for t := 0; t < d; t++ {
				s += (x[i*d+t] - x[j*d+t]) * (x[i*d+t] - x[j*d+t])
			}
			v := amp * math.Exp(-0.5*s/ell)
			if i == j {
				v += noise + jitter
			}
			k.SetSym(i, j, v)
		}
	}
	return k
}

type setup struct {
	g     *G.ExprGraph
	s     *layers.Scope
	post  *Posterior
	lik   *likelihoods.Gaussian
	elbo  *G.Node
	xNode *G.Node
}

// build returns the ELBO graph Σ E log p(y|f) − KL for one latent function.
func build(t *testing.T, x, y []float64, n, d int, whitened bool, noise, jitter float64) *setup {
	t.Helper()
	k := kernels.NewSE("se", d, 1.3, 0.9, noise)
	post, err := New("q", Config{Latent: 1, M: n, D: d, Whitened: whitened, Jitter: jitter}, []kernels.Kernel{k}, [][]float64{x})
	if err != nil {
		t.Fatal(err)
	}
	lik := likelihoods.NewGaussian("lik", 0.3)
	g := G.NewGraph()
	s := layers.NewScope(g)
	xp := layers.NewParam("X", tensor.Shape{n, d}, 0, layers.Identity)
	copy(xp.Data, x)
	xn, _ := s.Raw(xp)
	b, err := post.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	mu, v, err := b.Marginals(xn)
	if err != nil {
		t.Fatal(err)
	}
	yn := G.NewMatrix(g, G.Float64, G.WithShape(n, 1), G.WithName("y"), G.WithValue(tensor.New(tensor.WithShape(n, 1), tensor.WithBacking(y))))
	ell, err := lik.ExpectedLogLik(s, mu, v, yn)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := G.Sum(ell)
	elbo, _ := G.Sub(sum, b.KL)
	return &setup{g: g, s: s, post: post, lik: lik, elbo: elbo, xNode: xn}
}

func (st *setup) value(t *testing.T, n *G.Node) float64 {
	t.Helper()
	p, err := graph.Compile(st.g, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	v, _ := p.Scalar(n)
	return v
}

func cholLower(a mat.Symmetric) []float64 {
	var c mat.Cholesky
	if !c.Factorize(a) {
		panic("not PD")
	}
	var l mat.TriDense
	c.LTo(&l)
	n := a.SymmetricDim()
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			out[i*n+j] = l.At(i, j)
		}
	}
	return out
}

// With a Gaussian likelihood and Z = X the bound is tight: at the optimal
// q(u) = N(S σ⁻² y, S), S = (K⁻¹ + σ⁻² I)⁻¹, it equals log N(y | 0, K + σ² I).
func TestBoundIsExactGaussianZEqualsX(t *testing.T) {
	const n, d, s2 = 7, 2, 0.3
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := randData(rng, n, d), randData(rng, n, 1)
	const jitter = 1e-10 // σ₀² and jitter enter K_ZZ but not K(Z,X), so Z = X is tight only without them
	K := seK(x, n, d, 1.3, 0.9, 0, jitter)
	// Exact log marginal likelihood.
	ky := mat.NewSymDense(n, nil)
	ky.AddSym(K, diagSym(n, s2))
	var ch mat.Cholesky
	ch.Factorize(ky)
	alpha := mat.NewVecDense(n, nil)
	ch.SolveVecTo(alpha, mat.NewVecDense(n, y))
	exact := -0.5*mat.Dot(mat.NewVecDense(n, y), alpha) - 0.5*ch.LogDet() - 0.5*n*math.Log(2*math.Pi)
	// Optimal q(u).
	var kinv mat.Dense
	if err := kinv.Inverse(K); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		kinv.Set(i, i, kinv.At(i, i)+1/s2)
	}
	var S mat.Dense
	if err := S.Inverse(&kinv); err != nil {
		t.Fatal(err)
	}
	Ssym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			Ssym.SetSym(i, j, 0.5*(S.At(i, j)+S.At(j, i)))
		}
	}
	m := mat.NewVecDense(n, nil)
	m.MulVec(Ssym, mat.NewVecDense(n, y))
	m.ScaleVec(1/s2, m)
	for _, whitened := range []bool{false, true} {
		st := build(t, x, y, n, d, whitened, 0, jitter)
		mv, L := m, cholLower(Ssym)
		if whitened { // v = Lk⁻¹ u: m_v = Lk⁻¹ m, S_v = Lk⁻¹ S Lk⁻ᵀ
			lk := mat.NewTriDense(n, mat.Lower, cholLower(K))
			mv = mat.NewVecDense(n, nil)
			if err := mv.SolveVec(lk, m); err != nil {
				t.Fatal(err)
			}
			var a, sv mat.Dense
			if err := a.Solve(lk, Ssym); err != nil {
				t.Fatal(err)
			}
			if err := sv.Solve(lk, a.T()); err != nil {
				t.Fatal(err)
			}
			svs := mat.NewSymDense(n, nil)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					svs.SetSym(i, j, 0.5*(sv.At(i, j)+sv.At(j, i)))
				}
			}
			L = cholLower(svs)
		}
		copy(st.post.Mean[0].Data, mv.RawVector().Data)
		if err := st.post.SetL(0, L); err != nil {
			t.Fatal(err)
		}
		got := st.value(t, st.elbo)
		t.Logf("whitened=%v: bound − exact = %.2g", whitened, got-exact)
		if math.Abs(got-exact) > 1e-6 {
			t.Errorf("whitened=%v: bound %.10f, exact log marginal likelihood %.10f (diff %.2g)", whitened, got, exact, got-exact)
		}
	}
}

func diagSym(n int, v float64) *mat.DiagDense {
	d := make([]float64, n)
	for i := range d {
		d[i] = v
	}
	return mat.NewDiagDense(n, d)
}

// At initialisation q(u) is the prior, so the KL is zero.
func TestKLZeroAtPrior(t *testing.T) {
	for _, whitened := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(3, 3))
		st := build(t, randData(rng, 5, 2), randData(rng, 5, 1), 5, 2, whitened, 0.05, 1e-6)
		b, _ := st.post.Build(st.s)
		if kl := st.value(t, b.KL); math.Abs(kl) > 1e-9 {
			t.Errorf("whitened=%v: KL at the prior = %v", whitened, kl)
		}
	}
}

// The ELBO's gradient with respect to every parameter (kernel, Z, m, L) and
// the inputs, to first and second order.
func TestELBOGradients(t *testing.T) {
	for _, whitened := range []bool{false, true} {
		for order := 1; order <= 2; order++ {
			rng := rand.New(rand.NewPCG(5, 5))
			n, d := 5, 2
			st := build(t, randData(rng, n, d), randData(rng, n, 1), n, d, whitened, 0.05, 1e-6)
			// Move q(u) away from the prior so every term matters.
			for i := range st.post.Mean[0].Data {
				st.post.Mean[0].Data[i] = rng.NormFloat64()
			}
			for i := range st.post.LRaw[0].Data {
				st.post.LRaw[0].Data[i] += 0.1 * rng.NormFloat64()
			}
			_, params := st.s.Trainable()
			check := graph.CheckGrad
			if order == 2 {
				check = graph.CheckGrad2
			}
			if err := st.s.Sync(); err != nil {
				t.Fatal(err)
			}
			rep, err := check(st.elbo, params, graph.CheckOptions{Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			if !(rep.MaxRelErr <= 1e-6) {
				t.Errorf("whitened=%v order %d: %s", whitened, order, rep.Worst())
			}
		}
	}
}

// The marginals at inputs other than Z follow the textbook formulas,
// μ = K_xZ A m and v = k(x,x) − K_xZ K_ZZ⁻¹ K_Zx + K_xZ A S Aᵀ K_Zx with
// S = LLᵀ, A = K_ZZ⁻¹ (unwhitened) or Lk⁻ᵀ (whitened), computed here with
// explicit inverses in gonum for a random q(u). The graph takes a different
// route (the whitened factor Lk⁻¹L, no inverse), so a slip in that route
// shows as a difference far above rounding.
func TestMarginalsMatchExplicitFormulas(t *testing.T) {
	const m, n, d = 5, 4, 2
	const ell, amp, noise, jitter = 1.3, 0.9, 0.1, 1e-3
	rng := rand.New(rand.NewPCG(3, 4))
	z, xs := randData(rng, m, d), randData(rng, n, d)
	mean := randData(rng, m, 1)
	lq := make([]float64, m*m)
	for i := 0; i < m; i++ {
		for j := 0; j < i; j++ {
			lq[i*m+j] = 0.3 * rng.NormFloat64()
		}
		lq[i*m+i] = 0.5 + rng.Float64()
	}
	kzz := seK(z, m, d, ell, amp, noise, jitter)
	kxz := mat.NewDense(n, m, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			var s float64
			for t := 0; t < d; t++ {
				s += (xs[i*d+t] - z[j*d+t]) * (xs[i*d+t] - z[j*d+t])
			}
			kxz.Set(i, j, amp*math.Exp(-0.5*s/ell))
		}
	}
	var kinv mat.Dense
	if err := kinv.Inverse(kzz); err != nil {
		t.Fatal(err)
	}
	L := mat.NewDense(m, m, lq)
	var S mat.Dense
	S.Mul(L, L.T())
	for _, whitened := range []bool{false, true} {
		A := mat.DenseCopyOf(&kinv)
		if whitened {
			lk := mat.NewDense(m, m, cholLower(kzz))
			var lkInv mat.Dense
			if err := lkInv.Inverse(lk); err != nil {
				t.Fatal(err)
			}
			A = mat.DenseCopyOf(lkInv.T())
		}
		var ka, mu, kak, kaS, quad mat.Dense
		ka.Mul(kxz, A)
		mu.Mul(&ka, mat.NewDense(m, 1, mean))
		kak.Product(kxz, &kinv, kxz.T())
		kaS.Mul(&ka, &S)
		quad.Mul(&kaS, ka.T())

		k := kernels.NewSE("se", d, ell, amp, noise)
		post, err := New("q", Config{Latent: 1, M: m, D: d, Whitened: whitened, Jitter: jitter}, []kernels.Kernel{k}, [][]float64{z})
		if err != nil {
			t.Fatal(err)
		}
		copy(post.Mean[0].Data, mean)
		if err := post.SetL(0, lq); err != nil {
			t.Fatal(err)
		}
		g := G.NewGraph()
		s := layers.NewScope(g)
		xp := layers.NewParam("X", tensor.Shape{n, d}, 0, layers.Identity)
		copy(xp.Data, xs)
		xn, _ := s.Raw(xp)
		b, err := post.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		muN, vN, err := b.Marginals(xn)
		if err != nil {
			t.Fatal(err)
		}
		p, err := graph.Compile(g, muN, vN)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		gotMu, _ := p.Float64s(muN)
		gotV, _ := p.Float64s(vN)
		for i := 0; i < n; i++ {
			wantV := amp + noise + jitter - kak.At(i, i) + quad.At(i, i)
			if math.Abs(gotMu[i]-mu.At(i, 0)) > 1e-10 || math.Abs(gotV[i]-wantV) > 1e-10 {
				t.Errorf("whitened=%v row %d: μ %.12g v %.12g, want %.12g and %.12g", whitened, i, gotMu[i], gotV[i], mu.At(i, 0), wantV)
			}
		}
	}
}

// inflatedSetup builds a two-function posterior with a degree-3
// polynomial kernel (an independent one per function, or one kernel and Z
// shared), inputs x and input-noise variances V (a D-vector, or one per
// entry when perRow) as trainable parameters, and returns the closed form's
// marginals (nil when it declined) and the differentiated ones.
func inflatedSetup(t *testing.T, m, n, d int, whitened, shared, perRow bool) (s *layers.Scope, g *G.ExprGraph, closed, viaGrad []*G.Node, ok bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 22))
	k0 := kernels.NewPolynomial("poly0", 3, d, 2.5, 0.8, 0)
	ks := []kernels.Kernel{k0, kernels.NewPolynomial("poly1", 3, d, 1.7, 1.2, 0)}
	zs := [][]float64{randData(rng, m, d), randData(rng, m, d)}
	for i := range zs[0] {
		zs[0][i] *= 0.5
	}
	if shared {
		ks[1], zs = k0, zs[:1]
	}
	post, err := New("q", Config{Latent: 2, M: m, D: d, Whitened: whitened, Jitter: 1e-6, SharedZ: shared}, ks, zs)
	if err != nil {
		t.Fatal(err)
	}
	for c := range 2 {
		for i := range post.Mean[c].Data {
			post.Mean[c].Data[i] = rng.NormFloat64()
		}
		for i := range post.LRaw[c].Data {
			post.LRaw[c].Data[i] += 0.1 * rng.NormFloat64()
		}
	}
	g = G.NewGraph()
	s = layers.NewScope(g)
	xp := layers.NewParam("X", tensor.Shape{n, d}, 0, layers.Identity)
	for i := range xp.Data {
		xp.Data[i] = 0.4 * rng.NormFloat64()
	}
	vshape := tensor.Shape{d}
	if perRow {
		vshape = tensor.Shape{n, d}
	}
	vp := layers.NewParam("V", vshape, 0.2, layers.Exp)
	for i := range vp.Data {
		vp.Data[i] += 0.5 * rng.NormFloat64()
	}
	xn, _ := s.Raw(xp)
	vn, err := s.Node(vp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := post.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	mus, vs, ok, err := b.InflatedClassMarginals(xn, vn)
	if err != nil {
		t.Fatal(err)
	}
	// The differentiated form: Δ = Σ_j V_j (∂μ_c/∂x_ij)², ∂μ_c/∂x from
	// graph.Grad of Σ_i μ_c(x_i).
	mu2, v2, err := b.ClassMarginals(xn)
	if err != nil {
		t.Fatal(err)
	}
	e := &graph.Chain{}
	for c := range 2 {
		gr, err := graph.Grad(e.Do(G.Sum(mu2[c])), xn)
		if err != nil {
			t.Fatal(err)
		}
		sq := e.Do(G.HadamardProd(gr[0], gr[0]))
		var weighted *G.Node
		if perRow {
			weighted = e.Do(G.HadamardProd(sq, vn))
		} else {
			weighted = e.Do(G.HadamardProd(sq, e.Do(graph.BroadcastTo(vn, tensor.Shape{n, d}, []int{0}))))
		}
		delta := e.Do(G.Sum(weighted, 1))
		viaGrad = append(viaGrad, mu2[c], e.Do(G.Add(v2[c], delta)))
		if ok {
			closed = append(closed, mus[c], vs[c])
		}
	}
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	return s, g, closed, viaGrad, ok
}

// NIMGP_FO's first-order term in closed form, W S Wᵀ for a dot-product
// kernel and noise shared by the rows, equals Σ_j V_j (∂μ/∂x_j)² with the
// gradient from graph.Grad, whitened or not, with Z and the kernel shared
// between the functions or not; its gradients with respect to every
// parameter, the inputs and V match finite differences. It declines
// (nothing built) for noise given per row, for a kernel that is not a dot
// product and where it would cost more than the gradient.
func TestInflatedClosedForm(t *testing.T) {
	const m, n, d = 3, 8, 12
	for _, whitened := range []bool{false, true} {
		for _, shared := range []bool{false, true} {
			s, g, closed, viaGrad, ok := inflatedSetup(t, m, n, d, whitened, shared, false)
			if !ok {
				t.Fatalf("whitened %v shared %v: the closed form declined", whitened, shared)
			}
			prog, err := graph.Compile(g, append(append(G.Nodes{}, closed...), viaGrad...)...)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := prog.Run(); err != nil {
				t.Fatal(err)
			}
			for k := range closed {
				a, _ := prog.Float64s(closed[k])
				b, _ := prog.Float64s(viaGrad[k])
				for i := range a {
					if math.Abs(a[i]-b[i]) > 1e-10*(1+math.Abs(b[i])) {
						t.Fatalf("whitened %v shared %v: output %d row %d is %v in closed form, %v through the gradient", whitened, shared, k, i, a[i], b[i])
					}
				}
			}
			if k := len(closed) - 1; k > 0 {
				a, _ := prog.Float64s(closed[k])
				b, _ := prog.Float64s(closed[k-2])
				if a[0] == b[0] {
					t.Fatal("the two functions' variances coincide: the test would not see them swapped")
				}
			}
			prog.Close()
			// A scalar that weighs every mean and variance differently.
			rng := rand.New(rand.NewPCG(7, 8))
			e := &graph.Chain{}
			var cost *G.Node
			for _, out := range closed {
				w := G.NewVector(g, G.Float64, G.WithShape(n), G.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(randData(rng, n, 1)))))
				term := e.Do(G.Sum(e.Do(G.HadamardProd(out, w))))
				if cost == nil {
					cost = term
				} else {
					cost = e.Do(G.Add(cost, term))
				}
			}
			if e.Err != nil {
				t.Fatal(e.Err)
			}
			_, params := s.Trainable()
			for order, check := range []func(*G.Node, G.Nodes, graph.CheckOptions) (graph.CheckReport, error){graph.CheckGrad, graph.CheckGrad2} {
				rep, err := check(cost, params, graph.CheckOptions{Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					t.Errorf("whitened %v shared %v, order %d: %s", whitened, shared, order+1, rep.Worst())
				}
			}
		}
	}
	// An SE kernel is not a dot product.
	k := kernels.NewSE("se", d, 1.3, 0.9, 0)
	post, err := New("q", Config{Latent: 1, M: m, D: d}, []kernels.Kernel{k}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	b, err := post.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	x := G.NewMatrix(g, G.Float64, G.WithShape(n, d), G.WithName("x"), G.WithInit(G.Zeroes()))
	v := G.NewVector(g, G.Float64, G.WithShape(d), G.WithName("v"), G.WithInit(G.Ones()))
	if _, _, ok, err := b.InflatedClassMarginals(x, v); ok || err != nil {
		t.Errorf("SE kernel: ok %v, err %v; want a refusal", ok, err)
	}
	if _, _, _, _, ok := inflatedSetup(t, m, n, d, false, false, true); ok {
		t.Error("the closed form was built for noise given per row")
	}
	if _, _, _, _, ok := inflatedSetup(t, 10, n, 2, false, false, false); ok {
		t.Error("the closed form was built where it costs more than the gradient (D = 2)")
	}
}
