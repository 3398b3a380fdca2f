package inputs

import (
	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/local"
)

// Observed evaluates the latent functions at the observed inputs: the
// noise-unaware model (MGP, SVGP).
type Observed struct{}

// Name implements Model.
func (*Observed) Name() string { return "observed" }

// Passthrough implements Passthrough: the observed inputs are used as given.
func (*Observed) Passthrough() bool { return true }

// Init implements Model: nothing to create.
func (*Observed) Init(int, int, *datasets.Dataset, uint64) error { return nil }

// Params implements Model.
func (*Observed) Params() []*layers.Param { return nil }

// Locals implements Model.
func (*Observed) Locals() []*local.Param { return nil }

// Noise implements Model: none.
func (*Observed) Noise() *Noise { return nil }

// ParamGroups implements Model.
func (*Observed) ParamGroups() map[string]int { return nil }

// Train implements Model.
func (*Observed) Train(b Batch, f Conditional) (mu, v, extra *G.Node, err error) {
	mu, v, err = f.Marginals(b.X())
	return mu, v, nil, err
}

// Predict implements Model.
func (*Observed) Predict(t Test, f Conditional) (mu, v *G.Node, err error) {
	return f.Marginals(t.X())
}
