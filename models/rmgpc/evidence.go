package rmgpc

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
)

// ErrInvalidCavity is wrapped when the evidence meets a site whose cavity
// is not a proper distribution, where log Z_EP is undefined.
var ErrInvalidCavity = errors.New("rmgpc: invalid cavity at the evidence")

// evidence is log Z_EP of eqs. (16)–(17) at the current sites and Q:
//
//	log Z = log B(a,b) − log B(a0,b0) + Σ_i log D_i + ½ Σ_k [υ_kᵀΣ_kυ_k − log|I+Λ_kK_k|]
//	        + Σ_{i,k≠y_i} [log(Φ(α_ik) + O) + Gaussian terms] + Σ_i log s̃_i.
//
// The −½ Σ τ^k_i of C_k (17) is folded into each site's Gaussian terms,
// which then read ½ log(1 + v t̃) + (m² t̃ − 2 ñ m − ñ² v) / (2(1 + v t̃))
// for a site of precision t̃ and precision × mean ñ against a cavity
// N(m, v): finite at t̃ = 0 and for negative t̃, where μ̃ = ñ/t̃ is not.
func evidence(p *Posterior, s *Sites, y []int, cfg Config) (float64, error) {
	l := p.l
	robust := s.robust()
	logO := -math.Log(float64(l)) / float64(l-1)
	var total float64
	for _, cp := range p.classes {
		var q float64
		for _, w := range cp.w {
			q += w * w
		}
		total += 0.5 * (q - cp.logDetC)
	}
	gauss := func(t, nu, m, v float64) float64 {
		r := 1 + v*t
		return 0.5*math.Log(r) + (m*m*t-2*nu*m-nu*nu*v)/(2*r)
	}
	for i, yi := range y {
		cy := p.classes[yi]
		for k := 0; k < l; k++ {
			if k == yi {
				continue
			}
			j := i*l + k
			ck := p.classes[k]
			tck := 1/ck.vari[i] - s.TauK[j]
			tcy := 1/cy.vari[i] - s.TauY[j]
			if !(tck > 0 && tcy > 0) {
				return math.NaN(), fmt.Errorf("%w: site (%d, %d) has cavity precisions %g, %g", ErrInvalidCavity, i, k, tck, tcy)
			}
			vk, vy := 1/tck, 1/tcy
			mk := (ck.mean[i]/ck.vari[i] - s.NuK[j]) * vk
			my := (cy.mean[i]/cy.vari[i] - s.NuY[j]) * vy
			a := (my - mk) / math.Sqrt(vy+vk)
			lphi := graph.LogNormCDFValue(a)
			if robust {
				// log Z_ik − log(p̃_ik p\ + (1 − p̃_ik)(1 − p\)), which is
				// the paper's log(Φ(α) + O) when p̃_ik = O/(O + Φ(α)), i.e.
				// at the fixed point; elsewhere this general form keeps
				// log Z_EP stationary in the sites, so that an EP stopped at
				// a site error δ gives the evidence to O(δ²).
				lpc := p.LogitP[i] - s.LogitK[j]
				lz := logAddExp(logSigmoid(-lpc)+lphi, logSigmoid(lpc)+logO)
				lk := s.LogitK[j]
				lphi = lz - logAddExp(logSigmoid(lk)+logSigmoid(lpc), logSigmoid(-lk)+logSigmoid(-lpc))
			}
			total += lphi + gauss(s.TauK[j], s.NuK[j], mk, vk) + gauss(s.TauY[j], s.NuY[j], my, vy)
		}
	}
	if !robust {
		return total, nil
	}
	total += lbeta(p.A, p.B) - lbeta(cfg.A0, cfg.B0)
	for i, yi := range y {
		// D_i = p̃_i ∏ p̃_ik + (1 − p̃_i) ∏ (1 − p̃_ik).
		l1, l0 := logSigmoid(s.LogitZ[i]), logSigmoid(-s.LogitZ[i])
		for k := 0; k < l; k++ {
			if k != yi {
				l1 += logSigmoid(s.LogitK[i*l+k])
				l0 += logSigmoid(-s.LogitK[i*l+k])
			}
		}
		total += logAddExp(l1, l0)
		// log s̃_i = log B(a\, b\) − log B(a, b) + log Z_i
		//           − log(p̃_i p\ + (1 − p̃_i)(1 − p\)).
		ac, bc := p.A-s.A[i]+1, p.B-s.B[i]+1
		if !(ac > 0 && bc > 0) {
			return math.NaN(), fmt.Errorf("%w: z-prior site %d has cavity Beta(%g, %g)", ErrInvalidCavity, i, ac, bc)
		}
		lpc := p.LogitP[i] - s.LogitZ[i]
		eb := ac / (ac + bc)
		pc := sigmoid(lpc)
		pt := sigmoid(s.LogitZ[i])
		total += lbeta(ac, bc) - lbeta(p.A, p.B) + math.Log(pc*eb+(1-pc)*(1-eb)) - math.Log(pt*pc+(1-pt)*(1-pc))
	}
	return total, nil
}

func lbeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// evidenceGraph is
//
//	g(K_1..K_l) = ½ Σ_k [υ_kᵀ (K_k⁻¹ + Λ_k)⁻¹ υ_k − log|I + Λ_k K_k|]
//
// as graph code over the kernel's parameters, with the sites (Λ_k, υ_k)
// fed in as constants. It is the part of log Z_EP through which the prior
// enters when the sites are held fixed; at an EP fixed point the
// evidence's stationarity in the site parameters (Seeger 2005) makes its
// gradient the evidence's total gradient, the paper's eq. (18), for any
// kernel. It is written through K_k = L Lᵀ and C = I + Lᵀ Λ_k L, which
// stay valid for the negative site precisions of the robust likelihood.
type evidenceGraph struct {
	scope    *layers.Scope
	lam, ups [][]float64
	value    *G.Node
	params   []*layers.Param
	grads    G.Nodes
	prog     *graph.Program
}

// priorNodes builds the per-class prior covariances K_k = K + (jitter +
// ϑ_k²) I on the training inputs x (n×d); without noise every class gets
// the same node, so their Cholesky factor is built once.
func priorNodes(s *layers.Scope, kern kernels.Kernel, x []float64, n, d, l int, noise []*layers.Param, jitter float64) ([]*G.Node, error) {
	e := &graph.Chain{}
	xn := graph.Input(s.G, "rmgpc/x", tensor.Shape{n, d}, x)
	K := e.Do(kern.K(s, xn, xn))
	if e.Err != nil {
		return nil, e.Err
	}
	ks := make([]*G.Node, l)
	if noise == nil {
		if jitter > 0 {
			j := make([]float64, n*n)
			for i := 0; i < n; i++ {
				j[i*n+i] = jitter
			}
			K = e.Do(G.Add(K, graph.Input(s.G, "rmgpc/jitter", tensor.Shape{n, n}, j)))
		}
		for k := range ks {
			ks[k] = K
		}
		return ks, e.Err
	}
	for k := range ks {
		v := e.Do(s.Node(noise[k]))
		if jitter > 0 {
			v = e.Do(G.Add(v, G.NewConstant(jitter)))
		}
		dg := e.Do(graph.DiagMatrix(e.Do(graph.BroadcastTo(v, tensor.Shape{n}, []int{0}))))
		ks[k] = e.Do(G.Add(K, dg))
	}
	return ks, e.Err
}

func newEvidenceGraph(kern kernels.Kernel, x []float64, n, d, l int, noise []*layers.Param, jitter float64, train []*layers.Param) (*evidenceGraph, error) {
	g := G.NewGraph()
	eg := &evidenceGraph{scope: layers.NewScope(g), lam: make([][]float64, l), ups: make([][]float64, l)}
	ks, err := priorNodes(eg.scope, kern, x, n, d, l, noise, jitter)
	if err != nil {
		return nil, err
	}
	e := &graph.Chain{}
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	eyeN := graph.Input(g, "rmgpc/eye", tensor.Shape{n, n}, eye)
	chol := map[*G.Node]*G.Node{}
	var parts G.Nodes
	for k := 0; k < l; k++ {
		L, ok := chol[ks[k]]
		if !ok {
			L = e.Do(graph.Cholesky(ks[k]))
			chol[ks[k]] = L
		}
		eg.lam[k], eg.ups[k] = make([]float64, n), make([]float64, n)
		lamN := graph.Input(g, fmt.Sprintf("rmgpc/lam%d", k), tensor.Shape{n}, eg.lam[k])
		upsN := graph.Input(g, fmt.Sprintf("rmgpc/ups%d", k), tensor.Shape{n, 1}, eg.ups[k])
		W := e.Do(G.HadamardProd(L, e.Do(graph.BroadcastTo(lamN, tensor.Shape{n, n}, []int{1}))))
		C := e.Do(G.Add(e.Do(graph.MatMul(L, W, true, false)), eyeN))
		Lc := e.Do(graph.Cholesky(C))
		r := e.Do(graph.MatMul(L, upsN, true, false))
		w := e.Do(graph.TriSolve(Lc, r, true, false))
		quad := e.Do(G.Sum(e.Do(G.Square(w))))
		parts = append(parts, e.Do(G.Sub(quad, e.Do(graph.LogDetChol(Lc)))))
	}
	if e.Err != nil {
		return nil, e.Err
	}
	total := parts[0]
	if len(parts) > 1 {
		total = e.Do(graph.AddN(parts...))
	}
	eg.value = e.Do(G.HadamardProd(total, G.NewConstant(0.5)))
	if e.Err != nil {
		return nil, e.Err
	}
	var wrt G.Nodes
	eg.params, wrt = eg.scope.TrainableAmong(train)
	if len(wrt) > 0 {
		if eg.grads, err = graph.Grad(eg.value, wrt...); err != nil {
			return nil, fmt.Errorf("rmgpc: differentiating the evidence: %w", err)
		}
	}
	if eg.prog, err = graph.Compile(g, append(G.Nodes{eg.value}, eg.grads...)...); err != nil {
		return nil, err
	}
	return eg, nil
}

// gradient loads the sites, runs the graph and returns g and, for each
// trainable parameter (in eg.params order), ∂g/∂(its raw storage).
func (eg *evidenceGraph) gradient(s *Sites, y []int) (float64, [][]float64, error) {
	for k := range eg.lam {
		s.naturals(k, y, eg.lam[k], eg.ups[k])
	}
	if err := eg.scope.Sync(); err != nil {
		return 0, nil, err
	}
	if err := eg.prog.Run(); err != nil {
		return 0, nil, err
	}
	v, err := eg.prog.Scalar(eg.value)
	if err != nil {
		return 0, nil, err
	}
	out := make([][]float64, len(eg.grads))
	for i, gn := range eg.grads {
		if out[i], err = eg.prog.Float64s(gn); err != nil {
			return 0, nil, err
		}
	}
	return v, out, nil
}
