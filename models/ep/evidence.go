package ep

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// Evidence holds the graph inputs of log Z_EP as a function of the prior
// covariance K with the sites held fixed:
//
//	g(K) = −½ log|B| − ½ cᵀB⁻¹c,  B = I + S̃^½ K S̃^½,  c = S̃^{-½} ν̃.
//
// At EP's fixed point the evidence's total derivative with respect to any
// hyper-parameter θ equals ∂g/∂θ through K alone, because the cavity terms'
// dependence on θ cancels there (R&W §5.5.2, eq. 5.27: the gradient is
// ½ tr((bbᵀ − S̃^½B⁻¹S̃^½) ∂K/∂θ) with b = A⁻¹μ̃). Building g as graph code
// makes every kernel's and every prior's (FITC's Q + diag(K − Q), through
// Z) gradient automatic.
type Evidence struct {
	// Node is g(K) plus a constant set by Set so that it equals log Z_EP.
	Node     *G.Node
	ss, c, k []float64 // feeds: S̃^½S̃^½ᵀ, c, the offset
}

// NewEvidence builds g(K) on the n×n prior covariance node K.
func NewEvidence(K *G.Node) (*Evidence, error) {
	n := K.Shape()[0]
	if s := K.Shape(); len(s) != 2 || s[1] != n {
		return nil, fmt.Errorf("ep: prior covariance of shape %v", s)
	}
	g := K.Graph()
	ev := &Evidence{ss: make([]float64, n*n), c: make([]float64, n), k: make([]float64, 1)}
	ssN := graph.Input(g, "ep/ss", tensor.Shape{n, n}, ev.ss)
	cN := graph.Input(g, "ep/c", tensor.Shape{n, 1}, ev.c)
	kN := graph.Input(g, "ep/offset", tensor.Shape{1}, ev.k)
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
	half := G.NewConstant(-0.5)
	val := e.Do(G.HadamardProd(e.Do(G.Add(logDet, quad)), half))
	ev.Node = e.Do(G.Add(val, e.Do(G.Sum(kN))))
	return ev, e.Err
}

// Set loads the sites and the offset that makes the node's value equal
// logZ at prior K (a row-major n×n slice): the constant is logZ − g(K).
func (ev *Evidence) Set(s *Sites, K []float64, logZ float64) error {
	n := len(s.Tau)
	sq := make([]float64, n)
	for i, t := range s.Tau {
		if !(t > 0) {
			// A site at zero precision carries no information; a tiny one
			// keeps c = ν̃/√τ̃ finite without changing B.
			t = 1e-300
		}
		sq[i] = math.Sqrt(t)
		ev.c[i] = s.Nu[i] / sq[i]
		if s.Tau[i] <= 0 {
			ev.c[i] = 0
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			ev.ss[i*n+j] = sq[i] * sq[j]
		}
	}
	g, err := gValue(K, sq, ev.c)
	if err != nil {
		return err
	}
	ev.k[0] = logZ - g
	return nil
}

// gValue evaluates g(K) numerically (for the offset).
func gValue(K, sq, c []float64) (float64, error) {
	n := len(sq)
	B := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			B[i*n+j] = sq[i] * K[i*n+j] * sq[j]
		}
		B[i*n+i]++
	}
	// Cholesky by hand: n is small enough here and it keeps gonum's
	// symmetric types out of the graph code.
	for j := 0; j < n; j++ {
		d := B[j*n+j]
		for k := 0; k < j; k++ {
			d -= B[j*n+k] * B[j*n+k]
		}
		if !(d > 0) {
			return 0, fmt.Errorf("ep: B is not positive definite at %d", j)
		}
		d = math.Sqrt(d)
		B[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := B[i*n+j]
			for k := 0; k < j; k++ {
				s -= B[i*n+k] * B[j*n+k]
			}
			B[i*n+j] = s / d
		}
	}
	var logDet, quad float64
	v := make([]float64, n)
	for i := 0; i < n; i++ {
		logDet += 2 * math.Log(B[i*n+i])
		s := c[i]
		for k := 0; k < i; k++ {
			s -= B[i*n+k] * v[k]
		}
		v[i] = s / B[i*n+i]
		quad += v[i] * v[i]
	}
	return -0.5 * (logDet + quad), nil
}
