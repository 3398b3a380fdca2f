package svi

import (
	"bytes"
	"encoding/gob"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/layers/variational"
	"github.com/gpc-dev/gpc/solvers"
)

// latentObjective is a small NIMGP objective (latent q(x_i) rows with the
// dense row-wise Adam, a normal stream), stepped epochs epochs.
func latentObjective(t *testing.T, epochs int) *Objective {
	t.Helper()
	ds := &datasets.Dataset{Name: "blobs", N: 30, D: 1, C: 2, X: make([]float64, 30), Y: make([]int, 30)}
	for i := range ds.Y {
		ds.Y[i] = i % 2
		ds.X[i] = float64(i%2)*3 - 1.5 + float64(i%7)/7
	}
	lik := likelihoods.NewProbit()
	k := kernels.NewSE("se", 1, 1, 1, 1e-6)
	post, err := variational.New("q", variational.Config{Latent: lik.Latent(ds.C), M: 3, D: 1, Whitened: true, Jitter: 1e-6},
		[]kernels.Kernel{k}, [][]float64{{-1, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := post.InitPrior(); err != nil {
		t.Fatal(err)
	}
	in, err := inputs.New("latent", inputs.Config{Noise: inputs.NoiseConfig{Var: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Init(ds.D, ds.C, ds, 1); err != nil {
		t.Fatal(err)
	}
	for _, l := range in.Locals() {
		l.SetOptimizer(0.05, true)
	}
	params := slices.Concat(k.Params(), post.Params(), lik.Params(), in.Params())
	params = slices.DeleteFunc(params, func(p *layers.Param) bool { return p.Fixed })
	obj, err := New(Parts{C: ds.C, Likelihood: lik, Posterior: post, Inputs: in, Params: params}, ds, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { obj.Close() })
	for epoch := range epochs {
		batches, err := solvers.EpochBatches(ds.N, 10, 1, epoch)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			if _, _, err := obj.Step(b); err != nil {
				t.Fatal(err)
			}
			if err := obj.StepLocal(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	return obj
}

// legacyState is MarshalState as checkpoints of version 1 hold it: one gob
// of objectiveState.
func legacyState(t *testing.T, o *Objective) []byte {
	t.Helper()
	s := objectiveState{Jitter: o.Jitter()}
	for _, l := range o.locals {
		s.Locals = append(s.Locals, localState{Name: l.p.Name, State: l.p.State()})
	}
	for _, st := range o.streams {
		ss, err := st.state()
		if err != nil {
			t.Fatal(err)
		}
		s.Streams = append(s.Streams, ss)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An objective restored from the stream, or from the gob of version 1,
// holds the state of the one saved: its own stream is the same, byte for
// byte. A state of other tables is refused before anything changes.
func TestStateStreamAndLegacy(t *testing.T) {
	a := latentObjective(t, 3)
	want, err := a.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	for name, saved := range map[string][]byte{"stream": want, "version 1 gob": legacyState(t, a)} {
		b := latentObjective(t, 1)
		if err := b.UnmarshalState(saved); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := b.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the restored objective's state differs from the saved one's", name)
		}
	}
	c := latentObjective(t, 1)
	before, _ := c.MarshalState()
	renamed := bytes.Replace(want, []byte("qx/logvar"), []byte("qx/logvaR"), 1)
	if err := c.UnmarshalState(renamed); err == nil || !strings.Contains(err.Error(), "qx/logvaR in the state, qx/logvar in the objective") {
		t.Fatalf("got %v, want a refusal naming both tables", err)
	}
	if after, _ := c.MarshalState(); !bytes.Equal(after, before) {
		t.Errorf("a refused state changed the objective")
	}

	// A generator state that cannot be restored is refused before the
	// tables change.
	var bad objectiveState
	if err := gob.NewDecoder(bytes.NewReader(legacyState(t, a))).Decode(&bad); err != nil {
		t.Fatal(err)
	}
	bad.Streams[0].PCG = []byte("not a generator")
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(bad); err != nil {
		t.Fatal(err)
	}
	if err := c.UnmarshalState(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "normal stream 0") {
		t.Fatalf("got %v, want a refusal naming the stream", err)
	}
	if after, _ := c.MarshalState(); !bytes.Equal(after, before) {
		t.Errorf("a refused generator state changed the objective")
	}
}
