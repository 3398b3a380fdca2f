package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// gpc train --model rmgpc|smgpc|htpc (htpc through the ordinary train
// path, a gpc-model file), gpc predict on their files, and gpc
// outliers, which only an RMGPC model answers.
func TestExternalModels(t *testing.T) {
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
		} else if code == 0 || !strings.Contains(stderr, "has no outlier indicators") {
			t.Fatalf("outliers on %s: %d %q", name, code, stderr)
		}
	}
	// Flags the engines do not take are refused with the reason.
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "rmgpc", "--epochs", "3", "--out", dir+"/x.json"); code == 0 || !strings.Contains(stderr, "takes only --train, --out and --quiet") {
		t.Fatalf("extra flag: %d %q", code, stderr)
	}
	// A models file has no outliers either.
	m := dir + "/mgp.json"
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--epochs", "2", "--out", m, "--quiet"); code != 0 {
		t.Fatalf("train mgp: %s", stderr)
	}
	if code, _, stderr := gpc(t, "outliers", "--model", m); code == 0 || !strings.Contains(stderr, "has no outlier indicators") {
		t.Fatalf("outliers on mgp: %d %q", code, stderr)
	}
}
