package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// checkpointCase is a small fit of one kind: binary SVGP, NIMGP (local
// q(x_i) rows with the dense row-wise Adam and a normal stream) and
// Appendix D's multi-class GPC-I (k-means Z, shared kernel). The freeze
// schedule changes at the interruption (after epoch 2), so the resumed fit
// must apply the schedule of the epoch it resumes at, not the first.
func checkpointCase(t *testing.T, name string) (Options, *datasets.Dataset) {
	t.Helper()
	switch name {
	case "svgp":
		o := opts("svgp", 6, 5, 16, 3)
		o.Train.FreezeHyper, o.Train.FreezeZ = 2, 4
		return o, syntheticSet(60, 3, 2, 31)
	case "nimgp":
		o := withNoise(opts("nimgp", 6, 5, 16, 4), 0.1, false)
		o.Train.FreezeHyper = 2
		return o, syntheticSet(60, 3, 3, 32)
	case "gpc1":
		o := AppendixD(opts("gpc1", 6, 5, 16, 5))
		o.Train.FreezeZ = 2
		return o, sectorSet(60, 33)
	}
	t.Fatalf("no case %s", name)
	return Options{}, nil
}

// paramValues copies every parameter of a fitted model, in order.
func paramValues(m *Model) [][]float64 {
	var out [][]float64
	for _, p := range m.params() {
		out = append(out, slices.Clone(p.Data))
	}
	return out
}

func sameBits(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool { return slices.Equal(x, y) })
}

// A fit interrupted after two epochs and fitted again on the same
// checkpoint ends with the parameters of an uninterrupted fit, bit for bit;
// the caller's state travels in the file, and the resumed fit's callback
// sees the epochs after the checkpoint.
func TestCheckpointResumeIsBitExact(t *testing.T) {
	for _, name := range []string{"svgp", "nimgp", "gpc1"} {
		t.Run(name, func(t *testing.T) {
			o, ds := checkpointCase(t, name)
			straight, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := straight.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
				t.Fatal(err)
			}
			want := paramValues(straight)

			path := filepath.Join(t.TempDir(), "fit.ckpt")
			seen := 0 // the caller's state: epochs seen by its callback
			ck := &Checkpoint{Path: path,
				Save:    func() ([]byte, error) { return binary.AppendUvarint(nil, uint64(seen)), nil },
				Restore: func(b []byte) error { v, _ := binary.Uvarint(b); seen = int(v); return nil },
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			err = first.Fit(ctx, ds, FitConfig{Warnings: io.Discard, Checkpoint: ck, Callback: func(e Epoch) error {
				seen++
				if e.Epoch == 2 {
					cancel()
				}
				return nil
			}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted fit: got %v, want the cancellation", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("no checkpoint after the interruption: %v", err)
			}

			seen = -1
			var epochs []int
			second, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			err = second.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard, Checkpoint: ck, Callback: func(e Epoch) error {
				seen++
				epochs = append(epochs, e.Epoch)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(epochs, []int{3, 4, 5}) || seen != 5 {
				t.Errorf("resumed fit: callback for epochs %v, caller's count %d; want [3 4 5] and 5", epochs, seen)
			}
			if got := paramValues(second); !sameBits(got, want) {
				t.Errorf("resumed parameters differ from the uninterrupted fit's")
			}
			if err := RemoveCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("RemoveCheckpoint left %s: %v", path, err)
			}
		})
	}
}

// A checkpoint of another fit, or a damaged one, is refused with an error
// naming the file, and so is a checkpoint for L-BFGS or EP.
func TestCheckpointRefusals(t *testing.T) {
	o, ds := checkpointCase(t, "svgp")
	o.Train.Epochs = 2
	path := filepath.Join(t.TempDir(), "fit.ckpt")
	fit := func(o Options) error {
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard, Checkpoint: &Checkpoint{Path: path}})
	}
	if err := fit(o); err != nil {
		t.Fatal(err)
	}
	other := o
	other.Train.LR = 0.02
	err := fit(other)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Train.LR") {
		t.Errorf("other options: got %v, want an error naming %s and Train.LR", err, path)
	}
	if !errors.Is(err, ErrForeignCheckpoint) {
		t.Errorf("other options: %v is not ErrForeignCheckpoint, so a runner would delete another fit's checkpoint", err)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fit(o); err == nil || !strings.Contains(err.Error(), path) || errors.Is(err, ErrForeignCheckpoint) {
		t.Errorf("truncated file: got %v, want an error naming %s (damaged, not another fit's)", err, path)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), syntheticSet(60, 3, 2, 99), FitConfig{Warnings: io.Discard, Checkpoint: &Checkpoint{Path: path}}); err == nil || !strings.Contains(err.Error(), "other training data") || !errors.Is(err, ErrForeignCheckpoint) {
		t.Errorf("other data: got %v, want an error about other training data", err)
	}

	lb := o
	lb.Train.Optimizer = "lbfgs"
	if err := fit(lb); err == nil || !strings.Contains(err.Error(), "L-BFGS") || !strings.Contains(err.Error(), path) {
		t.Errorf("L-BFGS: got %v, want a refusal", err)
	}
	ep := opts("ep", 6, 2, 16, 3)
	if err := fit(ep); err == nil || !strings.Contains(err.Error(), "ep engine cannot checkpoint") {
		t.Errorf("EP: got %v, want a refusal", err)
	}
}

