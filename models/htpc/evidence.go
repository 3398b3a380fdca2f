package htpc

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// The gradient of the Laplace evidence
//
//	E(θ, β) = ℓ(ĝ) − ½ ĝᵀK⁻¹ĝ − ½ log|I + K W(ĝ)|
//
// (θ the kernel's log ℓ and log σ, β = log b) is exact, taken analytically
// with every derivative of the likelihood supplied by graph code (likGraph)
// and the kernel part by the kernel graph; no finite differences. With
// Σ = (K⁻¹ + W)⁻¹, â = ∇ℓ(ĝ) = K⁻¹ĝ, and the mode's own dependence on
// the hyper-parameters through the implicit function theorem (R&W §5.5.1
// generalised to a W that need not be positive semi-definite):
//
//	s  = ∂E/∂ĝ = ½ tr(Σ ∂(∇²ℓ)/∂ĝ)        (third derivatives of ℓ)
//	u  = Σ s
//	dE/db   = ∂ℓ/∂b + ½ tr(Σ ∂(∇²ℓ)/∂b) + uᵀ ∂(∇ℓ)/∂b
//	dE/dθ   = ⟨M, ∂K_c/∂θ⟩,  M = Σ_k [½ â_k â_kᵀ − ½ R_kk + (s − W u)_k â_kᵀ],
//
// where R = W − WΣW = (I + WK)⁻¹W, and ∂ĝ/∂θ = (I + KW)⁻¹ ∂K â,
// ∂ĝ/∂b = Σ ∂(∇ℓ)/∂b follow from differentiating ĝ = K∇ℓ(ĝ). Σ = L A⁻¹ Lᵀ
// blockwise, from the Cholesky factor of A that Newton left behind.

// posteriorCov returns Σ = Lbig A⁻¹ Lbigᵀ (nl×nl, class-major), Lbig the
// block-diagonal of l copies of L.
func (p *problem) posteriorCov(m *mode) *mat.Dense {
	n, l := p.n, p.l
	N := n * l
	// Z = L_A⁻¹ Lbigᵀ, then Σ = ZᵀZ.
	z := mat.NewDense(N, N, nil)
	for k := range l {
		for i := range n {
			for j := i; j < n; j++ { // (Lᵀ)_ij = L_ji
				z.Set(k*n+i, k*n+j, m.L.At(j, i))
			}
		}
	}
	var la mat.TriDense
	m.chA.LTo(&la)
	blas64.Trsm(blas.Left, blas.NoTrans, 1, la.RawTriangular(), z.RawMatrix())
	var sigma mat.Dense
	sigma.Mul(z.T(), z)
	return &sigma
}

// wAt returns W_i[k][k'] = −∂²ℓ_i/∂g_ik∂g_ik'.
func wAt(hess []float64, l, i, k, k2 int) float64 { return -hess[i*l*l+k*l+k2] }

// evidenceGrad returns dE/d(log ℓ, log σ, log b) at the mode m, and Σ.
func (p *problem) evidenceGrad(m *mode) (Hyper, *mat.Dense, error) {
	n, l := p.n, p.l
	N := n * l
	sigma := p.posteriorCov(m)
	sd := sigma.RawMatrix()
	sig := func(a, b int) float64 { return sd.Data[a*sd.Stride+b] }

	// Per-point l×l blocks of Σ, weighting ∂(∇²ℓ_i) in q.
	sb := make([]float64, n*l*l)
	for i := range n {
		for a := range l {
			for b := range l {
				sb[i*l*l+a*l+b] = sig(a*n+i, b*n+i)
			}
		}
	}
	gradB, dqdG, dqdB, err := p.lik.evidenceTerms(m.G, m.b, sb)
	if err != nil {
		return Hyper{}, nil, fmt.Errorf("htpc: evidence terms: %w", err)
	}
	// s = ½ ∂q/∂G; u = Σ s.
	s := make([]float64, n*l)
	sv := make([]float64, N)
	for i := range n {
		for k := range l {
			s[i*l+k] = 0.5 * dqdG[i*l+k]
			sv[k*n+i] = s[i*l+k]
		}
	}
	uv := mat.NewVecDense(N, nil)
	uv.MulVec(sigma, mat.NewVecDense(N, sv))
	u := make([]float64, n*l)
	for i := range n {
		for k := range l {
			u[i*l+k] = uv.AtVec(k*n + i)
		}
	}
	dpdB, err := p.lik.mixedTerm(m.G, m.b, u)
	if err != nil {
		return Hyper{}, nil, fmt.Errorf("htpc: evidence terms: %w", err)
	}
	out := Hyper{LogB: make([]float64, l)}
	for k := range l {
		out.LogB[k] = m.b[k] * (gradB[k] + 0.5*dqdB[k] + dpdB[k])
	}

	// r = s − W u (n×l).
	r := make([]float64, n*l)
	for i := range n {
		for k := range l {
			var wu float64
			for k2 := range l {
				wu += wAt(m.hess, l, i, k, k2) * u[i*l+k2]
			}
			r[i*l+k] = s[i*l+k] - wu
		}
	}
	// M = Σ_k [½ â_k â_kᵀ + r_k â_kᵀ] − ½ Σ_k R_kk, with
	// (Σ_k R_kk)_ij = δ_ij tr W_i − Σ_k (W_i Σ(i,j) W_j)_kk, Σ(i,j) the l×l
	// matrix Σ_{(a,i),(b,j)}.
	a := m.grad
	mk := make([]float64, n*n)
	sij := make([]float64, l*l)
	tmp := make([]float64, l*l)
	for i := range n {
		for j := range n {
			var v float64
			for k := range l {
				v += (0.5*a[i*l+k] + r[i*l+k]) * a[j*l+k]
			}
			for aa := range l {
				for bb := range l {
					sij[aa*l+bb] = sig(aa*n+i, bb*n+j)
				}
			}
			// tmp = W_i Σ(i,j)
			for k := range l {
				for bb := range l {
					var t float64
					for aa := range l {
						t += wAt(m.hess, l, i, k, aa) * sij[aa*l+bb]
					}
					tmp[k*l+bb] = t
				}
			}
			var rs float64
			for k := range l {
				for bb := range l {
					rs -= tmp[k*l+bb] * wAt(m.hess, l, j, bb, k)
				}
				if i == j {
					rs += wAt(m.hess, l, i, k, k)
				}
			}
			mk[i*n+j] = v - 0.5*rs
		}
	}
	out.LogEll, out.LogSigma, err = p.kern.grad(m.hyp, mk)
	if err != nil {
		return Hyper{}, nil, fmt.Errorf("htpc: kernel gradient: %w", err)
	}
	return out, sigma, nil
}
