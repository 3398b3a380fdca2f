package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Whether a model uses input noise, has q(x_i) or is binary is asked of the
// model's parts, never inferred from its name: outside the preset registry
// (models/presets.go and the one-file-per-preset registrations), no Go
// source compares a model kind or a preset name.
func TestNoModelNameTests(t *testing.T) {
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`Kind [!=]= `),
		regexp.MustCompile(`[!=]= "(mgp|nimgp|nimgp-nn|nimgp-fo|svgp)"`),
		regexp.MustCompile(`"(mgp|nimgp|nimgp-nn|nimgp-fo|svgp)" [!=]=`),
		regexp.MustCompile(`case "(mgp|nimgp|nimgp-nn|nimgp-fo|svgp)"`),
		regexp.MustCompile(`models\.(MGP|NIMGP|NIMGPNN|NIMGPFO)\b`),
	}
	registry := map[string]bool{"presets.go": true, "mgp.go": true, "nimgp.go": true, "nn.go": true, "fo.go": true, "svgp.go": true, "epmodels.go": true}
	root := ".."
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if filepath.Base(filepath.Dir(path)) == "models" && registry[d.Name()] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, p := range patterns {
				if p.MatchString(line) {
					hits = append(hits, path+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		t.Error("model-name test outside the preset registry: " + h)
	}
}

// Which kernel a model has is the registry's business: outside
// layers/kernels no Go source compares a kernel name (the default is
// kernels.Default, expressions go through kernels.Parse), so a kernel
// registered from outside is a first-class one.
func TestNoKernelNameTests(t *testing.T) {
	names := strings.Join(kernelNamesForTest(), "|")
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`[!=]= "(` + names + `)"`),
		regexp.MustCompile(`"(` + names + `)" [!=]=`),
		regexp.MustCompile(`case "(` + names + `)"`),
		regexp.MustCompile(`Kernel(\.Name)? [!=]= "[^"]`),
	}
	var hits []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || filepath.ToSlash(path) == "../layers/kernels") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, p := range patterns {
				if p.MatchString(line) {
					hits = append(hits, path+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		t.Error("kernel-name test outside the kernel registry: " + h)
	}
}
