package mlp

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/layers"
)

// DefaultResidualLogVarBias is the initial log-variance bias of an encoder
// with Residual set: the original "soft_ini" starts q(x_i) at x̃_i with
// variance e^−10 ≈ 4.5e-5, i.e. it initially trusts the observed input.
const DefaultResidualLogVarBias = -10.0

// EncoderConfig describes the amortised posterior q(x_i) of NIMGP_NN.
type EncoderConfig struct {
	// D is the input dimension and C the number of classes (both positive).
	D, C int
	// Hidden lists the hidden widths shared by both networks, e.g. {50}.
	Hidden []int
	// Residual (the original "soft_ini") adds x̃ to the mean network's output,
	// so that a freshly initialised encoder returns mean ≈ x̃ instead of ≈0.
	Residual bool
	// LogVarBias is the initial value of every output bias of the
	// log-variance network. Zero selects the default: −10 with Residual
	// (DefaultResidualLogVarBias), 0 otherwise (initial variances ≈1).
	LogVarBias float64
	// InitStd is as in Config (zero selects DefaultInitStd).
	InitStd float64
	// Seed makes the initialisation of both networks reproducible.
	Seed uint64
}

// Encoder maps a noisy input x̃_i and its one-hot label y_i to the mean and
// log-variance of q(x_i) with two separate networks, as the original code
// does. Both networks see concat(x̃_i, one_hot(y_i)) (width D+C); that
// concatenation is never built (see MLP.ApplyParts).
type Encoder struct {
	// Mean and LogVar are the two networks, each (D+C) → D.
	Mean, LogVar *MLP
	// Residual adds x̃ to Mean's output.
	Residual bool
	// D and C are the input dimension and the number of classes.
	D, C int
}

// NewEncoder returns an encoder whose networks are named name+"/mean" and
// name+"/logvar" (parameters name+"/mean/W0", …).
func NewEncoder(name string, cfg EncoderConfig) (*Encoder, error) {
	if cfg.D <= 0 {
		return nil, fmt.Errorf("mlp: encoder %q: input dimension D = %d, want > 0", name, cfg.D)
	}
	if cfg.C <= 0 {
		return nil, fmt.Errorf("mlp: encoder %q: number of classes C = %d, want > 0", name, cfg.C)
	}
	bias := cfg.LogVarBias
	if bias == 0 && cfg.Residual {
		bias = DefaultResidualLogVarBias
	}
	if math.IsNaN(bias) || math.IsInf(bias, 0) {
		return nil, fmt.Errorf("mlp: encoder %q: LogVarBias = %v, want a finite value", name, cfg.LogVarBias)
	}
	// Two child seeds from one stream: the networks must not share weights,
	// and encoders with neighbouring seeds must not share a network.
	seeds := rand.New(rand.NewPCG(cfg.Seed, 0x656e63)) // stream "enc"
	base := Config{In: cfg.D + cfg.C, Out: cfg.D, Hidden: cfg.Hidden, InitStd: cfg.InitStd}
	mc, lc := base, base
	mc.Seed, lc.Seed = seeds.Uint64(), seeds.Uint64()
	lc.OutputBias = bias
	mean, err := New(name+"/mean", mc)
	if err != nil {
		return nil, err
	}
	logVar, err := New(name+"/logvar", lc)
	if err != nil {
		return nil, err
	}
	return &Encoder{Mean: mean, LogVar: logVar, Residual: cfg.Residual, D: cfg.D, C: cfg.C}, nil
}

// Params returns the mean network's parameters, then the log-variance
// network's.
func (e *Encoder) Params() []*layers.Param {
	return append(e.Mean.Params(), e.LogVar.Params()...)
}

// Apply takes x̃ (n×D) and one-hot labels (n×C) and returns the mean and the
// log-variance (n×D each) of q(x_i).
func (e *Encoder) Apply(s *layers.Scope, xTilde, yOneHot *G.Node) (mean, logVar *G.Node, err error) {
	xs, ys := xTilde.Shape(), yOneHot.Shape()
	if len(xs) != 2 || xs[1] != e.D {
		return nil, nil, fmt.Errorf("mlp: encoder: x̃ has shape %v, want n×%d", xs, e.D)
	}
	if len(ys) != 2 || ys[1] != e.C || ys[0] != xs[0] {
		return nil, nil, fmt.Errorf("mlp: encoder: labels have shape %v, want %d×%d (one-hot)", ys, xs[0], e.C)
	}
	var residual *G.Node
	if e.Residual {
		residual = xTilde
	}
	if mean, err = e.Mean.ApplyResidual(s, residual, xTilde, yOneHot); err != nil {
		return nil, nil, err
	}
	if logVar, err = e.LogVar.ApplyParts(s, xTilde, yOneHot); err != nil {
		return nil, nil, err
	}
	return mean, logVar, nil
}
