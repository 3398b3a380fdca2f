package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// curvedCSV is n rows of a binary problem with a curved boundary and 10%
// label noise, inputs on a scale of tens (so that standardisation matters).
func curvedCSV(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 3))
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for range n {
		x1, x2 := 1.5*rng.NormFloat64(), 1.5*rng.NormFloat64()
		y := 0
		if x2 > math.Sin(1.5*x1) {
			y = 1
		}
		if rng.Float64() < 0.1 {
			y = 1 - y
		}
		fmt.Fprintf(&b, "%.6f,%.6f,%d\n", 40*x1, 40*x2+7, y)
	}
	return b.String()
}

// savedFit is what a model file holds that a fit computes.
type savedFit struct {
	Params []struct {
		Name string
		Data []float64
	} `json:"params"`
	Standardize json.RawMessage `json:"standardize"`
	Fit         json.RawMessage `json:"fit"`
}

func readSaved(t *testing.T, path string) savedFit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s savedFit
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAPIMatchesCLI: the library with zero options and gpc train with no
// training flags train the same model on the same CSV, bit for bit: the
// same parameters, standardisation and fit record (for a noise-aware
// model, both learn the noise variances).
func TestAPIMatchesCLI(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, dir, "train.csv", curvedCSV(80, 1))
	for _, model := range []string{"svgp-kl", "mgp", "nimgp-fo"} {
		t.Run(model, func(t *testing.T) {
			cliOut := filepath.Join(dir, model+"-cli.json")
			if code, _, stderr := gpc(t, "train", "--train", csv, "--model", model, "--out", cliOut, "--quiet"); code != 0 {
				t.Fatalf("gpc train: exit %d: %s", code, stderr)
			}
			ds, err := datasets.ReadCSV(csv, datasets.CSVOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := models.New(models.Options{Model: model})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Fit(context.Background(), ds, models.FitConfig{Warnings: &bytes.Buffer{}}); err != nil {
				t.Fatal(err)
			}
			apiOut := filepath.Join(dir, model+"-api.json")
			if err := m.Save(apiOut); err != nil {
				t.Fatal(err)
			}
			cli, api := readSaved(t, cliOut), readSaved(t, apiOut)
			if len(api.Standardize) == 0 || !bytes.Equal(cli.Standardize, api.Standardize) || !bytes.Equal(cli.Fit, api.Fit) {
				t.Fatalf("standardisation or fit record differ:\ncli %s %s\napi %s %s", cli.Standardize, cli.Fit, api.Standardize, api.Fit)
			}
			if len(cli.Params) != len(api.Params) {
				t.Fatalf("%d parameters from the CLI, %d from the API", len(cli.Params), len(api.Params))
			}
			for i, p := range cli.Params {
				q := api.Params[i]
				if p.Name != q.Name || len(p.Data) != len(q.Data) {
					t.Fatalf("parameter %d: %s[%d] vs %s[%d]", i, p.Name, len(p.Data), q.Name, len(q.Data))
				}
				for j := range p.Data {
					if math.Float64bits(p.Data[j]) != math.Float64bits(q.Data[j]) {
						t.Fatalf("%s[%d]: CLI %v, API %v", p.Name, j, p.Data[j], q.Data[j])
					}
				}
			}
		})
	}
}

// TestTrainSaysNotConverged: a fit cut at a cap the user chose says so in
// one line, with how fast the ELBO was still rising.
func TestTrainSaysNotConverged(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, dir, "train.csv", curvedCSV(80, 2))
	code, _, stderr := gpc(t, "train", "--train", csv, "--model", "svgp-kl", "--optimizer", "adam", "--epochs", "5", "--out", filepath.Join(dir, "m.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var found []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "not converged") {
			found = append(found, l)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "stopped at the 5-epoch cap with the ELBO still rising") || !strings.Contains(found[0], "--epochs") {
		t.Fatalf("stderr %q: want one line saying the fit stopped at its 5-epoch cap", stderr)
	}
}
