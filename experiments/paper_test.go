package experiments_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/experiments"
)

// blobs is a paper written outside the package: one family that draws two
// Gaussian blobs per split and trains the method's composition through
// the runner's own TrainAndScore, reading one optional field (min_steps).
func init() {
	err := experiments.RegisterPaper(experiments.Paper{
		Name: "outside",
		Families: map[string]experiments.Family{
			"test_blobs": {
				Run:   blobsRun,
				Reads: []string{"training.min_steps"},
				Validate: func(s *experiments.Spec) error {
					if s.Protocol.NTrain < 2 {
						return fmt.Errorf("test_blobs needs protocol.n_train ≥ 2")
					}
					return nil
				},
			},
		},
	})
	if err != nil {
		panic(err)
	}
}

func blobs(n int, rng *rand.Rand) *datasets.Dataset {
	ds := &datasets.Dataset{Name: "blobs", N: n, D: 2, C: 2, X: make([]float64, 2*n), Y: make([]int, n)}
	for i := range n {
		ds.Y[i] = i % 2
		for j := range 2 {
			ds.X[2*i+j] = rng.NormFloat64() + 2*float64(ds.Y[i])
		}
	}
	return ds
}

func blobsRun(ctx context.Context, e *experiments.Env, r experiments.Run) (*experiments.Result, error) {
	rng := rand.New(rand.NewPCG(uint64(r.Split), 1))
	p := e.Spec().Protocol
	return e.TrainAndScore(ctx, r, blobs(p.NTrain, rng), blobs(p.NTest, rng))
}

const blobsSpec = `name: blobs
title: "A paper from outside the package"
family: test_blobs
seed: 1
datasets: [blobs]
protocol: {splits: 2, n_train: 60, n_test: 60}
training: {epochs: 20, batch: 60, lr: 0.05, inducing: 8, kernel: se}
settings:
  - {name: plain}
methods:
  - {name: SVGP, model: svgp}
tables:
  - {id: T, title: "Test error", metric: error}
`

func TestPaperFromOutside(t *testing.T) {
	spec, err := experiments.ParseSpec("blobs.yaml", []byte(blobsSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := experiments.Execute(context.Background(), spec, dir, experiments.RunConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 2 || sum.Failed != 0 {
		t.Fatalf("summary %+v; want 2 runs done", sum)
	}
	if err := experiments.Report(dir, ""); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "SVGP") {
		t.Errorf("report: %v, %q", err, md)
	}
	// The family's own rules and its optional fields are the runner's.
	bad := strings.Replace(blobsSpec, "n_train: 60", "n_train: 1", 1)
	if _, err := experiments.ParseSpec("blobs.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "n_train ≥ 2") {
		t.Errorf("family validation: %v", err)
	}
	bad = strings.Replace(blobsSpec, "inducing: 8,", "inducing: 8, step_training: scratch,", 1)
	if _, err := experiments.ParseSpec("blobs.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "step_training does not apply to the test_blobs family") {
		t.Errorf("unread field: %v", err)
	}
}
