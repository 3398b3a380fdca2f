package experiments

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ckptToy fits NIMGP (local q(x_i) rows and a normal stream) through the
// generic fit (env.trainAndScore), checkpointing every epoch.
const ckptToy = `name: ckpt-toy
title: t
source: test
family: toy1d
datasets: [toy]
protocol: {splits: 1, n_train: 30, n_test: 20, checkpoint_minutes: 0.000001}
training: {epochs: 6, batch: 8, lr: 0.01, inducing: 4}
settings:
  - {name: a, noise: 0.1}
methods:
  - {name: NIMGP, kind: nimgp}
`

// ckptLiu fits GPC-I through liuFit with a hold-out trace every few steps.
const ckptLiu = `name: ckpt-liu
title: t
source: test
family: liu_delta
datasets: [magic]
protocol: {splits: 1, test_fraction: 0.1, checkpoint_minutes: 0.000001}
training: {epochs: 1, min_steps: 60, batch: 64, lr: 0.01, inducing: 10}
settings:
  - {name: learned}
methods:
  - {name: GPC-I, model: gpc1}
`

// comparable blanks what differs between two executions of the same
// computation: wall and CPU times and the finishing time.
func comparable(r Result) Result {
	r.Seconds, r.SecondsPerEpoch, r.CPUSeconds, r.Finished = 0, 0, 0, ""
	r.Trace = append([]TracePoint(nil), r.Trace...)
	for i := range r.Trace {
		r.Trace[i].Seconds = 0
	}
	return r
}

// A runner killed after a run's first checkpoint resumes that run on the
// rerun, whose result line is the uninterrupted run's (error, NLL, trace,
// epochs, notes; not the times), and the checkpoint is gone afterwards.
func TestCheckpointedRunResumes(t *testing.T) {
	magic := writeSortedMagic(t, 300)
	for _, c := range []struct{ name, spec, dataDir string }{{"toy1d", ckptToy, ""}, {"liu_delta", ckptLiu, magic}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSpec(c.name+".yaml", []byte(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			rs, err := Resolve(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			straightDir := t.TempDir()
			if _, err := Execute(context.Background(), rs, straightDir, RunConfig{Workers: 1, DataDir: c.dataDir}); err != nil {
				t.Fatal(err)
			}
			want := readResults(t, straightDir)

			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			taken := 0
			var log strings.Builder
			_, err = Execute(ctx, rs, dir, RunConfig{Workers: 1, DataDir: c.dataDir, Log: &log, onCheckpoint: func(Run) {
				taken++
				cancel() // the file is still written; the fit stops before its next epoch
			}})
			if !errors.Is(err, context.Canceled) || taken != 1 {
				t.Fatalf("interrupted runner: %v after %d checkpoints, want the cancellation after 1", err, taken)
			}
			// The log says how far the fit was when it was saved.
			if !strings.Contains(log.String(), "checkpointed: "+Expand(rs)[0].Key+": epoch 1") {
				t.Errorf("the runner's log does not report the checkpoint:\n%s", log.String())
			}
			if got := readResults(t, dir); len(got) != 0 {
				t.Fatalf("the interrupted run stored %d results", len(got))
			}
			files, _ := filepath.Glob(filepath.Join(dir, checkpointDir, "*.ckpt"))
			if len(files) != 1 {
				t.Fatalf("checkpoints after the interruption: %v, want one", files)
			}
			// The dry run's progress reads the fit's epoch from it; a budget
			// a floor on steps may raise is not stated.
			p, err := ReadProgress(dir, Expand(rs))
			wantEpochs := map[string]int{"toy1d": 6, "liu_delta": 0}[c.name]
			if err != nil || len(p.InProgress) != 1 || p.InProgress[0].Info.Epoch != 1 || p.InProgress[0].Epochs != wantEpochs ||
				!strings.Contains(p.InProgress[0].String(), "epoch 1") {
				t.Fatalf("progress of the interrupted fit: %+v, %v; want epoch 1 of %d", p.InProgress, err, wantEpochs)
			}

			resumed := 0
			if _, err := Execute(context.Background(), rs, dir, RunConfig{Workers: 1, DataDir: c.dataDir, onCheckpoint: func(Run) { resumed++ }}); err != nil {
				t.Fatal(err)
			}
			got := readResults(t, dir)
			if len(got) != len(want) || len(got) != 1 {
				t.Fatalf("%d results resumed, %d straight; want 1", len(got), len(want))
			}
			if g, w := comparable(got[0]), comparable(want[0]); !reflect.DeepEqual(g, w) {
				t.Errorf("resumed result\n%+v\nuninterrupted\n%+v", g, w)
			}
			if want[0].Epochs < 3 || resumed != want[0].Epochs-1 {
				t.Errorf("the rerun took %d checkpoints of a %d-epoch fit; want all but the first epoch's", resumed, want[0].Epochs)
			}
			if c.name == "liu_delta" && len(want[0].Trace) < 2 {
				t.Errorf("trace of %d points; the test wants a trace across the interruption", len(want[0].Trace))
			}
			if left, _ := os.ReadDir(filepath.Join(dir, checkpointDir)); len(left) != 0 {
				t.Errorf("checkpoints left after the result was stored: %v", left)
			}
		})
	}
}

// readResults returns the results stored in dir, in file order.
func readResults(t *testing.T, dir string) []Result {
	t.Helper()
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st.results()
}

// protocol.checkpoint_minutes must be a plausible number of minutes;
// negative turns checkpoints off.
func TestCheckpointMinutesValidated(t *testing.T) {
	for v, ok := range map[string]bool{"1e9": false, "-1": true, "30": true} {
		s, err := ParseSpec("spec.yaml", []byte(strings.Replace(ckptToy, "checkpoint_minutes: 0.000001", "checkpoint_minutes: "+v, 1)))
		if err == nil {
			_, err = Resolve(s, Options{})
		}
		if ok && err != nil {
			t.Errorf("checkpoint_minutes %s: %v", v, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "checkpoint_minutes")) {
			t.Errorf("checkpoint_minutes %s: got %v, want an error naming it", v, err)
		}
		if ok && v == "-1" {
			e := newEnv(s, "")
			e.resultsDir = t.TempDir()
			if p := e.checkpointPath(Run{Key: "k"}); p != "" {
				t.Errorf("checkpoints off, yet a path %s", p)
			}
		}
	}
}
