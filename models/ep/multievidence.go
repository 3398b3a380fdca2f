package ep

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// ErrInvalidCavity is wrapped when the evidence meets a site whose cavity
// is not a proper distribution, where log Z_EP is undefined.
var ErrInvalidCavity = errors.New("ep: invalid cavity at the evidence")

// multiEvidence is log Z_EP (the robust paper's eqs. 16–17) at the sites
// and Q:
//
//	log Z = log B(a,b) − log B(a0,b0) + Σ_i log D_i + ½ Σ_k [υ_kᵀΣ_kυ_k − log|I+Λ_kK_k|]
//	        + Σ_sites [log Z_s + Gaussian terms] + Σ_i log s̃_i.
//
// The −½ Σ τ̃ of (17) is folded into each site's Gaussian terms, which then
// read ½ log(1 + v t̃) + (m² t̃ − 2 ñ m − ñ² v) / (2(1 + v t̃)) for a site
// part of precision t̃ and precision × mean ñ against a cavity N(m, v):
// finite at t̃ = 0 and for negative t̃, where μ̃ = ñ/t̃ is not.
func multiEvidence(ly *MultiLayout, lik MultiTilted, p *MultiResult, s *MultiSites, sc *siteScratch) (float64, error) {
	robust := ly.Robust
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
	for i := 0; i < ly.N; i++ {
		for j := ly.Row[i]; j < ly.Row[i+1]; j++ {
			if !cavity(ly, s, p, i, j, sc) {
				return math.NaN(), fmt.Errorf("%w: a site of row %d", ErrInvalidCavity, i)
			}
			lpc := math.Inf(-1)
			if robust {
				lpc = p.LogitP[i] - s.Logit[j]
			}
			lz, _ := lik.MultiTiltedMoments(ly.C, sc.m, sc.v, lpc, sc.g, sc.c)
			if robust {
				// log Z_s − log(p̃_s p\ + (1 − p̃_s)(1 − p\)), which is the
				// paper's log(Φ(α) + O) at the fixed point; elsewhere this
				// general form keeps log Z_EP stationary in the sites, so
				// that an EP stopped at a site error δ gives the evidence to
				// O(δ²).
				lk := s.Logit[j]
				lz -= logAddExp(logSigmoid(lk)+logSigmoid(lpc), logSigmoid(-lk)+logSigmoid(-lpc))
			}
			for a := range ly.Lat[j] {
				e := ly.Entry[j] + a
				lz += gauss(s.Tau[e], s.Nu[e], sc.m[a], sc.v[a])
			}
			total += lz
		}
	}
	if !robust {
		return total, nil
	}
	total += lbeta(p.A, p.B) - lbeta(ly.A0, ly.B0)
	for i := 0; i < ly.N; i++ {
		// D_i = p̃_i ∏ p̃_s + (1 − p̃_i) ∏ (1 − p̃_s).
		l1, l0 := logSigmoid(s.LogitZ[i]), logSigmoid(-s.LogitZ[i])
		for j := ly.Row[i]; j < ly.Row[i+1]; j++ {
			l1 += logSigmoid(s.Logit[j])
			l0 += logSigmoid(-s.Logit[j])
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

// MultiEvidence holds the graph inputs of
//
//	g(K_1..K_l) = ½ Σ_k [υ_kᵀ (K_k⁻¹ + Λ_k)⁻¹ υ_k − log|I + Λ_k K_k|],
//
// the part of log Z_EP through which the priors enter when the sites are
// held fixed; at an EP fixed point the evidence's stationarity in the site
// parameters (Seeger 2005) makes its gradient the evidence's total
// gradient, the robust paper's eq. (18), for any kernel. It is written
// through K_k = L Lᵀ and C = I + Lᵀ Λ_k L, which stay valid for the
// negative site precisions of the robust likelihood. Its value is not the
// evidence (RunMulti computes that); only its gradient is used.
type MultiEvidence struct {
	// Node is g.
	Node     *G.Node
	lam, ups [][]float64
}

// NewMultiEvidence builds g on the per-latent n×n prior covariance nodes K
// (one node given several times is factorised once).
func NewMultiEvidence(K []*G.Node) (*MultiEvidence, error) {
	if len(K) < 2 {
		return nil, fmt.Errorf("ep: %d latent priors; multi-latent EP needs at least 2", len(K))
	}
	n := K[0].Shape()[0]
	g := K[0].Graph()
	ev := &MultiEvidence{lam: make([][]float64, len(K)), ups: make([][]float64, len(K))}
	e := &graph.Chain{}
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	eyeN := graph.Input(g, "ep/multi/eye", tensor.Shape{n, n}, eye)
	chol := map[*G.Node]*G.Node{}
	var parts G.Nodes
	for k, Kk := range K {
		if s := Kk.Shape(); len(s) != 2 || s[0] != n || s[1] != n {
			return nil, fmt.Errorf("ep: latent %d's prior covariance has shape %v, want %d×%d", k, s, n, n)
		}
		L, ok := chol[Kk]
		if !ok {
			L = e.Do(graph.Cholesky(Kk))
			chol[Kk] = L
		}
		ev.lam[k], ev.ups[k] = make([]float64, n), make([]float64, n)
		lamN := graph.Input(g, fmt.Sprintf("ep/multi/lam%d", k), tensor.Shape{n}, ev.lam[k])
		upsN := graph.Input(g, fmt.Sprintf("ep/multi/ups%d", k), tensor.Shape{n, 1}, ev.ups[k])
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
	total := e.Do(graph.AddN(parts...))
	ev.Node = e.Do(G.HadamardProd(total, G.NewConstant(0.5)))
	return ev, e.Err
}

// Set loads the sites' per-latent natural parameters into the graph's
// inputs.
func (ev *MultiEvidence) Set(ly *MultiLayout, s *MultiSites) {
	for k := range ev.lam {
		ly.naturals(s, k, ev.lam[k], ev.ups[k])
	}
}
