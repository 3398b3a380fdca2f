package laplace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// State is what a Laplace fit keeps beyond q(f): the posterior covariances
// between latent functions, which the full family's independent q(f_c)
// cannot hold. It is kept (and the joint predictive used) only for a
// multi-latent likelihood that predicts from a joint Gaussian
// (likelihoods.JointPredictor); every other fit predicts through q(f).
type State struct {
	// Cross holds Σ_{c,c'} (n×n, row-major) for c < c', in the order
	// (0,1), (0,2), …, (1,2), …
	Cross [][]float64 `json:"cross"`
}

// keepState records the cross-class blocks of the posterior covariance
// when the likelihood can use them.
func (o *objective) keepState(cov *mat.Dense) {
	l, n := o.p.l, o.p.n
	_, joint := o.m.Likelihood().(likelihoods.JointPredictor)
	if l < 2 || !joint || o.m.Posterior().Whitened {
		o.m.SetEngineState(nil)
		return
	}
	st := &State{}
	for c := range l {
		for c2 := c + 1; c2 < l; c2++ {
			b := make([]float64, n*n)
			for i := range n {
				for j := range n {
					b[i*n+j] = cov.At(c*n+i, c2*n+j)
				}
			}
			st.Cross = append(st.Cross, b)
		}
	}
	o.m.SetEngineState(st)
}

// DecodeState implements models.Stateful.
func (Engine) DecodeState(m *models.Model, raw json.RawMessage) (any, error) {
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("laplace: engine state: %w", err)
	}
	post := m.Posterior()
	if post == nil {
		return nil, errors.New("laplace: engine state for a model without a posterior")
	}
	l, n := post.Latent, post.M
	if len(st.Cross) != l*(l-1)/2 {
		return nil, fmt.Errorf("laplace: engine state has %d cross-covariance blocks for %d latent functions (want %d)", len(st.Cross), l, l*(l-1)/2)
	}
	for k, b := range st.Cross {
		if len(b) != n*n {
			return nil, fmt.Errorf("laplace: cross-covariance block %d has %d values, want %d", k, len(b), n*n)
		}
		for _, v := range b {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("laplace: cross-covariance block %d is not finite", k)
			}
		}
	}
	return &st, nil
}

// predictRows bounds the test rows per kernel evaluation.
const predictRows = 256

