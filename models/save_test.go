package models

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	train := syntheticSet(120, 3, 3, 4)
	test := syntheticSet(30, 3, 3, 5)
	for _, k := range PresetNames() {
		for _, learn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/learn=%v", k, learn), func(t *testing.T) {
				o := withNoise(opts(k, 10, 2, 40, 3), 0.1, learn)
				o.Inputs.TestSamples = 5
				m, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				train, test := train, test
				if cc, ok := m.Likelihood().(interface{ Classes() int }); ok {
					train, test = syntheticSet(120, 3, cc.Classes(), 4), syntheticSet(30, 3, cc.Classes(), 5)
				}
				if err := m.Fit(context.Background(), train, FitConfig{}); err != nil {
					t.Fatal(err)
				}
				saveLoad(t, m, test)
			})
		}
	}
}

// saveLoad saves m, loads it back and requires the loaded model to predict
// test as m does (to 1e-12); it returns the loaded model.
func saveLoad(t *testing.T, m *Model, test *datasets.Dataset) *Model {
	t.Helper()
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
	return l
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
