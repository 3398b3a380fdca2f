package experiments

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/solvers"
)

// TestEpochsWithFloor checks the epoch count the min_steps floor gives for
// small and large training sets, and that its steps per epoch are exactly
// the minibatches the training loop steps through (solvers.EpochBatches).
func TestEpochsWithFloor(t *testing.T) {
	cases := []struct{ epochs, minSteps, n, batch, want int }{
		{40, 200, 100, 100, 200}, // T13/T14 quick, N = 100: one batch per epoch
		{40, 200, 500, 100, 40},  // N = 500: 5 steps per epoch, 40 epochs already give 200
		{40, 200, 1000, 100, 40}, // N = 1000: 400 steps, floor inactive
		{40, 200, 250, 100, 67},  // 3 steps per epoch (the last batch short): ⌈200/3⌉
		{40, 200, 60, 100, 200},  // batch > N: one full batch per epoch
		{40, 0, 100, 100, 40},    // no floor
		{40, 200, 300, 100, 67},  // MGP (aug.) at N = 100: triple set, 3 steps
		{750, 200, 100, 200, 750},
	}
	for _, c := range cases {
		if got := epochsWithFloor(c.epochs, c.minSteps, c.n, c.batch); got != c.want {
			t.Errorf("epochsWithFloor(epochs %d, min_steps %d, N %d, batch %d) = %d, want %d",
				c.epochs, c.minSteps, c.n, c.batch, got, c.want)
		}
	}
	for n := 1; n <= 40; n++ {
		for b := 1; b <= 45; b++ {
			bs, err := solvers.EpochBatches(n, b, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []int{1, 7, 40, 101} {
				e := epochsWithFloor(1, m, n, b)
				if e*len(bs) < m || (e > 1 && (e-1)*len(bs) >= m) {
					t.Fatalf("N %d, batch %d (%d batches per epoch), min_steps %d: %d epochs is not the least enough",
						n, b, len(bs), m, e)
				}
			}
		}
	}
}

// TestMinStepsTrainsRealRuns runs the real executor on a tiny toy spec and
// checks the epochs the training loop actually ran: with batch 5 and
// min_steps 7, N = 10 (2 steps per epoch) trains 4 epochs, N = 40 (8
// steps) keeps its 1 epoch, and MGP (aug.) at N = 10 counts the tripled set
// (6 steps per epoch, 2 epochs).
func TestMinStepsTrainsRealRuns(t *testing.T) {
	spec := strings.NewReplacer(
		"epochs: 1,", "epochs: 1, min_steps: 7,",
		"splits: 3,", "splits: 1,",
		"{name: a, noise: 0.1}", "{name: a, noise: 0.1, n_train: 10}",
		"{name: b, noise: 0.2}", "{name: b, noise: 0.2, n_train: 40}",
		"{name: NIMGP, kind: nimgp}", "{name: MGP_aug, kind: mgp, variant: augmented}",
		`values: ["1±0.1", "2"]`, `values: ["1±0.1", "2"]`,
	).Replace(miniSpec)
	s, err := ParseSpec("mini.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2}); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a/MGP": 4, "b/MGP": 1, "a/MGP_aug": 2, "b/MGP_aug": 1}
	got := map[string]int{}
	for _, r := range st.results() {
		got[r.Setting+"/"+r.Method] = r.Epochs
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s trained %d epochs, want %d (all: %v)", k, got[k], w, got)
		}
	}
}

// TestMinStepsKeys checks that the floor is part of the run key, from the
// spec or from the quick profile, while a budget without it keeps the key
// it had before min_steps existed (golden keys), so results.jsonl files
// written then are still skipped on a rerun.
func TestMinStepsKeys(t *testing.T) {
	if b, _ := json.Marshal(Budget{Epochs: 3}); strings.Contains(string(b), "min_steps") {
		t.Errorf("a budget without min_steps hashes a new field: %s", b)
	}
	keys := func(src string, o Options) []string {
		t.Helper()
		s, err := ParseSpec("mini.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Resolve(s, o)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, run := range Expand(r) {
			ks = append(ks, run.Key)
		}
		return ks
	}
	// Keys of the mini spec computed before min_steps was added.
	plain := keys(miniSpec, Options{})
	if plain[0] != "toy|a|MGP|0|a3e376a4" || plain[1] != "toy|a|NIMGP|0|ddcee319" {
		t.Fatalf("keys without min_steps changed: %v", plain[:2])
	}
	// NIMGP's key changed when TensorFlow's dense Adam for q(x_i) became
	// the default (its old results were trained lazily); asking for the
	// lazy update gives the old key back, so those results are reused.
	if lazy := keys(strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, local_adam: lazy,", 1), Options{}); lazy[0] != plain[0] || lazy[1] != "toy|a|NIMGP|0|f59c590f" {
		t.Fatalf("keys with local_adam: lazy: %v", lazy[:2])
	}
	zero := keys(strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, min_steps: 0,", 1), Options{})
	if zero[0] != plain[0] {
		t.Errorf("min_steps: 0 changed the key: %s vs %s", zero[0], plain[0])
	}
	floor := keys(strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, min_steps: 7,", 1), Options{})
	if floor[0] == plain[0] {
		t.Error("min_steps does not change the run key")
	}
	other := keys(strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, min_steps: 8,", 1), Options{})
	if other[0] == floor[0] {
		t.Error("min_steps 7 and 8 share a run key")
	}
	quick := miniSpec + "quick: {epochs: 1, min_steps: 7}\n"
	if q, p := keys(quick, Options{Quick: true}), keys(quick, Options{}); q[0] != floor[0] || p[0] != plain[0] {
		t.Errorf("quick min_steps: keys %s (quick) and %s (full), want %s and %s", q[0], p[0], floor[0], plain[0])
	}
	// --epochs-scale scales the floor with the epochs.
	s, err := ParseSpec("mini.yaml", []byte(strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, min_steps: 7,", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(s, Options{EpochsScale: 3})
	if err != nil {
		t.Fatal(err)
	}
	if b := Expand(r)[0].Budget; b.Epochs != 3 || b.MinSteps != 21 {
		t.Errorf("--epochs-scale 3: epochs %d, min_steps %d; want 3 and 21", b.Epochs, b.MinSteps)
	}
	if !strings.Contains(r.Budget, "at least 21 optimiser steps") {
		t.Errorf("budget line %q does not state the floor", r.Budget)
	}
}

// TestMinStepsValidation checks that bad floors are errors at their line.
func TestMinStepsValidation(t *testing.T) {
	active, err := os.ReadFile("active_learning.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ src, want string }{
		{strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, min_steps: -1,", 1), "mini.yaml:7:34: min_steps -1 must be ≥ 0"},
		{miniSpec + "quick: {epochs: 2, min_steps: -3}\n", "mini.yaml:20:31: quick min_steps -3 must be ≥ 0"},
		{strings.Replace(miniSpec, "epochs: 1,", "epochs: 1, min_step: 10,", 1), "line 7: field min_step not found"},
		{strings.Replace(string(active), "  step_epochs: 1000\n", "  step_epochs: 1000\n  min_steps: 100\n", 1),
			"active_learning.yaml:22:14: min_steps does not apply to the active family"},
	}
	for i, c := range cases {
		file := "mini.yaml"
		if strings.Contains(c.want, "active_learning") {
			file = "active_learning.yaml"
		}
		_, err := ParseSpec(file, []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want it to contain %q", i, err, c.want)
		}
	}
}
