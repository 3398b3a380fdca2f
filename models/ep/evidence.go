package ep

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// Evidence holds the graph inputs of
//
//	g(K) = −½ log|B| − ½ cᵀB⁻¹c,  B = I + S̃^½ K S̃^½,  c = S̃^{-½} ν̃,
//
// the part of log Z_EP that depends on the prior covariance K when the
// sites are held fixed. At EP's fixed point the evidence's total derivative
// with respect to any hyper-parameter θ equals ∂g/∂θ through K alone,
// because the cavity terms' dependence on θ cancels there (R&W §5.5.2,
// eq. 5.27: the gradient is ½ tr((bbᵀ − S̃^½B⁻¹S̃^½) ∂K/∂θ) with b = A⁻¹μ̃).
// Building g as graph code makes every kernel's and every prior's (FITC's
// Q + diag(K − Q), through Z) gradient automatic. Its value is not the
// evidence (Run computes that); only its gradient is used.
type Evidence struct {
	// Node is g(K).
	Node  *G.Node
	ss, c []float64 // feeds: S̃^½S̃^½ᵀ and c
	// set loads the sites into the feeds.
	set func(*Sites)
}

// NewEvidence builds g(K) on the n×n prior covariance node K.
func NewEvidence(K *G.Node) (*Evidence, error) {
	n := K.Shape()[0]
	if s := K.Shape(); len(s) != 2 || s[1] != n {
		return nil, fmt.Errorf("ep: prior covariance of shape %v", s)
	}
	g := K.Graph()
	ev := &Evidence{ss: make([]float64, n*n), c: make([]float64, n)}
	ev.set = ev.setDense
	ssN := graph.Input(g, "ep/ss", tensor.Shape{n, n}, ev.ss)
	cN := graph.Input(g, "ep/c", tensor.Shape{n, 1}, ev.c)
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	iN := graph.Input(g, "ep/eye", tensor.Shape{n, n}, eye)
	e := &graph.Chain{}
	B := e.Do(G.Add(e.Do(G.HadamardProd(K, ssN)), iN))
	L := e.Do(graph.Cholesky(B))
	logDet := e.Do(graph.LogDetChol(L))
	v := e.Do(graph.TriSolve(L, cN, true, false))
	quad := e.Do(G.Sum(e.Do(G.Square(v))))
	ev.Node = e.Do(G.HadamardProd(e.Do(G.Add(logDet, quad)), G.NewConstant(-0.5)))
	return ev, e.Err
}

// Set loads the sites.
func (ev *Evidence) Set(s *Sites) { ev.set(s) }

// setDense loads the sites of the dense form. A site at zero precision
// carries no information: its c is 0 (ν̃ is 0 there too) and B's row is the
// identity's.
func (ev *Evidence) setDense(s *Sites) {
	n := len(s.Tau)
	sq := make([]float64, n)
	for i, t := range s.Tau {
		sq[i], ev.c[i] = 0, 0
		if t > 0 {
			sq[i] = math.Sqrt(t)
			ev.c[i] = s.Nu[i] / sq[i]
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			ev.ss[i*n+j] = sq[i] * sq[j]
		}
	}
}

// NewFITCEvidence builds the evidence's prior-dependent part on a FITC
// prior K̃ = Λ + VᵀV given as graph nodes λ (n) and V (M×n), without
// forming K̃: with b = ν̃/(1 + λτ̃), W = S̃(I + ΛS̃)⁻¹ and E = I + VWVᵀ,
//
//	g = −½ [Σ log(1 + λτ̃) + log|E| + Σ (ν̃²/τ̃)/(1 + λτ̃) − (Vb)ᵀE⁻¹(Vb)],
//
// which is −½ log|K̃ + S̃⁻¹| − ½ μ̃ᵀ(K̃ + S̃⁻¹)⁻¹μ̃ up to terms of the sites
// alone (determinant lemma and Woodbury), so its gradient is the dense
// g's: O(nM²) where the dense form is O(n³).
func NewFITCEvidence(lam, V *G.Node) (*Evidence, error) {
	n := lam.Shape()[0]
	if vs := V.Shape(); lam.Dims() != 1 || len(vs) != 2 || vs[1] != n {
		return nil, fmt.Errorf("ep: FITC evidence on λ of shape %v and V of shape %v", lam.Shape(), V.Shape())
	}
	m := V.Shape()[0]
	g := lam.Graph()
	tau, nu, c := make([]float64, n), make([]float64, n), make([]float64, n)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	eye := make([]float64, m*m)
	for i := 0; i < m; i++ {
		eye[i*m+i] = 1
	}
	tauN := graph.Input(g, "ep/fitc/tau", tensor.Shape{n}, tau)
	nuN := graph.Input(g, "ep/fitc/nu", tensor.Shape{n}, nu)
	cN := graph.Input(g, "ep/fitc/c", tensor.Shape{n}, c)
	oneN := graph.Input(g, "ep/fitc/ones", tensor.Shape{n}, ones)
	eyeN := graph.Input(g, "ep/fitc/eye", tensor.Shape{m, m}, eye)
	e := &graph.Chain{}
	den := e.Do(G.Add(oneN, e.Do(G.HadamardProd(lam, tauN))))
	w := e.Do(G.HadamardDiv(tauN, den))
	b := e.Do(G.HadamardDiv(nuN, den))
	logDen := e.Do(G.Sum(e.Do(G.Log(den))))
	quadA := e.Do(G.Sum(e.Do(G.HadamardDiv(cN, den))))
	Vw := e.Do(G.HadamardProd(V, e.Do(graph.BroadcastTo(w, tensor.Shape{m, n}, []int{0}))))
	E := e.Do(G.Add(e.Do(graph.MatMul(Vw, V, false, true)), eyeN))
	LE := e.Do(graph.Cholesky(E))
	logDetE := e.Do(graph.LogDetChol(LE))
	Vb := e.Do(graph.MatMul(V, e.Do(graph.Reshape(b, tensor.Shape{n, 1})), false, false))
	r := e.Do(graph.TriSolve(LE, Vb, true, false))
	quadE := e.Do(G.Sum(e.Do(G.Square(r))))
	total := e.Do(G.Sub(e.Do(G.Add(e.Do(G.Add(logDen, logDetE)), quadA)), quadE))
	ev := &Evidence{Node: e.Do(G.HadamardProd(total, G.NewConstant(-0.5)))}
	ev.set = func(s *Sites) {
		for i, t := range s.Tau {
			tau[i], nu[i], c[i] = t, s.Nu[i], 0
			if t > 0 {
				c[i] = s.Nu[i] * s.Nu[i] / t
			}
		}
	}
	return ev, e.Err
}
