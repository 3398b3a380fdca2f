package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// A kernel the program registers, as a user's main would before handing
// over to gpc's command line: an SE kernel whose ℓ starts at twice the
// built-in one's.
func init() {
	err := kernels.Register("cmd-test-wide-se", func(c kernels.Config) (kernels.Kernel, error) {
		ell := 1.0
		if c.Data != nil {
			ell = 2 * c.Data.MedianDistance()
		}
		return kernels.NewSE(c.Name, c.D, ell, 1, 0.01), nil
	})
	if err != nil {
		panic(err)
	}
}

// gpc train takes a kernel expression, the model file keeps it, and gpc
// predict rebuilds the composite kernel from it, a registered user's
// kernel included.
func TestTrainKernelExpression(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(60, 1, true, true))
	inputs := writeFile(t, dir, "inputs.csv", blobs(30, 2, false, true))
	for i, expr := range []string{"matern52+linear", "se*poly(2)", "(se-iso + linear) * matern32", "cmd-test-wide-se", "cmd-test-wide-se*linear"} {
		model := filepath.Join(dir, "m"+string(rune('0'+i))+".json")
		if code, stdout, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--out", model, "--kernel", expr,
			"--epochs", "2", "--batch", "20", "--inducing", "6", "--seed", "2", "--quiet"); code != 0 {
			t.Fatalf("train --kernel %q: status %d\nstdout: %s\nstderr: %s", expr, code, stdout, stderr)
		}
		b, err := os.ReadFile(model)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Options struct{ Kernel struct{ Name string } }
		}
		if err := json.Unmarshal(b, &f); err != nil || f.Options.Kernel.Name != expr {
			t.Errorf("the model file's kernel is %q (%v), want %q", f.Options.Kernel.Name, err, expr)
		}
		probs := filepath.Join(dir, "p.csv")
		if code, stdout, stderr := gpc(t, "predict", "--model", model, "--input", inputs, "--out", probs); code != 0 {
			t.Fatalf("predict with kernel %q: status %d\nstdout: %s\nstderr: %s", expr, code, stdout, stderr)
		}
		readProbs(t, probs, 30, 3)
	}
	// The help lists every registered kernel and the expression syntax.
	_, stdout, _ := gpc(t, "train", "-h")
	for _, want := range append(kernels.Names(), "matern52+linear", "se*linear") {
		if !strings.Contains(stdout, want) {
			t.Errorf("gpc train -h does not mention %s:\n%s", want, stdout)
		}
	}
}
