package models

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	train := syntheticSet(120, 3, 3, 4)
	test := syntheticSet(30, 3, 3, 5)
	for _, k := range Kinds {
		for _, learn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/learn=%v", k, learn), func(t *testing.T) {
				m, err := New(Options{Kind: k, Inducing: 10, Epochs: 2, Batch: 40, LearnNoise: learn, NoiseVar: 0.1, TestSamples: 5, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), "m.json")
				if err := m.Save(path); err != nil {
					t.Fatal(err)
				}
				l, err := Load(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				p1, err := m.Predict(test.X, test.N, nil)
				if err != nil {
					t.Fatal(err)
				}
				p2, err := l.Predict(test.X, test.N, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i := range p1 {
					if math.Abs(p1[i]-p2[i]) > 1e-12 {
						t.Fatalf("prediction %d: %v before saving, %v after loading", i, p1[i], p2[i])
					}
				}
			})
		}
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"notjson.json": "hello",
		"format.json":  `{"format":"other","version":1}`,
		"version.json": `{"format":"gpc-model","version":99}`,
	}
	for name, body := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := Load(p, nil); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
}