// NIMGP's per-row tables travel as a stream after the checkpoint's header,
// under a checksum: a byte flipped in it, or a file cut short, is refused
// with an error naming the file before anything is restored. A checkpoint
// of version 1 (one gob, as gpc wrote it before the stream) still resumes,
// bit for bit.
func TestCheckpointStreamedState(t *testing.T) {
	o, ds := checkpointCase(t, "nimgp")
	straight, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := straight.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard}); err != nil {
		t.Fatal(err)
	}
	want := paramValues(straight)
	path := filepath.Join(t.TempDir(), "fit.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	err = first.Fit(ctx, ds, FitConfig{Warnings: io.Discard, Checkpoint: &Checkpoint{Path: path}, Callback: func(e Epoch) error {
		if e.Epoch == 2 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted fit: got %v, want the cancellation", err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(saved, []byte(checkpointMagic)) {
		t.Fatalf("the checkpoint does not start with %q", checkpointMagic)
	}
	at := len(checkpointMagic) + 8 + int(binary.LittleEndian.Uint64(saved[len(checkpointMagic):]))
	var head checkpointFile
	if err := gob.NewDecoder(bytes.NewReader(saved[len(checkpointMagic)+8 : at])).Decode(&head); err != nil {
		t.Fatal(err)
	}
	if !head.Streamed || head.State.Objective != nil {
		t.Fatalf("NIMGP's state is not streamed (Streamed %v, %d bytes in the header)", head.Streamed, len(head.State.Objective))
	}
	// Its progress reads from the header, whatever the stream holds.
	info, err := ReadCheckpointInfo(path)
	if err != nil || info.Epoch != 2 || info.Iterations != head.State.Iterations || len(info.History) != 2 || info.Saved.IsZero() {
		t.Fatalf("ReadCheckpointInfo: %+v, %v; want epoch 2 with its history", info, err)
	}
	garbled := slices.Clone(saved[:at])
	garbled[len(checkpointMagic)+8+3] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.ckpt")
	for _, b := range [][]byte{garbled, []byte("gpc-checkpoint 9\n"), nil} {
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadCheckpointInfo(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ReadCheckpointInfo of %q…: got %v, want an error naming the file", b[:min(len(b), 20)], err)
		}
	}
	if _, err := ReadCheckpointInfo(filepath.Join(t.TempDir(), "none.ckpt")); err == nil {
		t.Error("ReadCheckpointInfo of a missing file: no error")
	}
	resume := func(b []byte) (*Model, error) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return m, m.Fit(context.Background(), ds, FitConfig{Warnings: io.Discard, Checkpoint: &Checkpoint{Path: path}})
	}
	flipped := slices.Clone(saved)
	flipped[(at+len(saved)-trailerSize)/2] ^= 1
	if _, err := resume(flipped); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a flipped byte: got %v, want a checksum error naming %s", err, path)
	}
	if _, err := resume(saved[:len(saved)-1]); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a file cut short: got %v, want an error naming %s", err, path)
	}

	// Version 1: the objective's state in the gob with everything else.
	old := head
	old.Version, old.Streamed = 1, false
	old.State.Objective = slices.Clone(saved[at : len(saved)-trailerSize])
	var v1 bytes.Buffer
	if err := gob.NewEncoder(&v1).Encode(old); err != nil {
		t.Fatal(err)
	}
	m, err := resume(v1.Bytes())
	if err != nil {
		t.Fatalf("version 1: %v", err)
	}
	if !sameBits(paramValues(m), want) {
		t.Errorf("version 1: resumed parameters differ from the uninterrupted fit's")
	}
	m, err = resume(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(paramValues(m), want) {
		t.Errorf("resumed parameters differ from the uninterrupted fit's")
	}
}
