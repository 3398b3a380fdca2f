package mcmc

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/models"
)

// Prediction sizes: test rows per kernel evaluation, and rows (test rows ×
// draws) per run of the likelihood's predictive graph.
const (
	predictRows  = 256
	predictCells = 8192
)

// Predict implements models.Predictor: the class probabilities averaged
// over the draws, p(y*|x*) ≈ (1/S) Σ_s ∫ p(y*|f*) p(f*|f^(s), θ^(s)) df*,
// each term the likelihood's own Predict at the conditional mean
// K*X K⁻¹ f^(s) and variance k** − K*X K⁻¹ KX* (so any likelihood with a
// Predict works, a user's too). Draws that share their hyper-parameters
// share one factorisation.
func (Engine) Predict(ctx context.Context, m *models.Model, x []float64, n int, _ []float64) ([]float64, error) {
	st := StateOf(m)
	if st == nil {
		return nil, errors.New("mcmc: the model has no draws (fit it with the mcmc engine)")
	}
	p, err := newPredictor(m, min(n, predictRows), len(st.Draws))
	if err != nil {
		return nil, err
	}
	defer p.close()
	ps, _ := hyperParams(m)
	if len(st.Thetas) > 0 {
		keep := getTheta(ps)
		defer setTheta(ps, keep)
	}
	out := make([]float64, 0, n*m.C)
	for start := 0; start < n; start += p.rows {
		real := min(p.rows, n-start)
		for r := 0; r < p.rows; r++ {
			i := start + r%real
			copy(p.x[r*m.D:(r+1)*m.D], x[i*m.D:(i+1)*m.D])
		}
		acc := make([]float64, p.rows*m.C)
		if len(st.Thetas) == 0 {
			if err := p.average(ctx, st.Draws, acc); err != nil {
				return nil, err
			}
		} else {
			for s, th := range st.Thetas {
				setTheta(ps, th)
				if err := p.average(ctx, st.Draws[s:s+1], acc); err != nil {
					return nil, err
				}
			}
		}
		for j := range acc {
			acc[j] /= float64(len(st.Draws))
		}
		out = append(out, acc[:real*m.C]...)
	}
	return out, nil
}

// predictor holds the prediction graphs of one Predict call.
type predictor struct {
	m            *models.Model
	rows, draws  int // test rows per batch, draws per likelihood run
	n, latent, c int
	kern         []int
	kScope       *layers.Scope
	kProg        *graph.Program
	x            []float64
	kzz, kzx, kd []*G.Node
	lScope       *layers.Scope
	lProg        *graph.Program
	mu, v        []float64
	probs        *G.Node
}

func newPredictor(m *models.Model, rows, nDraws int) (*predictor, error) {
	post := m.Posterior()
	p := &predictor{m: m, rows: rows, n: post.M, latent: post.Latent, c: m.C}
	p.draws = max(1, min(nDraws, predictCells/rows))
	kg := G.NewGraph()
	p.kScope = layers.NewScope(kg)
	p.x = make([]float64, rows*m.D)
	xn := graph.Input(kg, "mcmc/xstar", tensor.Shape{rows, m.D}, p.x)
	e := &graph.Chain{}
	z := e.Do(p.kScope.Raw(post.Z[0]))
	jit := e.Do(p.kScope.Node(post.JitterParam))
	var distinct []kernels.Kernel
	var outs G.Nodes
	for _, k := range m.Kernels() {
		idx := -1
		for j, d := range distinct {
			if sameKernel(d, k) {
				idx = j
			}
		}
		if idx < 0 {
			idx = len(distinct)
			distinct = append(distinct, k)
			kzz := e.Do(kernels.KZZ(k, p.kScope, z, jit))
			kzx := e.Do(k.K(p.kScope, z, xn))
			kd := e.Do(kernels.KDiag(k, p.kScope, xn, jit))
			p.kzz, p.kzx, p.kd = append(p.kzz, kzz), append(p.kzx, kzx), append(p.kd, kd)
			outs = append(outs, kzz, kzx, kd)
		}
		p.kern = append(p.kern, idx)
	}
	if e.Err != nil {
		return nil, e.Err
	}
	var err error
	if p.kProg, err = graph.Compile(kg, outs...); err != nil {
		return nil, err
	}
	lg := G.NewGraph()
	p.lScope = layers.NewScope(lg)
	R := rows * p.draws
	p.mu, p.v = make([]float64, R*p.latent), make([]float64, R*p.latent)
	mn := graph.Input(lg, "mcmc/mu", tensor.Shape{R, p.latent}, p.mu)
	vn := graph.Input(lg, "mcmc/v", tensor.Shape{R, p.latent}, p.v)
	if p.probs, err = m.Likelihood().Predict(p.lScope, mn, vn); err != nil {
		p.kProg.Close()
		return nil, fmt.Errorf("mcmc: the likelihood's predictive: %w", err)
	}
	if p.lProg, err = graph.Compile(lg, p.probs); err != nil {
		p.kProg.Close()
		return nil, err
	}
	return p, nil
}

