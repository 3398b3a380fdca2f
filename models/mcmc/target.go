package mcmc

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// errNotPD marks a prior covariance that does not factorise at the
// current hyper-parameters: the slice sampler treats it as zero density.
var errNotPD = errors.New("mcmc: prior covariance not positive definite")

// target is one chain's view of the posterior: the prior covariances'
// Cholesky factors at the current hyper-parameters (cached until they
// change) and log p(y | f) evaluated by a compiled program of the
// likelihood's graph code over a fixed-shape input, so that any likelihood
// (a user's too) works and no graph is built per sample.
type target struct {
	n, latent int
	// kern[c] is the index into chol of latent function c's factor:
	// latent functions sharing a kernel share K and its factor.
	kern []int
	// Kernel graph: K(X, X) + (σ₀² + jitter)I per distinct kernel.
	kScope *layers.Scope
	kProg  *graph.Program
	kNodes []*G.Node
	chol   [][]float64 // n×n lower factors, row-major
	// Likelihood graph.
	lScope *layers.Scope
	lProg  *graph.Program
	fData  []float64 // n×L feed of f, row-major
	sum    *G.Node
	// mu serialises every run that reads parameters which another chain
	// may be writing (Hyper "sample"); nil when they are held fixed.
	mu *sync.Mutex
	// hyper are the parameters a sampled-θ chain moves, theta its own
	// values of them, written into the shared parameters under mu before
	// every run (chains take turns; each keeps its own θ).
	hyper []*layers.Param
	theta []float64
	// ref is the Gaussian the ellipses are drawn around (Proposal "fit"),
	// nil for the prior.
	ref *gaussRef
	// evals counts likelihood evaluations.
	evals int
}

// gaussRef is a Gaussian N(a_c, B_c B_cᵀ) per latent function: the
// reference of generalised elliptical slice sampling, f_c = a_c + B_c ν_c.
type gaussRef struct {
	a  []float64   // n×L row-major
	b  [][]float64 // per latent function, n×n lower, row-major
	wa []float64   // chol(K_c)⁻¹ a_c at c·n
}

// newTarget compiles the chain's graphs for model m (initialised, the
// "full" family: Z = X) and the targets y (the likelihood's encoding);
// with y nil, the prior's alone.
func newTarget(m *models.Model, y []float64, width int, mu *sync.Mutex) (*target, error) {
	post := m.Posterior()
	ks := m.Kernels()
	t := &target{n: post.M, latent: post.Latent, mu: mu}
	// Prior graph.
	kg := G.NewGraph()
	t.kScope = layers.NewScope(kg)
	e := &graph.Chain{}
	z := e.Do(t.kScope.Raw(post.Z[0]))
	jit := e.Do(t.kScope.Node(post.JitterParam))
	var distinct []kernels.Kernel
	for c := range ks {
		idx := -1
		for j, k := range distinct {
			if sameKernel(k, ks[c]) {
				idx = j
			}
		}
		if idx < 0 {
			idx = len(distinct)
			distinct = append(distinct, ks[c])
			t.kNodes = append(t.kNodes, e.Do(kernels.KZZ(ks[c], t.kScope, z, jit)))
		}
		t.kern = append(t.kern, idx)
	}
	if e.Err != nil {
		return nil, fmt.Errorf("mcmc: prior covariance: %w", e.Err)
	}
	var err error
	if t.kProg, err = graph.Compile(kg, t.kNodes...); err != nil {
		return nil, err
	}
	t.kProg.Sequential()
	t.chol = make([][]float64, len(distinct))
	if y == nil {
		return t, nil
	}
	// Likelihood graph.
	lg := G.NewGraph()
	t.lScope = layers.NewScope(lg)
	t.fData = make([]float64, t.n*t.latent)
	f := graph.Input(lg, "mcmc/f", tensor.Shape{t.n, t.latent}, t.fData)
	yn := graph.Input(lg, "mcmc/y", tensor.Shape{t.n, width}, append([]float64(nil), y...))
	ll, err := likelihoods.LogLik(m.Likelihood(), t.lScope, f, yn)
	if err != nil {
		return nil, fmt.Errorf("mcmc: the likelihood's log p(y|f): %w", err)
	}
	if t.sum, err = G.Sum(ll); err != nil {
		return nil, err
	}
	if t.lProg, err = graph.Compile(lg, t.sum); err != nil {
		return nil, err
	}
	t.lProg.Sequential()
	return t, nil
}

