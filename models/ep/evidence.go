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
}

// NewEvidence builds g(K) on the n×n prior covariance node K.
func NewEvidence(K *G.Node) (*Evidence, error) {
	n := K.Shape()[0]
	if s := K.Shape(); len(s) != 2 || s[1] != n {
		return nil, fmt.Errorf("ep: prior covariance of shape %v", s)
	}
	g := K.Graph()
	ev := &Evidence{ss: make([]float64, n*n), c: make([]float64, n)}
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

// Set loads the sites. A site at zero precision carries no information:
// its c is 0 (ν̃ is 0 there too) and B's row is the identity's.
func (ev *Evidence) Set(s *Sites) {
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