// Predict implements models.Predictor: with a State (see there), the
// latent predictive at each test row is the joint Gaussian over the L
// latent functions,
//
//	μ*_c = k_cᵀ K_c⁻¹ f̂_c,
//	C*_{cc'} = δ_cc' (k**_c − k_cᵀ K_c⁻¹ k_c) + (K_c⁻¹k_c)ᵀ Σ_cc' (K_c'⁻¹k_c'),
//
// and the likelihood's PredictJoint gives the class probabilities; without
// one the model predicts through q(f) (Model.PredictPosterior).
func (Engine) Predict(ctx context.Context, m *models.Model, x []float64, n int, noise []float64) ([]float64, error) {
	st, ok := m.EngineState().(*State)
	jp, joint := m.Likelihood().(likelihoods.JointPredictor)
	post := m.Posterior()
	if !ok || st == nil || !joint || post.Whitened {
		return m.PredictPosterior(ctx, x, n, noise)
	}
	l, nt := post.Latent, post.M
	if len(st.Cross) != l*(l-1)/2 {
		return nil, fmt.Errorf("laplace: engine state has %d cross-covariance blocks for %d latent functions", len(st.Cross), l)
	}
	d := m.D
	rows := min(n, predictRows)
	if rows == 0 {
		return []float64{}, nil
	}
	// The prior at the training inputs, once.
	g := G.NewGraph()
	s := layers.NewScope(g)
	e := &graph.Chain{}
	z := e.Do(s.Raw(post.Z[0]))
	jit := e.Do(s.Node(post.JitterParam))
	xd := make([]float64, rows*d)
	xn := graph.Input(g, "laplace/xstar", tensor.Shape{rows, d}, xd)
	type parts struct{ kzz, kzx, kd *G.Node }
	ks := m.Kernels()
	uniq := map[kernels.Kernel]*parts{}
	var outs G.Nodes
	for _, k := range ks {
		if _, ok := uniq[k]; ok {
			continue
		}
		p := &parts{
			kzz: e.Do(kernels.KZZ(k, s, z, jit)),
			kzx: e.Do(k.K(s, z, xn)),
			kd:  e.Do(kernels.KDiag(k, s, xn, jit)),
		}
		uniq[k] = p
		outs = append(outs, p.kzz, p.kzx, p.kd)
	}
	if e.Err != nil {
		return nil, fmt.Errorf("laplace: building the predictive: %w", e.Err)
	}
	prog, err := graph.Compile(g, outs...)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := s.Sync(); err != nil {
		return nil, err
	}
	type fact struct {
		ch   mat.Cholesky
		kinv *mat.Dense // K⁻¹ k* for the current batch (nt×rows)
		kzx  []float64  // k* for the current batch (nt×rows)
		kd   []float64
	}
	// Σ_cc from q(f_c): S = L Lᵀ.
	sig := make([]*mat.Dense, l)
	for c := range l {
		lf := mat.NewDense(nt, nt, nil)
		raw := post.LRaw[c].Data
		for i := range nt {
			for j := 0; j <= i; j++ {
				v := raw[i*nt+j]
				if i == j {
					v = math.Exp(v)
				}
				lf.Set(i, j, v)
			}
		}
		var sc mat.Dense
		sc.Mul(lf, lf.T())
		sig[c] = &sc
	}
	cross := func(c, c2 int) *mat.Dense {
		// Index of block (c, c2), c < c2, in the order (0,1), (0,2), …
		k := c*l - c*(c+1)/2 + (c2 - c - 1)
		return mat.NewDense(nt, nt, st.Cross[k])
	}
	out := make([]float64, 0, n*m.C)
	mu := make([]float64, rows*l)
	chol := make([]float64, rows*l*l)
	var facts map[kernels.Kernel]*fact
	for start := 0; start < n; start += rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		real := min(rows, n-start)
		for r := range rows {
			i := start + r%real
			copy(xd[r*d:(r+1)*d], x[i*d:(i+1)*d])
		}
		if err := prog.Run(); err != nil {
			return nil, err
		}
		if facts == nil {
			facts = map[kernels.Kernel]*fact{}
			for k, p := range uniq {
				kzz, err := prog.Float64s(p.kzz)
				if err != nil {
					return nil, err
				}
				f := &fact{}
				if !f.ch.Factorize(mat.NewSymDense(nt, append([]float64(nil), kzz...))) {
					return nil, fmt.Errorf("laplace: the kernel matrix at the training inputs is not positive definite")
				}
				facts[k] = f
			}
		}
		for k, p := range uniq {
			f := facts[k]
			var err error
			if f.kzx, err = copyOut(prog, p.kzx); err != nil {
				return nil, err
			}
			kzx := f.kzx
			if f.kd, err = copyOut(prog, p.kd); err != nil {
				return nil, err
			}
			f.kinv = new(mat.Dense)
			if err := f.ch.SolveTo(f.kinv, mat.NewDense(nt, rows, append([]float64(nil), kzx...))); err != nil {
				return nil, err
			}
		}
		// a[c] = K_c⁻¹ k*_c (nt×rows).
		a := make([]*mat.Dense, l)
		for c := range l {
			a[c] = facts[ks[c]].kinv
			fc := make([]float64, nt)
			copy(fc, post.Mean[c].Data)
			var mv mat.VecDense
			mv.MulVec(a[c].T(), mat.NewVecDense(nt, fc))
			for r := range rows {
				mu[r*l+c] = mv.AtVec(r)
			}
		}
		cov := make([]float64, rows*l*l)
		for c := range l {
			f := facts[ks[c]]
			for c2 := c; c2 < l; c2++ {
				var sb *mat.Dense
				if c == c2 {
					sb = sig[c]
				} else {
					sb = cross(c, c2)
				}
				var t mat.Dense
				t.Mul(sb, a[c2]) // nt×rows
				for r := range rows {
					var v float64
					for i := range nt {
						v += a[c].At(i, r) * t.At(i, r)
					}
					if c == c2 {
						// k** − k*ᵀK⁻¹k*, from the kernel values.
						var q float64
						for i := range nt {
							q += f.kzx[i*rows+r] * a[c].At(i, r)
						}
						v += f.kd[r] - q
					}
					cov[r*l*l+c*l+c2] = v
					cov[r*l*l+c2*l+c] = v
				}
			}
		}
		for r := range rows {
			if err := cholSmall(cov[r*l*l:(r+1)*l*l], l, chol[r*l*l:(r+1)*l*l]); err != nil {
				return nil, fmt.Errorf("laplace: predictive covariance of test row %d: %w", start+r, err)
			}
		}
		p, err := jp.PredictJoint(mu[:real*l], chol[:real*l*l], real, l)
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

// cholSmall writes the lower Cholesky factor of the l×l matrix a into out,
// adding the smallest diagonal jitter that makes it factorise (a
// predictive covariance can be singular to round-off where the training
// data pin the latent values down).
func cholSmall(a []float64, l int, out []float64) error {
	jit := 0.0
	for range 30 {
		ok := true
		clear(out)
		for i := range l {
			for j := 0; j <= i; j++ {
				s := a[i*l+j]
				if i == j {
					s += jit
				}
				for k := range j {
					s -= out[i*l+k] * out[j*l+k]
				}
				if i == j {
					if !(s > 0) {
						ok = false
						break
					}
					out[i*l+i] = math.Sqrt(s)
				} else {
					out[i*l+j] = s / out[j*l+j]
				}
			}
			if !ok {
				break
			}
		}
		if ok {
			return nil
		}
		jit = math.Max(10*jit, 1e-12)
	}
	return errors.New("not positive semi-definite")
}
