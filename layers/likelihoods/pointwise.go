package likelihoods

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/layers"
)

// Pointwise is implemented by likelihoods that give log p(y_i | f_i) at
// given latent values as graph code. Engines that work on the latent values
// themselves rather than on Gaussian marginals (Laplace's Newton steps,
// MCMC's elliptical slice sampling) need it; its gradient and Hessian come
// from the graph's automatic differentiation.
type Pointwise interface {
	// LogLik returns the n-vector log p(y_i | f_i) for the n×L latent
	// values f and the targets y (Targets' encoding).
	LogLik(s *layers.Scope, f, y *G.Node) (*G.Node, error)
}

// LogLik returns the n-vector log p(y_i | f_i) of any likelihood: its own
// Pointwise.LogLik when it has one, else its expected log-likelihood under
// marginals of zero variance, which quadrature (Expect1D) and Monte Carlo
// with draws scaled by √v reduce to log p(y | f) exactly. A user's
// likelihood therefore runs under those engines with no extra code; one
// whose expectation does not reduce at v = 0 implements Pointwise, as the
// built-in step likelihoods do (robust-max and GPC-I divide by the
// variance; for GPC-II/III the expectation is E_ε[log p(y|f+ε)], not
// log p(y|f)), and the Bernoulli links, for speed (one evaluation per row
// instead of one per quadrature node).
func LogLik(l Likelihood, s *layers.Scope, f, y *G.Node) (*G.Node, error) {
	if p, ok := l.(Pointwise); ok {
		return p.LogLik(s, f, y)
	}
	if f.Shape().Dims() != 2 {
		return nil, fmt.Errorf("likelihoods: LogLik wants an n×L matrix of latent values, got shape %v", f.Shape())
	}
	n, L := f.Shape()[0], f.Shape()[1]
	// Zeros of one shape are one value: nodes merged by name are the same.
	zero := constant(s.G, fmt.Sprintf("loglik-zero-variance-%dx%d", n, L), tensor.Shape{n, L}, make([]float64, n*L))
	return l.ExpectedLogLik(s, f, zero, y)
}