func (t *target) close() {
	t.kProg.Close()
	if t.lProg != nil {
		t.lProg.Close()
	}
}

// sameKernel reports whether two kernels are one value (the model repeats
// a shared kernel), without comparing uncomparable kernel types.
func sameKernel(a, b kernels.Kernel) bool {
	pa, pb := a.Params(), b.Params()
	if len(pa) == 0 || len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return false
		}
	}
	return true
}

func (t *target) lock() func() {
	if t.mu == nil {
		return func() {}
	}
	t.mu.Lock()
	setTheta(t.hyper, t.theta)
	return t.mu.Unlock
}

// factor evaluates the prior covariances at the parameters' current values
// and factorises them (errNotPD when one is not positive definite).
func (t *target) factor() error {
	unlock := t.lock()
	err := t.kScope.Sync()
	if err == nil {
		err = t.kProg.Run()
	}
	ks := make([][]float64, len(t.kNodes))
	for i, k := range t.kNodes {
		if err != nil {
			break
		}
		var v []float64
		if v, err = t.kProg.Float64s(k); err == nil {
			ks[i] = append(t.chol[i][:0], v...)
		}
	}
	unlock()
	if err != nil {
		return err
	}
	for i, k := range ks {
		if !cholesky(k, t.n) {
			return errNotPD
		}
		t.chol[i] = k
	}
	return nil
}

// cholesky overwrites the row-major symmetric a with its lower factor
// (zeroing the strict upper part); false when it is not positive definite.
func cholesky(a []float64, n int) bool {
	for _, v := range a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	s := blas64.Symmetric{N: n, Stride: n, Data: a, Uplo: blas.Lower}
	if _, ok := lapack64.Potrf(s); !ok {
		return false
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			a[i*n+j] = 0
		}
	}
	return true
}

// latents sets f = L ν per latent function (ν holds latent c's n values
// at ν[c·n:]) into the row-major n×L out: L = chol(K_c), or with a
// Gaussian reference f = a + B ν.
func (t *target) latents(nu, out []float64, tmp []float64) {
	t.spread(nu, out, tmp)
	if t.ref != nil {
		for i, a := range t.ref.a {
			out[i] += a
		}
	}
}

// spread sets out = L ν (or B ν with a reference), without the shift a.
func (t *target) spread(nu, out []float64, tmp []float64) {
	n := t.n
	for c := 0; c < t.latent; c++ {
		l := t.chol[t.kern[c]]
		if t.ref != nil {
			l = t.ref.b[c]
		}
		copy(tmp, nu[c*n:(c+1)*n])
		blas64.Trmv(blas.NoTrans, blas64.Triangular{N: n, Stride: n, Data: l, Uplo: blas.Lower, Diag: blas.NonUnit},
			blas64.Vector{N: n, Inc: 1, Data: tmp})
		for i := 0; i < n; i++ {
			out[i*t.latent+c] = tmp[i]
		}
	}
}

// whiten sets out (latent c at c·n) to chol(K_c)⁻¹ x_c for the row-major
// n×L x.
func (t *target) whiten(x, out []float64) {
	n := t.n
	for c := 0; c < t.latent; c++ {
		o := out[c*n : (c+1)*n]
		for i := range o {
			o[i] = x[i*t.latent+c]
		}
		blas64.Trsv(blas.NoTrans, blas64.Triangular{N: n, Stride: n, Data: t.chol[t.kern[c]], Uplo: blas.Lower, Diag: blas.NonUnit},
			blas64.Vector{N: n, Inc: 1, Data: o})
	}
}

// logLik returns log p(y | f) for the row-major n×L f; a non-finite value
// is −Inf (zero likelihood), which the slice samplers never accept.
func (t *target) logLik(f []float64) (float64, error) {
	t.evals++
	copy(t.fData, f)
	unlock := t.lock()
	err := t.lScope.Sync()
	if err == nil {
		err = t.lProg.Run()
	}
	var v float64
	if err == nil {
		v, err = t.lProg.Scalar(t.sum)
	}
	unlock()
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 1) {
		return math.Inf(-1), nil
	}
	return v, nil
}

// setTheta copies the unconstrained values theta into the parameters ps.
func setTheta(ps []*layers.Param, theta []float64) {
	for _, p := range ps {
		theta = theta[copy(p.Data, theta):]
	}
}

// getTheta returns the parameters' unconstrained values, concatenated.
func getTheta(ps []*layers.Param) []float64 {
	var out []float64
	for _, p := range ps {
		out = append(out, p.Data...)
	}
	return out
}
