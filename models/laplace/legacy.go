package laplace

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// legacyHTPC is the gpc-htpc file (version 1) that the retired package
// models/htpc wrote: the training rows as given (that package did not
// standardise), the hyper-parameters (log ℓ of exp(−‖x−x'‖²/(2ℓ²)), log σ,
// log b_k) and the Laplace mode in whitened coordinates.
type legacyHTPC struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	N       int       `json:"n"`
	D       int       `json:"d"`
	Classes int       `json:"classes"`
	X       []float64 `json:"x"`
	Y       []int     `json:"y"`
	Hyper   struct {
		LogEll   float64   `json:"log_ell"`
		LogSigma float64   `json:"log_sigma"`
		LogB     []float64 `json:"log_b"`
	} `json:"hyper"`
	Mode           []float64 `json:"whitened_mode"`
	Jitter         float64   `json:"jitter"`
	NewtonTol      float64   `json:"newton_tol"`
	MaxNewton      int       `json:"max_newton"`
	PredictSamples int       `json:"predict_samples"`
	Seed           uint64    `json:"seed"`
	LearnAmplitude bool      `json:"learn_amplitude"`
}

func init() {
	if err := models.RegisterLegacyFormat("gpc-htpc", loadLegacyHTPC); err != nil {
		panic(err)
	}
}

// loadLegacyHTPC converts a gpc-htpc file to the htpc preset under this
// engine, its inputs used as given: γ = ℓ² becomes se-gamma's, b_k the
// likelihood's, the jitter the posterior's. The file holds the mode but
// not the posterior covariances the engine keeps, so Newton runs from the
// stored mode at the stored hyper-parameters (no hyper-parameter training),
// confirming it, as the old Load did, and the Laplace approximation there
// becomes q(f) and the engine's cross-class state: the converted model
// predicts what the old one did, by the same 4096 antithetic draws. A file
// the preset cannot express is refused: a kernel amplitude other than 1,
// or other prediction draws or seed than the htpc likelihood's.
func loadLegacyHTPC(b []byte, path string) (*models.Model, error) {
	var f legacyHTPC
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("laplace: reading %s (gpc-htpc): %w", path, err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("laplace: %s (a gpc-htpc model of the retired models/htpc): %s", path, fmt.Sprintf(format, a...))
	}
	l := f.Classes
	switch {
	case f.Version != 1:
		return nil, fail("format version %d; this gpc converts version 1", f.Version)
	case f.N < 1 || f.D < 1 || l < 2 || f.N*l > maxLatent:
		return nil, fail("sizes n=%d d=%d classes=%d", f.N, f.D, l)
	case len(f.X) != f.N*f.D || len(f.Y) != f.N || len(f.Mode) != f.N*l || len(f.Hyper.LogB) != l:
		return nil, fail("array lengths do not match n=%d d=%d classes=%d", f.N, f.D, l)
	case !(f.Jitter > 0) || !(f.NewtonTol > 0) || f.MaxNewton < 1:
		return nil, fail("jitter %g, Newton tolerance %g, %d Newton iterations", f.Jitter, f.NewtonTol, f.MaxNewton)
	case f.LearnAmplitude || f.Hyper.LogSigma != 0:
		return nil, fail("a kernel amplitude σ = %g, which the htpc preset holds at 1; retrain it", math.Exp(f.Hyper.LogSigma))
	}
	lik := likelihoods.NewHeavyTailed()
	if f.PredictSamples != lik.Draws || f.Seed != lik.Seed {
		return nil, fail("%d prediction draws with seed %d; the htpc likelihood draws %d with seed %d", f.PredictSamples, f.Seed, lik.Draws, lik.Seed)
	}
	for _, v := range append(append(append([]float64{f.Hyper.LogEll}, f.Hyper.LogB...), f.X...), f.Mode...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fail("a value is %v", v)
		}
	}
	o := models.Options{Model: "htpc"}
	o.Posterior.Jitter = f.Jitter
	m, err := models.Restore(o, f.D, l, f.N, f.N)
	if err != nil {
		return nil, fail("%v", err)
	}
	iso, ok := m.Kernels()[0].(*kernels.IsoSE)
	ht, ok2 := m.Likelihood().(*likelihoods.HeavyTailed)
	if !ok || !ok2 || ht.B == nil || len(ht.B.Data) != l {
		return nil, fail("the htpc preset is not the se-gamma kernel and the htpc likelihood the file needs")
	}
	iso.Lengthscale.Data[0] = 2 * f.Hyper.LogEll // γ = ℓ²
	copy(ht.B.Data, f.Hyper.LogB)
	copy(m.Posterior().Z[0].Data, f.X)
	train := &datasets.Dataset{X: f.X, Y: f.Y, N: f.N, D: f.D, C: l}
	if err := train.Validate(); err != nil {
		return nil, fail("%v", err)
	}
	set := Settings{NewtonTol: f.NewtonTol, MaxNewton: f.MaxNewton}.withDefaults()
	// The old fit accepted this point; the fold guard is for the search.
	set.MinCurvature, set.MaxRaw = -1, math.Inf(1)
	obj, err := newObjective(context.Background(), m, train, set)
	if err != nil {
		return nil, fail("%v", err)
	}
	defer obj.close()
	obj.warm = f.Mode
	md, _, err := obj.evaluate()
	if err != nil {
		return nil, fail("the Laplace approximation at the stored mode: %v", err)
	}
	if err := obj.install(md); err != nil {
		return nil, fail("%v", err)
	}
	return m, nil
}
