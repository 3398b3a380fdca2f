package laplace

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// The gradient of the Laplace evidence
//
//	E(θ, β) = ℓ(f̂, β) − ½ f̂ᵀK⁻¹f̂ − ½ log|I + K W(f̂)|
//
// (θ the kernels' parameters, β the likelihood's) is exact: every
// derivative of the likelihood comes from graph code (likGraph), the
// kernel part from the kernel graph. With Σ = (K⁻¹ + W)⁻¹, â = ∇ℓ(f̂) = K⁻¹f̂,
// and the mode's dependence on the parameters by the implicit function
// theorem (R&W §5.5.1, and its multi-class form §3.5, for a W that need not
// be positive semi-definite):
//
//	s  = ∂E/∂f̂ = ½ tr(Σ ∂(∇²ℓ)/∂f̂)         (third derivatives of ℓ)
//	u  = Σ s
//	dE/dβ = ∂ℓ/∂β + ½ tr(Σ ∂(∇²ℓ)/∂β) + uᵀ ∂(∇ℓ)/∂β
//	dE/dθ = Σ_c ⟨M_c, ∂K_c/∂θ⟩,  M_c = ½ â_c â_cᵀ − ½ R_cc + (s − W u)_c â_cᵀ,
//
// where R = W − WΣW = (I + WK)⁻¹W, ∂f̂/∂θ = (I + KW)⁻¹ ∂K â and
// ∂f̂/∂β = Σ ∂(∇ℓ)/∂β follow from differentiating f̂ = K∇ℓ(f̂). K is
// block-diagonal over the latent functions, so only R's diagonal blocks
// enter. Σ = L A⁻¹ Lᵀ from the Cholesky factor of A that Newton left.

// posteriorCov returns Σ = L A⁻¹ Lᵀ (nL×nL, class-major), L the
// block-diagonal of the L_c.
func (p *problem) posteriorCov(m *mode) *mat.Dense {
	n, l := p.n, p.l
	N := n * l
	z := mat.NewDense(N, N, nil)
	for k := range l {
		for i := range n {
			for j := i; j < n; j++ { // (L_kᵀ)_ij = (L_k)_ji
				z.Set(k*n+i, k*n+j, m.L[k].At(j, i))
			}
		}
	}
	var la mat.TriDense
	m.chA.LTo(&la)
	blas64.Trsm(blas.Left, blas.NoTrans, 1, la.RawTriangular(), z.RawMatrix())
	// Σ = ZᵀZ by a symmetric rank-k update (half a general product's work),
	// then mirrored: callers index both triangles.
	sigma := mat.NewDense(N, N, nil)
	sr := sigma.RawMatrix()
	blas64.Syrk(blas.Trans, 1, z.RawMatrix(), 0, blas64.Symmetric{Uplo: blas.Upper, N: N, Data: sr.Data, Stride: sr.Stride})
	for i := range N {
		for j := i + 1; j < N; j++ {
			sr.Data[j*sr.Stride+i] = sr.Data[i*sr.Stride+j]
		}
	}
	return sigma
}

// gradient is dE/dθ per trainable kernel parameter and dE/dβ per trainable
// likelihood parameter, in the graphs' orders.
type gradient struct {
	kernel, lik [][]float64
}

// evidenceGrad returns the evidence's gradient at the mode m.
func (p *problem) evidenceGrad(m *mode) (gradient, error) {
	n, l := p.n, p.l
	N := n * l
	sigma := p.posteriorCov(m)
	sd := sigma.RawMatrix()
	sig := func(a, b int) float64 { return sd.Data[a*sd.Stride+b] }

	sb := make([]float64, n*l*l)
	for i := range n {
		for a := range l {
			for b := range l {
				sb[i*l*l+a*l+b] = sig(a*n+i, b*n+i)
			}
		}
	}
	dqdF, gradB, dqdB, err := p.lik.evidenceTerms(m.F, sb)
	if err != nil {
		return gradient{}, fmt.Errorf("laplace: evidence terms: %w", err)
	}
	s := make([]float64, n*l)
	sv := make([]float64, N)
	for i := range n {
		for k := range l {
			s[i*l+k] = 0.5 * dqdF[i*l+k]
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
	var out gradient
	if len(gradB) > 0 {
		dpdB, err := p.lik.mixedTerms(m.F, u)
		if err != nil {
			return gradient{}, fmt.Errorf("laplace: evidence terms: %w", err)
		}
		for j := range gradB {
			g := make([]float64, len(gradB[j]))
			for t := range g {
				g[t] = gradB[j][t] + 0.5*dqdB[j][t] + dpdB[j][t]
			}
			out.lik = append(out.lik, g)
		}
	}

	// r = s − W u (n×L).
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
	// M_c(i,j) = (½ a_ic + r_ic) a_jc − ½ R_cc(i,j), with
	// R_cc(i,j) = δ_ij W_i[c,c] − Σ_ab W_i[c,a] Σ_{(a,i),(b,j)} W_j[b,c].
	a := m.grad
	ms := make([][]float64, l)
	wi := make([]float64, l) // W_i[c, ·]
	t := make([]float64, n*l)
	for c := range l {
		// t_(b,j) = Σ_a W_i[c,a] Σ_{(a,i),(b,j)} for each i, then contract with W_j[b,c].
		mc := make([]float64, n*n)
		for i := range n {
			for aa := range l {
				wi[aa] = wAt(m.hess, l, i, c, aa)
			}
			for b := range l {
				for j := range n {
					var v float64
					for aa := range l {
						if wi[aa] != 0 {
							v += wi[aa] * sig(aa*n+i, b*n+j)
						}
					}
					t[j*l+b] = v
				}
			}
			for j := range n {
				var rs float64
				for b := range l {
					rs -= t[j*l+b] * wAt(m.hess, l, j, b, c)
				}
				if i == j {
					rs += wi[c]
				}
				mc[i*n+j] = (0.5*a[i*l+c]+r[i*l+c])*a[j*l+c] - 0.5*rs
			}
		}
		ms[c] = mc
	}
	if out.kernel, err = p.kern.grad(ms); err != nil {
		return gradient{}, fmt.Errorf("laplace: kernel gradient: %w", err)
	}
	return out, nil
}
