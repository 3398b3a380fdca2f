package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gpc train --model rmgpc|smgpc|htpc, gpc predict on their files, and gpc
// outliers, which only an RMGPC model answers: all three are gpc-model
// files of the ordinary train path.
func TestRobustModels(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(60, 1, true, true))
	test := writeFile(t, dir, "test.csv", blobs(60, 2, true, true))
	for _, name := range []string{"rmgpc", "smgpc", "htpc"} {
		model := dir + "/" + name + ".json"
		if code, _, stderr := gpc(t, "train", "--train", train, "--model", name, "--out", model, "--quiet"); code != 0 {
			t.Fatalf("train %s: %d\n%s", name, code, stderr)
		}
		code, stdout, stderr := gpc(t, "predict", "--model", model, "--input", test, "--labeled", "--out", dir+"/"+name+".csv")
		if code != 0 {
			t.Fatalf("predict %s: %d\n%s", name, code, stderr)
		}
		var sc struct {
			Error, NLL float64
			N          int
		}
		if err := json.Unmarshal([]byte(stdout), &sc); err != nil || sc.N != 60 || sc.Error > 0.1 {
			t.Fatalf("%s scores %q (%v)", name, stdout, err)
		}
		code, stdout, stderr = gpc(t, "outliers", "--model", model)
		if name == "rmgpc" {
			var out struct{ P []float64 }
			if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.P) != 60 {
				t.Fatalf("outliers: %d %q %s", code, stdout, stderr)
			}
			for _, p := range out.P {
				if !(p >= 0 && p <= 1) {
					t.Fatalf("outlier probability %v", p)
				}
			}
		} else if code == 0 || !(strings.Contains(stderr, "has no outlier indicators") || strings.Contains(stderr, "models.OutlierReporter")) {
			t.Fatalf("outliers on %s: %d %q", name, code, stderr)
		}
	}
	// RMGPC takes --kernel like every model, and its file is a gpc-model one.
	rk := dir + "/rmgpc-se.json"
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "rmgpc", "--kernel", "matern52", "--out", rk, "--quiet"); code != 0 {
		t.Fatalf("train rmgpc --kernel matern52: %d\n%s", code, stderr)
	}
	if b, err := os.ReadFile(rk); err != nil || !strings.Contains(string(b), `"format":"gpc-model"`) {
		t.Fatalf("rmgpc file is not a gpc-model file (%v)", err)
	}
	if code, stdout, stderr := gpc(t, "outliers", rk); code != 0 || !strings.HasPrefix(stdout, `{"p":[`) {
		t.Fatalf("outliers on rmgpc --kernel matern52: %d %q %s", code, stdout, stderr)
	}
	// Checkpoints are refused as for every full-batch engine.
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "rmgpc", "--checkpoint", dir+"/ck", "--out", dir+"/y.json"); code == 0 || !strings.Contains(stderr, "cannot be checkpointed") {
		t.Fatalf("checkpoint: %d %q", code, stderr)
	}
	// A model of an engine without outliers names the capability.
	m := dir + "/mgp.json"
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--epochs", "2", "--out", m, "--quiet"); code != 0 {
		t.Fatalf("train mgp: %s", stderr)
	}
	if code, _, stderr := gpc(t, "outliers", "--model", m); code == 0 || !strings.Contains(stderr, "models.OutlierReporter") {
		t.Fatalf("outliers on mgp: %d %q", code, stderr)
	}
	// Files of an earlier build's RMGPC and HTPC (models/rmgpc and
	// models/htpc at 8b329a7) load: outliers reads RMGPC's, predict
	// writes what that build's predict wrote.
	legacy := filepath.Join("..", "..", "..", "models", "testdata", "legacy")
	if code, stdout, stderr := gpc(t, "outliers", "--model", filepath.Join(legacy, "rmgpc.json")); code != 0 || !strings.HasPrefix(stdout, `{"p":[`) {
		t.Fatalf("outliers on an old rmgpc file: %d %q", code, stderr)
	}
	for _, name := range []string{"rmgpc", "smgpc", "htpc"} {
		out := filepath.Join(dir, name+"-probs.csv")
		if code, _, stderr := gpc(t, "predict", "--model", filepath.Join(legacy, name+".json"), "--input", filepath.Join(legacy, "test_x.csv"), "--out", out); code != 0 {
			t.Fatalf("predict with an old %s file: %d %q", name, code, stderr)
		}
		got, want := readProbs(t, out, 31, 6), readProbs(t, filepath.Join(legacy, name+"-probs.csv"), 31, 6)
		for i := range got {
			for k := range got[i] {
				if math.Abs(got[i][k]-want[i][k]) > 1e-9 {
					t.Fatalf("old %s file: p%d of row %d is %v, the old build wrote %v", name, k, i, got[i][k], want[i][k])
				}
			}
		}
	}
	// A damaged one says what is wrong with it.
	old := writeFile(t, dir, "old.json", `{"format":"gpc-rmgpc","version":1}`)
	if code, _, stderr := gpc(t, "outliers", "--model", old); code == 0 || !strings.Contains(stderr, "malformed") {
		t.Fatalf("damaged old file: %d %q", code, stderr)
	}
}
