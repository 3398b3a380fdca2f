package models

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad checks the model-file reader on arbitrary bytes: never a panic
// or an allocation the file does not back. The seeds are saved models of
// a few presets, with and without an input standardisation, and the corpus
// under testdata/fuzz/FuzzLoad; run `go test -fuzz FuzzLoad -fuzztime 30s
// ./models` to explore further.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	for i, preset := range []string{"mgp", "nimgp-fo", "nimgp-nn"} {
		o := withNoise(opts(preset, 3, 1, 10, 1), 0.1, preset == "nimgp-fo")
		o.Inputs.TestSamples, o.Inputs.Hidden = 2, []int{2}
		o.Inputs.Standardize, o.Inputs.NoStandardize = i != 0, i == 0
		m, err := New(o)
		if err != nil {
			f.Fatal(err)
		}
		if err := m.Fit(context.Background(), syntheticSet(12, 2, 3, 1), FitConfig{Warnings: io.Discard}); err != nil {
			f.Fatal(err)
		}
		p := filepath.Join(dir, preset+".json")
		if err := m.Save(p); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"c":3`), []byte(`"c":1000000`), 1))
		f.Add(bytes.Replace(b, []byte(`"m":3`), []byte(`"m":100000`), 1))
		f.Add(bytes.Replace(b, []byte(`"version":`), []byte(`"version":1`), 1))
		// The second round's hostile edits: sizes beyond their limits,
		// a parameter listed twice, a log-scale that overflows, a
		// standardisation scale whose reciprocal overflows.
		f.Add(bytes.Replace(b, []byte(`"Quadrature":20`), []byte(`"Quadrature":1000000000`), 1))
		f.Add(bytes.Replace(b, []byte(`"TestSamples":2`), []byte(`"TestSamples":1000000000000`), 1))
		f.Add(bytes.Replace(b, []byte(`"Hidden":[2]`), []byte(`"Hidden":[100000000]`), 1))
		f.Add(bytes.Replace(b, []byte(`"n":12`), []byte(`"n":1000000000000000`), 1))
		f.Add(bytes.Replace(b, []byte(`"params":[`), []byte(`"params":[{"name":"k0/variance","shape":[],"data":[1]},`), 1))
		f.Add(bytes.Replace(b, []byte(`"params":[`), []byte(`"params":[{"name":"extra","shape":[1],"data":[1]},`), 1))
		f.Add(bytes.Replace(b, []byte(`"name":"k0/variance","shape":[],"data":[`), []byte(`"name":"k0/variance","shape":[],"data":[1e308`), 1))
		f.Add(bytes.Replace(b, []byte(`"scale":[`), []byte(`"scale":[1e-320,`), 1))
	}
	// A model with fewer stored numbers than the amortised networks'
	// default width (which Load's size check once required of every model).
	small, err := New(withNoise(opts("svgp", 1, 1, 4, 1), 0.1, false))
	if err != nil {
		f.Fatal(err)
	}
	tiny := syntheticSet(4, 1, 2, 1)
	tiny.Y = []int{0, 1, 0, 1}
	if err := small.Fit(context.Background(), tiny, FitConfig{Warnings: io.Discard}); err != nil {
		f.Fatal(err)
	}
	if err := small.Save(filepath.Join(dir, "small.json")); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "small.json")); err != nil {
		f.Fatal(err)
	} else {
		f.Add(b)
	}
	for _, s := range []string{"", "{}", "null", `{"format":"gpc-model","version":2}`, `{"format":"gpc-model","version":2,"options":{},"d":1,"c":2,"m":1,"n":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := load(b, "f.json", nil)
		if err != nil {
			if m != nil {
				t.Fatal("a model with an error")
			}
			return
		}
		// What Load accepted is consistent: the sizes it allocated are the
		// ones the file backs. (Predicting from a loaded model builds a graph,
		// seconds per input under the fuzzer's instrumentation; the seeds'
		// predictions are checked by TestSaveLoadRoundTrip.)
		if m.D < 1 || m.C < 2 || m.post == nil || m.post.M < 1 || len(m.kernels) != m.lik.Latent(m.C) {
			t.Fatalf("loaded sizes d=%d c=%d with %d kernels", m.D, m.C, len(m.kernels))
		}
		o := m.Opts
		if o.Likelihood.Quadrature > MaxQuadrature || o.Inputs.TestSamples > MaxTestSamples || o.Likelihood.Samples > MaxLikelihoodSamples || m.N > MaxSavedRows {
			t.Fatalf("loaded sizes beyond their limits: %d quadrature points, %d test samples, %d draws, n=%d", o.Likelihood.Quadrature, o.Inputs.TestSamples, o.Likelihood.Samples, m.N)
		}
		for _, p := range m.params() {
			for i, v := range p.Data {
				if checkParamValue("f.json", p, i, v) != nil {
					t.Fatalf("loaded parameter %q element %d = %v", p.Name, i, v)
				}
			}
		}
	})
}
