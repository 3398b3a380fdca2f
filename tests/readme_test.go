package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeBlock returns the fenced block of README.md that follows the line
// marker (the walk-through's "<!-- test: walkthrough -->") or, for a
// heading, the first fenced block of lang under it.
func readmeBlock(t *testing.T, readme, after, lang string) string {
	t.Helper()
	i := strings.Index(readme, after)
	if i < 0 {
		t.Fatalf("README.md has no %q", after)
	}
	rest := readme[i+len(after):]
	open := "```" + lang + "\n"
	j := strings.Index(rest, open)
	if j < 0 {
		t.Fatalf("README.md has no ```%s block after %q", lang, after)
	}
	body := rest[j+len(open):]
	k := strings.Index(body, "```")
	if k < 0 {
		t.Fatalf("README.md: the ```%s block after %q is not closed", lang, after)
	}
	return body[:k]
}

// writeBlobs writes a labelled CSV of n rows of three 2-D Gaussian blobs
// (and, unlabeled, its inputs alone when path ends in new.csv).
func writeBlobs(t *testing.T, path string, n int, seed uint64, labeled bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	centres := [][2]float64{{0, 0}, {3, 0}, {1.5, 2.6}}
	var b bytes.Buffer
	if labeled {
		b.WriteString("x1,x2,label\n")
	} else {
		b.WriteString("x1,x2\n")
	}
	for i := range n {
		k := i % 3
		x, y := centres[k][0]+0.9*rng.NormFloat64(), centres[k][1]+0.9*rng.NormFloat64()
		if labeled {
			fmt.Fprintf(&b, "%.4f,%.4f,%d\n", x, y, k)
		} else {
			fmt.Fprintf(&b, "%.4f,%.4f\n", x, y)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadmeWalkthrough runs the README's five-minute walk-through as
// written, with the gpc built from this tree on the PATH, on a small CSV
// of three blobs, then its Go example as a program; each step's outputs
// must be there and make sense.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpc and trains models (under a minute)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "gpc"), "./cmd/gpc")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gpc: %v\n%s", err, out)
	}
	work := t.TempDir()
	writeBlobs(t, filepath.Join(work, "train.csv"), 300, 1, true)
	writeBlobs(t, filepath.Join(work, "test.csv"), 150, 2, true)
	writeBlobs(t, filepath.Join(work, "new.csv"), 20, 3, false)

	script := readmeBlock(t, readme, "<!-- test: walkthrough -->", "sh")
	sh := exec.Command("bash", "-euo", "pipefail", "-c", script)
	sh.Dir = work
	sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &stderr
	if err := sh.Run(); err != nil {
		t.Fatalf("the walk-through failed: %v\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), `{"error":`) {
		t.Errorf("gpc predict --labeled printed no scores:\n%s", stdout.String())
	}
	for _, c := range []struct {
		file  string
		lines int
	}{{"probs.csv", 151}, {"new-probs.csv", 21}} {
		out, err := os.ReadFile(filepath.Join(work, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), "\n"); n != c.lines || !strings.HasPrefix(string(out), "p0,p1,p2\n") {
			t.Errorf("%s: %d lines, want a header and %d rows:\n%.200s", c.file, n, c.lines-1, out)
		}
	}
	png, err := os.ReadFile(filepath.Join(work, "plot.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n")) {
		t.Errorf("plot.png is not a PNG (%v)", err)
	}

	// The Go example, as a program in a directory of the module (the _
	// keeps it out of ./...), run where the walk-through's CSVs are.
	code := readmeBlock(t, readme, "## From Go", "go")
	dir, err := os.MkdirTemp(filepath.Join(root, "tests"), "_readme_example")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	prog := "package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"log\"\n\n\t\"github.com/gpc-dev/gpc/datasets\"\n\t\"github.com/gpc-dev/gpc/models\"\n)\n\nfunc main() {\n" + code + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.csv", "test.csv"} {
		data, err := os.ReadFile(filepath.Join(work, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := exec.Command("go", "run", ".")
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's Go example failed: %v\n%s\n%s", err, prog, out)
	}
	if !strings.Contains(string(out), "test error ") {
		t.Errorf("the Go example printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		t.Errorf("the Go example saved no model: %v", err)
	}
}