func (p *predictor) close() {
	p.kProg.Close()
	p.lProg.Close()
}

// average adds Σ_s p(y*|x*, f^(s)) over draws (all at the parameters'
// current values) into acc (rows×C).
func (p *predictor) average(ctx context.Context, draws [][]float64, acc []float64) error {
	if err := p.kScope.Sync(); err != nil {
		return err
	}
	if err := p.kProg.Run(); err != nil {
		return err
	}
	n, rows, L := p.n, p.rows, p.latent
	// Per distinct kernel: A = chol(K_ZZ)⁻¹ K_Zx (n×rows) and the
	// conditional variances k** − colsumsq(A).
	as := make([][]float64, len(p.kzz))
	vars := make([][]float64, len(p.kzz))
	for k := range p.kzz {
		kzz, err := p.kProg.Float64s(p.kzz[k])
		if err != nil {
			return err
		}
		l := append([]float64(nil), kzz...)
		if !cholesky(l, n) {
			return fmt.Errorf("mcmc: prediction: %w", errNotPD)
		}
		kzx, err := p.kProg.Float64s(p.kzx[k])
		if err != nil {
			return err
		}
		a := append([]float64(nil), kzx...)
		blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{N: n, Stride: n, Data: l, Uplo: blas.Lower, Diag: blas.NonUnit},
			blas64.General{Rows: n, Cols: rows, Stride: rows, Data: a})
		kd, err := p.kProg.Float64s(p.kd[k])
		if err != nil {
			return err
		}
		v := append([]float64(nil), kd...)
		for i := 0; i < n; i++ {
			for r, x := range a[i*rows : (i+1)*rows] {
				v[r] -= x * x
			}
		}
		for r := range v {
			v[r] = max(v[r], 0)
		}
		as[k], vars[k] = a, v
	}
	nu := make([]float64, p.draws*n)
	mu := make([]float64, p.draws*rows)
	for start := 0; start < len(draws); start += p.draws {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := min(p.draws, len(draws)-start)
		for c := 0; c < L; c++ {
			k := p.kern[c]
			for s := 0; s < p.draws; s++ {
				d := draws[start+min(s, b-1)]
				copy(nu[s*n:(s+1)*n], d[c*n:(c+1)*n])
			}
			// μ (draws×rows) = V (draws×n) · A (n×rows).
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
				blas64.General{Rows: p.draws, Cols: n, Stride: n, Data: nu},
				blas64.General{Rows: n, Cols: rows, Stride: rows, Data: as[k]}, 0,
				blas64.General{Rows: p.draws, Cols: rows, Stride: rows, Data: mu})
			for i, v := range mu {
				p.mu[i*L+c] = v
				p.v[i*L+c] = vars[k][i%rows]
			}
		}
		if err := p.lScope.Sync(); err != nil {
			return err
		}
		if err := p.lProg.Run(); err != nil {
			return err
		}
		pr, err := p.lProg.Float64s(p.probs)
		if err != nil {
			return err
		}
		for s := 0; s < b; s++ {
			for j := range acc {
				acc[j] += pr[s*rows*p.c+j]
			}
		}
	}
	return nil
}
