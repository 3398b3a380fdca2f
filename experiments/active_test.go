package experiments

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const activeSpec = `name: al
title: al
source: test
family: active
seed: 1
datasets: [waveform]
protocol: {splits: 1, initial_train: 30, test_size: 20, pool_size: 10, steps: 2}
training: {epochs: 2, step_epochs: 1, batch: 20, lr: 0.01, inducing: 5, test_samples: 3}
settings:
  - {name: e, noise: 0.1, learn_noise: true, selection: entropy}
  - {name: g, noise: 0.1, selection: random}
methods:
  - {name: MGP, kind: mgp}
  - {name: NIMGP, kind: nimgp}
  - {name: NIMGP_NN, kind: nimgp-nn}
  - {name: NIMGP_FO, kind: nimgp-fo}
`

// fakeWaveform writes a random data set of Waveform's shape (1000×21, 3
// classes) where LoadUCI looks for it.
func fakeWaveform(t *testing.T) string {
	dir := t.TempDir()
	base := filepath.Join(dir, "gpinputnoise", "uci", "waveform")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var x, y strings.Builder
	for i := range 1000 {
		c := i % 3
		for d := range 21 {
			fmt.Fprintf(&x, "%.4f ", rng.NormFloat64()+float64(c*(d%3)))
		}
		x.WriteString("\n")
		fmt.Fprintf(&y, "%d\n", c)
	}
	if err := os.WriteFile(filepath.Join(base, "X.txt"), []byte(x.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "Y.txt"), []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The active-learning runner continues one model through every added point
// (the default) or refits from scratch (step_training: scratch), for all
// four models, with learned and given noise (whose floored variances must
// fingerprint the same rows at every step); the mode is part of the key.
func TestActiveLearningContinueAndScratch(t *testing.T) {
	dataDir := fakeWaveform(t)
	for _, mode := range []string{"", "scratch"} {
		src := activeSpec
		if mode != "" {
			src = strings.Replace(src, "step_epochs: 1,", "step_epochs: 1, step_training: "+mode+",", 1)
		}
		s, err := ParseSpec("al.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(s, dataDir)
		for _, r := range Expand(s) {
			want := map[string]string{"": "continue", "scratch": "scratch"}[mode]
			if r.Budget.StepTraining != want {
				t.Fatalf("%s: step_training %q, want %q", r.Key, r.Budget.StepTraining, want)
			}
			res, err := executeRun(context.Background(), e, r)
			if err != nil {
				t.Fatalf("%s (%s): %v", r.Key, want, err)
			}
			if len(res.ALError) != 3 || len(res.ALNLL) != 3 {
				t.Fatalf("%s: %d/%d curve points, want 3", r.Key, len(res.ALError), len(res.ALNLL))
			}
			// 2 initial epochs, then 1 per added point.
			if res.Epochs != 4 || res.NTrain != 30 {
				t.Fatalf("%s: %d epochs, n_train %d; want 4 and 30", r.Key, res.Epochs, res.NTrain)
			}
		}
	}
	a, _ := ParseSpec("al.yaml", []byte(activeSpec))
	b, _ := ParseSpec("al.yaml", []byte(strings.Replace(activeSpec, "step_epochs: 1,", "step_epochs: 1, step_training: scratch,", 1)))
	if Expand(a)[0].Key == Expand(b)[0].Key {
		t.Error("step_training does not change the run key")
	}
}

func TestStepTrainingValidated(t *testing.T) {
	bad := strings.Replace(activeSpec, "step_epochs: 1,", "step_epochs: 1, step_training: resume,", 1)
	if _, err := ParseSpec("al.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), `step_training "resume"`) {
		t.Errorf("unknown mode: %v", err)
	}
	toy := strings.Replace(miniSpec, "inducing: 3}", "inducing: 3, step_training: scratch}", 1)
	if _, err := ParseSpec("mini.yaml", []byte(toy)); err == nil || !strings.Contains(err.Error(), "step_training does not apply to the toy1d family (the families that read it: active)") {
		t.Errorf("step_training outside active learning: %v", err)
	}
}
