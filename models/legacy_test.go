package models

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Models written by the retired models/rmgpc (gpc at 8b329a7: `gpc train
// --train train.csv --model rmgpc|smgpc` on 72 Glass rows) load as the
// rmgpc and smgpc presets and predict what that gpc's `gpc predict` wrote
// for 31 other rows; RMGPC's outlier posteriors are the file's own.
func TestLegacyRMGPCFilesLoad(t *testing.T) {
	dir := filepath.Join("testdata", "legacy")
	x := readFloats(t, filepath.Join(dir, "test_x.csv"))
	for _, name := range []string{"rmgpc", "smgpc"} {
		t.Run(name, func(t *testing.T) {
			m, err := Load(filepath.Join(dir, name+".json"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.Name() != name {
				t.Errorf("loaded as model %s", m.Name())
			}
			got, err := m.Predict(flatten(x), len(x), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := flatten(readFloats(t, filepath.Join(dir, name+"-probs.csv")))
			if len(got) != len(want) {
				t.Fatalf("%d probabilities, want %d", len(got), len(want))
			}
			worst := 0.0
			for i := range got {
				worst = math.Max(worst, math.Abs(got[i]-want[i]))
			}
			t.Logf("largest difference from the old gpc's predictions: %.3g", worst)
			if worst > 1e-12 {
				t.Errorf("predictions differ from the old gpc's by up to %g", worst)
			}
			var old struct {
				Outliers []float64 `json:"outliers"`
			}
			b, err := os.ReadFile(filepath.Join(dir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &old); err != nil {
				t.Fatal(err)
			}
			out, err := m.Outliers()
			if (old.Outliers == nil) != (err != nil) {
				t.Fatalf("outliers %v (error %v); the file has %d", out, err, len(old.Outliers))
			}
			for i := range old.Outliers {
				if math.Abs(out[i]-old.Outliers[i]) > 1e-12 {
					t.Fatalf("P(z_%d = 1) = %v, the file says %v", i, out[i], old.Outliers[i])
				}
			}
			// Saved, it is a gpc-model file that reloads to the same.
			path := filepath.Join(t.TempDir(), "m.json")
			if err := m.Save(path); err != nil {
				t.Fatal(err)
			}
			m2, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			got2, err := m2.Predict(flatten(x), len(x), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got2[i] != got[i] {
					t.Fatalf("prediction %d: %v after saving, %v before", i, got2[i], got[i])
				}
			}
		})
	}
}

// What the rmgpc preset cannot express is refused, not approximated: an
// old kernel amplitude other than 1, an ARD kernel.
func TestLegacyRMGPCRefuses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "legacy", "rmgpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	for edit, says := range map[[2]string]string{
		{`"name":"rmgpc/se/variance","data":[0]`, `"name":"rmgpc/se/variance","data":[0.5]`}: "amplitude",
		{`"config":{`, `"config":{"ard":true,`}:                                              "ARD",
	} {
		bad := strings.Replace(string(b), edit[0], edit[1], 1)
		if bad == string(b) {
			t.Fatalf("edit %q not applied", edit[0])
		}
		path := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error naming %q", edit[1], err, says)
		}
	}
}
