package inputs

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
)

// NoiseConfig says how the input-noise variances are known.
type NoiseConfig struct {
	// Learn learns one log-variance per dimension shared by all points,
	// starting at Init. Otherwise the variances come per point from the
	// training data set (Dataset.Noise) or, if it has none, Var everywhere.
	Learn bool
	Init  float64
	Var   float64
}

// Defaults sets the initial learned variance to 0.1 when unset.
func (c NoiseConfig) Defaults() NoiseConfig {
	if c.Init == 0 {
		c.Init = 0.1
	}
	return c
}

// Validate reports a non-positive initial variance or a negative given one.
func (c NoiseConfig) Validate() error {
	if !(c.Init > 0) || math.IsInf(c.Init, 0) || !(c.Var >= 0) || math.IsInf(c.Var, 0) {
		return fmt.Errorf("inputs: noise variances must be positive and finite (init %g, given %g)", c.Init, c.Var)
	}
	return nil
}

// Noise is the input-noise part of a noise-aware input model.
type Noise struct {
	NoiseConfig
	// Positive requires given variances > 0 (a model with log V and 1/V
	// terms); otherwise ≥ 0 is accepted.
	Positive bool
	owner    string
	d        int
	logVar   *layers.Param
}

func newNoise(c NoiseConfig, owner string, positive bool) *Noise {
	return &Noise{NoiseConfig: c, owner: owner, Positive: positive}
}

// init creates the learned variances, or checks the given ones of train.
func (n *Noise) init(d int, train *datasets.Dataset) error {
	n.d = d
	n.logVar = nil
	if n.Learn {
		n.logVar = layers.NewParam("noise/logvar", tensor.Shape{d}, n.Init, layers.Exp)
		return nil
	}
	if train != nil {
		return n.CheckGiven(train)
	}
	return nil
}

// CheckGiven rejects given variances the model cannot use.
func (n *Noise) CheckGiven(ds *datasets.Dataset) error {
	if n.Learn {
		return nil
	}
	row := make([]float64, ds.D)
	for i := 0; i < ds.N; i++ {
		n.fill(ds, i, row)
		for j, x := range row {
			bad := math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (x == 0 && n.Positive)
			if bad {
				want := "non-negative"
				if n.Positive {
					want = "positive"
				}
				return fmt.Errorf("inputs: %s needs %s input-noise variances, got %v at row %d, column %d (give them with the data, as a value, or learn them)", n.owner, want, x, i, j+1)
			}
		}
	}
	return nil
}

// fill writes training row i's given variances.
func (n *Noise) fill(ds *datasets.Dataset, i int, dst []float64) {
	if ds.Noise != nil {
		copy(dst, ds.Noise[i*ds.D:(i+1)*ds.D])
		return
	}
	for k := range dst {
		dst[k] = n.Var
	}
}

// Params returns the learned log-variance (nil when given).
func (n *Noise) Params() []*layers.Param {
	if n.logVar == nil {
		return nil
	}
	return []*layers.Param{n.logVar}
}

// Learned returns the learned variances, nil when they are given.
func (n *Noise) Learned() []float64 {
	if n.logVar == nil {
		return nil
	}
	v := make([]float64, n.d)
	for k := range v {
		v[k] = n.logVar.Value(k)
	}
	return v
}

// At is the variance of test row i, dimension k: given (a row-major n×D
// slice), else learned, else the configured value.
func (n *Noise) At(given []float64, i, k int) float64 {
	switch {
	case given != nil:
		return given[i*n.d+k]
	case n.logVar != nil:
		return n.logVar.Value(k)
	}
	return n.Var
}

// args returns V and log V for the batch: the given variances as a B×D
// input and their logarithm (when withLog), or the learned ones and their
// raw parameter as D-vectors, which the fused elementwise ops treat as rows
// shared by the batch (no broadcast node, no logarithm per element).
func (n *Noise) args(b Batch, withLog bool) (v, logV *G.Node, err error) {
	if n.logVar == nil {
		v = b.Rows("noise", n.d, n.fill)
		if withLog {
			logV, err = G.Log(v)
		}
		return v, logV, err
	}
	if v, err = b.Scope().Node(n.logVar); err != nil {
		return nil, nil, err
	}
	logV, err = b.Scope().Raw(n.logVar)
	return v, logV, err
}

// precisionArgs returns 1/V and log V for the batch, the form the Gaussian
// input terms take them in so that no element needs a division: the given
// variances' reciprocals and logarithms as B×D inputs, filled with the
// batch, or from the learned raw parameter ℓ_V the D-vectors e^(−ℓ_V) and
// ℓ_V itself.
func (n *Noise) precisionArgs(b Batch) (w, logV *G.Node, err error) {
	if n.logVar == nil {
		w = b.Rows("noise precision", n.d, func(ds *datasets.Dataset, i int, dst []float64) {
			n.fill(ds, i, dst)
			for k, v := range dst {
				dst[k] = 1 / v
			}
		})
		logV = b.Rows("noise log", n.d, func(ds *datasets.Dataset, i int, dst []float64) {
			n.fill(ds, i, dst)
			for k, v := range dst {
				dst[k] = math.Log(v)
			}
		})
		return w, logV, nil
	}
	if logV, err = b.Scope().Raw(n.logVar); err != nil {
		return nil, nil, err
	}
	neg, err := G.Neg(logV)
	if err != nil {
		return nil, nil, err
	}
	w, err = G.Exp(neg)
	return w, logV, err
}
