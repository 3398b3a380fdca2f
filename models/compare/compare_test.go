package compare

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

func blobs(n int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 3))
	ds := &datasets.Dataset{Name: "blobs", N: n, D: 1, C: 2, X: make([]float64, n), Y: make([]int, n)}
	for i := range ds.Y {
		ds.Y[i] = i % 2
		ds.X[i] = 2*float64(ds.Y[i]) - 1 + rng.NormFloat64()
	}
	return ds
}

// The reference's own row has zero differences, another engine's are the
// mean and largest |Δp| over the test rows; an unknown engine fails the
// run unless SkipUnknown, when its row says it is not registered.
func TestRunAgainstReference(t *testing.T) {
	base := models.Options{Likelihood: models.LikelihoodOptions{Name: "probit"}, Posterior: models.PosteriorOptions{Family: "full"},
		Train: models.TrainOptions{Epochs: 20, Optimizer: "lbfgs", Seed: 1}}
	cfg := Config{Base: base, Engines: []string{"svi", "ep", "nosuch"}, Reference: "ep", ReferenceSeeds: 2, Train: blobs(30, 1), Test: blobs(20, 2)}
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("unknown engine: %v", err)
	}
	cfg.SkipUnknown = true
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Row("nosuch"); r == nil || !strings.Contains(r.Skipped, "not registered") {
		t.Errorf("unknown engine's row: %+v", r)
	}
	ref, svi := rep.ReferenceRow(), rep.Row("svi")
	if ref == nil || *ref.MeanAbsDP != 0 || *ref.LatentMeanRatio != 1 {
		t.Fatalf("reference row: %+v", ref)
	}
	var sum, mx float64
	for i := range svi.Probs {
		d := math.Abs(svi.Probs[i] - ref.Probs[i])
		sum += d
		mx = math.Max(mx, d)
	}
	if math.Abs(*svi.MeanAbsDP-sum/float64(len(svi.Probs))) > 1e-15 || *svi.MaxAbsDP != mx {
		t.Errorf("svi's |Δp|: %v %v, want %v %v", *svi.MeanAbsDP, *svi.MaxAbsDP, sum/float64(len(svi.Probs)), mx)
	}
	if svi.Evidence == nil || svi.EvidenceKind != "ELBO" || ref.Evidence == nil || !(*svi.Evidence <= *ref.Evidence+5) {
		t.Errorf("evidence: svi %v %q, ep %v", svi.Evidence, svi.EvidenceKind, ref.Evidence)
	}
	// EP depends on the seed only through its initial length-scale: its
	// repeat's floor is nil but for round-off.
	if mean, _, ok := rep.Floor(); !ok || mean > 1e-6 {
		t.Errorf("floor of a deterministic reference: %v %v", mean, ok)
	}
}
