package experiments_test

import (
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/experiments"
)

// A spec's kernel is any expression over the registered kernels; a wrong
// one is reported at its line with the parser's position; the run keys
// take the canonical expression, so that spacing does not make a new run
// and the single kernels keep the keys they had.
func TestSpecKernelExpression(t *testing.T) {
	parse := func(kernel string) ([]experiments.Run, error) {
		src := strings.Replace(toySpec, "  kernel: se\n", "  kernel: "+kernel+"\n", 1)
		if kernel == "" {
			src = strings.Replace(toySpec, "  kernel: se\n", "", 1)
		}
		s, err := experiments.ParseSpec("k.yaml", []byte(src))
		if err != nil {
			return nil, err
		}
		return experiments.Expand(s), nil
	}
	for _, bad := range []struct{ kernel, says string }{
		{"se+", "position 4"},
		{"rbf", `unknown kernel "rbf"`},
		{"poly(0)", "degree must be an integer"},
		{"\"se linear\"", `position 4: unexpected kernel name "linear"`},
	} {
		if _, err := parse(bad.kernel); err == nil || !strings.Contains(err.Error(), bad.says) || !strings.Contains(err.Error(), "training.kernel") && !strings.Contains(err.Error(), "kernel") {
			t.Errorf("kernel %s: %v, want %q", bad.kernel, err, bad.says)
		}
	}
	key := func(kernel string) string {
		runs, err := parse(kernel)
		if err != nil {
			t.Fatalf("kernel %q: %v", kernel, err)
		}
		return runs[0].Key
	}
	if key("") != key("se") {
		t.Error("an unset kernel and se have different run keys")
	}
	if key("se*linear") != key("\"se * linear\"") || key("(matern52+linear)") != key("matern52+linear") {
		t.Error("the run key depends on the expression's spelling")
	}
	if key("se*linear") == key("se") || key("se*linear") == key("linear*se") {
		t.Error("different kernels share a run key")
	}
	runs, _ := parse("\"(se + linear) * poly(3)\"")
	if got := runs[0].Budget.Kernel; got != "(se+linear)*poly(3)" {
		t.Errorf("budget kernel %q, want the canonical (se+linear)*poly(3)", got)
	}
}
