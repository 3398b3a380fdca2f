package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gpc train --checkpoint trains as without it and removes the file once
// the model is written; a file that is not a checkpoint of this fit is
// refused, naming it, and so are the optimisers that cannot checkpoint.
func TestTrainCheckpoint(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", blobs(30, 1, true, true))
	out := filepath.Join(dir, "m.json")
	ck := filepath.Join(dir, "fit.ckpt")
	args := []string{"train", "--train", train, "--out", out, "--model", "mgp", "--epochs", "3", "--batch", "10", "--inducing", "4", "--quiet",
		"--checkpoint", ck, "--checkpoint-every", "0"}
	if code, _, stderr := gpc(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no model written: %v", err)
	}
	if _, err := os.Stat(ck); !os.IsNotExist(err) {
		t.Fatalf("checkpoint %s left behind: %v", ck, err)
	}

	if err := os.WriteFile(ck, []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := gpc(t, args...); code == 0 || !strings.Contains(stderr, ck) {
		t.Fatalf("foreign checkpoint file: exit %d, stderr %q; want a failure naming %s", code, stderr, ck)
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--optimizer", "lbfgs"}, "only minibatch training"},
		{[]string{"--checkpoint-every", "-1m"}, "--checkpoint-every -1m0s"},
	} {
		if code, _, stderr := gpc(t, append(append([]string(nil), args...), c.extra...)...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.extra, code, stderr, c.want)
		}
	}
}
