package models

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readFloats reads a CSV of numbers, skipping a header line that does not
// parse, as rows of floats.
func readFloats(t *testing.T, path string) [][]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var row []float64
		ok := true
		for _, f := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				ok = false
				break
			}
			row = append(row, v)
		}
		if ok {
			out = append(out, row)
		}
	}
	return out
}

func flatten(rows [][]float64) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// Files written while every part of a composite kernel kept its own white
// noise (by gpc at e058920, `gpc train --model mgp --kernel K --epochs 3
// --inducing 8` on 72 Glass rows, with that gpc's `gpc predict` output
// beside each) load into the composite that owns one, and predict what
// they predicted: a sum's parts' noises become their total, a product's,
// which it never used, none.
func TestCompositeNoiseOldFilesLoad(t *testing.T) {
	dir := filepath.Join("testdata", "composite-noise")
	x := readFloats(t, filepath.Join(dir, "test_x.csv"))
	for _, name := range []string{"sexlinear", "matern52plinear", "seplinearxse"} {
		t.Run(name, func(t *testing.T) {
			m, err := Load(filepath.Join(dir, name+".json"), nil)
			if err != nil {
				t.Fatal(err)
			}
			whites := 0
			for _, p := range m.params() {
				if strings.HasSuffix(p.Name, "/white") {
					whites++
					if strings.Contains(p.Name, ":") {
						t.Errorf("part white noise %s kept", p.Name)
					}
				}
			}
			if whites != m.C {
				t.Errorf("%d white noises for %d composite kernels", whites, m.C)
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
			// gpc predict writes %v (shortest round-trip) values.
			if worst > 1e-12 {
				t.Errorf("predictions differ from the old gpc's by up to %g", worst)
			}
			// Saved again, the file has the composite's noise and reloads.
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
				if got[i] != got2[i] {
					t.Fatalf("prediction %d: %v after a round trip, %v before", i, got2[i], got[i])
				}
			}
		})
	}
}

// A model with a product kernel saves and reloads to identical
// predictions, its one white noise per kernel included.
func TestProductKernelSaveLoad(t *testing.T) {
	m, x, n := trainSmall(t, Options{Model: "mgp", Kernel: KernelOptions{Name: "se*linear"}})
	want, err := m.Predict(x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.PredictContext(context.Background(), x, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("prediction %d: %v after loading, %v before", i, got[i], want[i])
		}
	}
	var names []string
	for _, p := range m2.Kernels()[0].Params() {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "k0/0:se/lengthscales k0/0:se/variance k0/1:linear/lengthscales k0/white" {
		t.Errorf("kernel parameters %v", names)
	}
}
