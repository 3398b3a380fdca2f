// Package mlp provides fully connected networks as graph code, and the
// amortised encoder of NIMGP_NN: two networks that map a noisy input and its
// one-hot label to the mean and log-variance of the variational posterior
// q(x_i) over the noise-free input.
//
// Weights are ordinary layers.Param values, so a network's storage is shared
// by every graph a model compiles (training and prediction graphs of
// different batch sizes), exactly like kernel hyperparameters.
package mlp

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// DefaultInitStd is the standard deviation of the (untruncated) normal that
// initial weights and biases are drawn from when Config.InitStd is zero. The
// original NIMGPC_NN code uses truncated_normal(stddev=0.001), so a fresh
// network outputs ≈0 (or ≈x̃ with a residual connection).
const DefaultInitStd = 0.001

// truncation is where the initial normal is cut, in standard deviations, as
// in TensorFlow's truncated_normal.
const truncation = 2.0

// Layer is one affine map x ↦ x·W + b.
type Layer struct {
	// W is the in×out weight matrix. Row-major in×out (rather than out×in) so
	// that a batch of row vectors is mapped with a single x·W product.
	W *layers.Param
	// B is the out-vector of biases, added to every row.
	B *layers.Param
}

// MLP is a fully connected network with ReLU hidden layers and a linear output.
type MLP struct {
	// Name prefixes every parameter name.
	Name string
	// In and Out are the input and output widths.
	In, Out int
	// Layers are applied in order; ReLU follows every layer but the last.
	Layers []Layer
}

// Config describes a network.
type Config struct {
	// In and Out are the input and output widths (both positive).
	In, Out int
	// Hidden lists the widths of the hidden layers, e.g. {50}, {50, 50} or
	// {250, 250}; empty gives a single affine map.
	Hidden []int
	// InitStd is the standard deviation of the normal that every initial
	// weight and bias is drawn from, truncated at ±2·InitStd (so the sample
	// standard deviation is ≈0.88·InitStd). Zero selects DefaultInitStd.
	InitStd float64
	// OutputBias is added to every initial output bias, e.g. −10 for the
	// log-variance network with soft initialisation, which then starts with
	// q(x) variances ≈ e^−10.
	OutputBias float64
	// Seed makes the initialisation reproducible.
	Seed uint64
}

// New returns a network named name (parameter names name+"/W0", name+"/b0",
// name+"/W1", …) with weights and biases drawn from a truncated normal.
// Distinct networks in one model need distinct names, because a Scope refuses
// two parameters with one name.
func New(name string, cfg Config) (*MLP, error) {
	if name == "" {
		return nil, fmt.Errorf("mlp: empty network name (parameter names must be unique per model)")
	}
	if cfg.In <= 0 {
		return nil, fmt.Errorf("mlp %q: input width In = %d, want > 0", name, cfg.In)
	}
	if cfg.Out <= 0 {
		return nil, fmt.Errorf("mlp %q: output width Out = %d, want > 0", name, cfg.Out)
	}
	for i, h := range cfg.Hidden {
		if h <= 0 {
			return nil, fmt.Errorf("mlp %q: hidden layer %d has width %d, want > 0", name, i, h)
		}
	}
	std := cfg.InitStd
	if std == 0 {
		std = DefaultInitStd
	}
	if !(std > 0) || math.IsInf(std, 0) {
		return nil, fmt.Errorf("mlp %q: InitStd = %v, want a finite value ≥ 0 (0 selects %g)", name, cfg.InitStd, DefaultInitStd)
	}
	if math.IsNaN(cfg.OutputBias) || math.IsInf(cfg.OutputBias, 0) {
		return nil, fmt.Errorf("mlp %q: OutputBias = %v, want a finite value", name, cfg.OutputBias)
	}

	// One stream for the whole network, drawn in parameter order, so that a
	// given Config always yields the same weights.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d6c70)) // stream "mlp"
	widths := append(append([]int{cfg.In}, cfg.Hidden...), cfg.Out)
	m := &MLP{Name: name, In: cfg.In, Out: cfg.Out}
	for l := 0; l+1 < len(widths); l++ {
		in, out := widths[l], widths[l+1]
		w := layers.NewParam(fmt.Sprintf("%s/W%d", name, l), tensor.Shape{in, out}, 0, layers.Identity)
		b := layers.NewParam(fmt.Sprintf("%s/b%d", name, l), tensor.Shape{out}, 0, layers.Identity)
		fillTruncNormal(rng, w.Data, std, 0)
		off := 0.0
		if l+2 == len(widths) {
			off = cfg.OutputBias
		}
		fillTruncNormal(rng, b.Data, std, off)
		m.Layers = append(m.Layers, Layer{W: w, B: b})
	}
	return m, nil
}

