package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gpc plot draws the plane for two inputs and a reliability diagram (or,
// unlabelled, a histogram) for any other number; every picture is a PNG,
// and bad arguments are refused before any work.
func TestPlot(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(90, 1, true, true))
	test := writeFile(t, dir, "test.csv", blobs(30, 2, true, true))
	model := filepath.Join(dir, "model.json")
	if code, _, stderr := gpc(t, "train", "--train", train, "--model", "mgp", "--out", model, "--epochs", "5", "--inducing", "6", "--quiet"); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	// Three inputs: the blobs with a third column of noise.
	var b3 strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(blobs(60, 3, true, false)), "\n") {
		f := strings.Split(line, ",")
		fmt.Fprintf(&b3, "%s,%s,%.3f,%s\n", f[0], f[1], float64(i%7)/7, f[2])
	}
	train3 := writeFile(t, dir, "train3.csv", b3.String())
	model3 := filepath.Join(dir, "model3.json")
	if code, _, stderr := gpc(t, "train", "--train", train3, "--model", "mgp", "--out", model3, "--epochs", "5", "--inducing", "6", "--quiet"); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	unlabeled3 := writeFile(t, dir, "x3.csv", func() string {
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(b3.String()), "\n") {
			b.WriteString(line[:strings.LastIndex(line, ",")] + "\n")
		}
		return b.String()
	}())
	for _, c := range []struct {
		name string
		args []string
	}{
		{"plane, labelled", []string{"--model", model, "--input", test, "--labeled"}},
		{"plane, unlabelled", []string{"--model", model, "--input", writeFile(t, dir, "x.csv", blobs(10, 4, false, false))}},
		{"reliability", []string{"--model", model3, "--input", train3, "--labeled"}},
		{"histogram", []string{"--model", model3, "--input", unlabeled3}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, ", ", "-")+".png")
		code, _, stderr := gpc(t, append([]string{"plot", "--out", out}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		png, err := os.ReadFile(out)
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n")) {
			t.Errorf("%s: not a PNG (%v)", c.name, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "--input", test, "--out", filepath.Join(dir, "p.png")}, "--model"},
		{[]string{"plot", "--model", model, "--input", test, "--out", filepath.Join(dir, "p.png"), "--grid", "1"}, "--grid"},
		{[]string{"plot", "--model", model, "--input", train3, "--out", filepath.Join(dir, "p.png")}, "columns"},
	} {
		if code, _, stderr := gpc(t, c.args...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %q", c.args, code, stderr, c.want)
		}
	}
}
