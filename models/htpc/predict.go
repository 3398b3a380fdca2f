package htpc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Predict returns the class probabilities of the n test inputs x (n×D,
// row-major) as an n×Classes row-major matrix whose rows sum to one.
//
// The latent Gaussian values at a test input are Gaussian under the
// Laplace approximation, with mean μ_k = k*ᵀ ∇ℓ(ĝ)_k and covariance
// δ_kk' c** − k*ᵀ R_kk' k* across the classes (R = (I + WK)⁻¹W). The
// probabilities E[softmax(b ⊙ τ(g*))] are averaged over the same
// antithetic Monte Carlo draws for every test point (Config.PredictSamples,
// Config.Seed), so a point's probabilities do not depend on the batch it
// comes in and repeated calls agree exactly.
func (mdl *Model) Predict(x []float64, n int) ([]float64, error) {
	if mdl == nil || mdl.r == nil {
		return nil, errors.New("htpc: Predict on an untrained model")
	}
	d, l := mdl.D, mdl.Classes
	if n < 0 || len(x) != n*d {
		return nil, fmt.Errorf("htpc: Predict got %d values for %d rows of %d inputs", len(x), n, d)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("htpc: test input %d, column %d is %v", i/max(d, 1), i%max(d, 1), v)
		}
	}
	out := make([]float64, n*l)
	if n == 0 {
		return out, nil
	}
	mu, cov := mdl.latentPredictive(x, n)
	half := mdl.cfg.PredictSamples / 2
	rng := rand.New(rand.NewPCG(mdl.cfg.Seed, 0x4854504325))
	z := make([]float64, half*l)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	chol := make([]float64, l*l)
	g, f := make([]float64, l), make([]float64, l)
	for j := range n {
		if err := cholSmall(cov[j*l*l:(j+1)*l*l], l, chol); err != nil {
			return nil, fmt.Errorf("htpc: predictive covariance of test point %d: %w", j, err)
		}
		p := out[j*l : (j+1)*l]
		for s := range half {
			zs := z[s*l : (s+1)*l]
			for sign := -1.0; sign <= 1; sign += 2 {
				for k := range l {
					v := mu[j*l+k]
					for t := 0; t <= k; t++ {
						v += sign * chol[k*l+t] * zs[t]
					}
					g[k] = v
				}
				softmaxInto(f, g, mdl.b, p)
			}
		}
		for k := range p {
			p[k] /= float64(2 * half)
		}
	}
	return out, nil
}

// latentPredictive returns, for n test inputs, the Laplace predictive mean
// of the latent Gaussian values (n×l) and their l×l covariances
// (cov[j*l*l + k*l + k']).
func (mdl *Model) latentPredictive(x []float64, n int) (mean, cov []float64) {
	d, l, nt := mdl.D, mdl.Classes, mdl.N
	h := mdl.Hyper
	ks := mat.NewDense(nt, n, seKernel(sqDists(mdl.x, nt, x, n, d), h))
	var mu mat.Dense // n×l
	mu.Mul(ks.T(), mat.NewDense(nt, l, mdl.alpha))
	mean = mu.RawMatrix().Data[: n*l : n*l]
	// cov[j][k*l+k'] for test point j.
	prior := math.Exp(2*h.LogSigma) + mdl.cfg.Jitter
	cov = make([]float64, n*l*l)
	var rk mat.Dense
	for k := range l {
		for k2 := k; k2 < l; k2++ {
			blk := mdl.r.Slice(k*nt, (k+1)*nt, k2*nt, (k2+1)*nt)
			rk.Reset()
			rk.Mul(blk, ks)
			for j := range n {
				var s float64
				for i := range nt {
					s += ks.At(i, j) * rk.At(i, j)
				}
				c := -s
				if k == k2 {
					c += prior
				}
				cov[j*l*l+k*l+k2] = c
				cov[j*l*l+k2*l+k] = c
			}
		}
	}
	return mean, cov
}

// softmaxInto adds softmax(b ⊙ τ(g)) to acc, using f as scratch.
func softmaxInto(f, g, b, acc []float64) {
	mx := math.Inf(-1)
	for k := range g {
		f[k] = b[k] * tau(g[k])
		mx = math.Max(mx, f[k])
	}
	var z float64
	for k := range f {
		f[k] = math.Exp(f[k] - mx)
		z += f[k]
	}
	for k := range f {
		acc[k] += f[k] / z
	}
}

// cholSmall writes the lower Cholesky factor of the l×l matrix a into c.
// A predictive covariance that rounding has made slightly indefinite gets
// a growing diagonal jitter (relative to its trace) before giving up.
func cholSmall(a []float64, l int, c []float64) error {
	var tr float64
	for k := range l {
		tr += math.Abs(a[k*l+k])
	}
	jit := 0.0
	for range 12 {
		if cholTry(a, l, c, jit) {
			return nil
		}
		if jit == 0 {
			jit = 1e-12 * math.Max(tr, 1e-300)
		} else {
			jit *= 10
		}
	}
	return errors.New("not positive definite")
}

func cholTry(a []float64, l int, c []float64, jit float64) bool {
	clear(c)
	for i := range l {
		for j := 0; j <= i; j++ {
			s := a[i*l+j]
			if i == j {
				s += jit
			}
			for t := range j {
				s -= c[i*l+t] * c[j*l+t]
			}
			if i == j {
				if !(s > 0) {
					return false
				}
				c[i*l+i] = math.Sqrt(s)
			} else {
				c[i*l+j] = s / c[j*l+j]
			}
		}
	}
	return true
}