// fillTruncNormal sets dst to mean + std·z with z standard normal, redrawing
// z until |z| ≤ 2 (TensorFlow's truncated_normal).
func fillTruncNormal(rng *rand.Rand, dst []float64, std, mean float64) {
	for i := range dst {
		z := rng.NormFloat64()
		for math.Abs(z) > truncation {
			z = rng.NormFloat64()
		}
		dst[i] = mean + std*z
	}
}

// Params returns every weight and bias, in layer order (W0, b0, W1, b1, …).
func (m *MLP) Params() []*layers.Param {
	ps := make([]*layers.Param, 0, 2*len(m.Layers))
	for _, l := range m.Layers {
		ps = append(ps, l.W, l.B)
	}
	return ps
}

// Apply maps the rows of x (n×In) through the network and returns the n×Out
// output.
func (m *MLP) Apply(s *layers.Scope, x *G.Node) (*G.Node, error) {
	return m.ApplyParts(s, x)
}

// ApplyParts applies the network to the column-wise concatenation of parts
// (each n×d_k, with Σ d_k = In) without ever building that concatenation:
// the first layer is one graph.Affine over the parts, which reads the row
// blocks of W0 in place. This keeps W0 a single In×Out parameter (the
// original code's layout for concat(x̃, one_hot(y))) while the graph
// contains no Concat of inputs, whose stock gradient goes through
// gorgonia.Slice and is wrong at second order.
func (m *MLP) ApplyParts(s *layers.Scope, parts ...*G.Node) (*G.Node, error) {
	return m.ApplyResidual(s, nil, parts...)
}

// ApplyResidual is ApplyParts with r (n×Out, nil for none) added to the
// output inside the last layer's op.
func (m *MLP) ApplyResidual(s *layers.Scope, r *G.Node, parts ...*G.Node) (*G.Node, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("mlp %q: no input", m.Name)
	}
	n, width := -1, 0
	for k, x := range parts {
		xs := x.Shape()
		if len(xs) != 2 {
			return nil, fmt.Errorf("mlp %q: input part %d has shape %v, want a matrix", m.Name, k, xs)
		}
		if n >= 0 && xs[0] != n {
			return nil, fmt.Errorf("mlp %q: input part %d has %d rows, part 0 has %d", m.Name, k, xs[0], n)
		}
		n = xs[0]
		width += xs[1]
	}
	if width != m.In {
		return nil, fmt.Errorf("mlp %q: inputs have %d columns in all, the network expects %d", m.Name, width, m.In)
	}
	if r != nil {
		if rs := r.Shape(); len(rs) != 2 || rs[0] != n || rs[1] != m.Out {
			return nil, fmt.Errorf("mlp %q: residual has shape %v, want (%d, %d)", m.Name, rs, n, m.Out)
		}
	}

	in := G.Nodes(parts)
	for l, layer := range m.Layers {
		w, err := s.Node(layer.W)
		if err != nil {
			return nil, err
		}
		b, err := s.Node(layer.B)
		if err != nil {
			return nil, err
		}
		last := l+1 == len(m.Layers)
		var res *G.Node
		if last {
			res = r
		}
		z, err := graph.Affine(in, w, b, res)
		if err != nil {
			return nil, fmt.Errorf("mlp %q layer %d: %w", m.Name, l, err)
		}
		if !last {
			if z, err = G.Rectify(z); err != nil {
				return nil, err
			}
		}
		in = G.Nodes{z}
	}
	return in[0], nil
}
