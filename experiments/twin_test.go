package experiments

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// twinSpec has MGP and NIMGP under the same injected noise, given and
// learned: MGP's two fits are the same fit, NIMGP's are not.
var twinSpec = strings.Replace(miniSpec, `  - {name: a, noise: 0.1}
  - {name: b, noise: 0.2}`, `  - {name: a, noise: 0.1}
  - {name: b, noise: 0.1, learn_noise: true, noise_init: 0.3}`, 1)

// A run whose fit another run of the grid already made is copied, with a
// note and SameAs, instead of being fitted again; the others are fitted.
func TestTwinRunsCopied(t *testing.T) {
	s, err := ParseSpec("twin.yaml", []byte(twinSpec))
	if err != nil {
		t.Fatal(err)
	}
	runs := Expand(s)
	twins := map[string]string{}
	for _, r := range runs {
		if r.Twin != "" {
			twins[r.Key] = r.Twin
			if r.Method.Name != "MGP" || r.Setting.Name != "b" {
				t.Errorf("%s has twin %s: only MGP under b should", r.Key, r.Twin)
			}
		}
	}
	if len(twins) != 3 {
		t.Fatalf("%d twins, want MGP's 3 splits under b", len(twins))
	}
	byKey := map[string]Run{}
	for _, r := range runs {
		byKey[r.Key] = r
	}
	for k, twin := range twins {
		for n := 2; n <= 5; n++ {
			if byKey[k].shard(n) != byKey[twin].shard(n) {
				t.Errorf("%s is in shard %d of %d, its twin in %d", k, byKey[k].shard(n), n, byKey[twin].shard(n))
			}
		}
	}
	var mu sync.Mutex
	fitted := map[string]bool{}
	fake := func(ctx context.Context, e *Env, r Run) (*Result, error) {
		mu.Lock()
		fitted[r.Key] = true
		mu.Unlock()
		if r.Method.Name == "MGP" && r.Setting.Name == "a" {
			time.Sleep(30 * time.Millisecond) // still running when its twin is handed out
		}
		return shardFake(ctx, e, r)
	}
	for _, workers := range []int{1, 4} {
		checkTwinsCopied(t, s, runs, twins, workers, fake, fitted, &mu)
	}
}

// checkTwinsCopied runs the grid on workers workers: with several, a twin
// is often handed out while its original is still running, and waits.
func checkTwinsCopied(t *testing.T, s *Spec, runs []Run, twins map[string]string, workers int,
	fake func(context.Context, *Env, Run) (*Result, error), fitted map[string]bool, mu *sync.Mutex) {
	t.Helper()
	mu.Lock()
	clear(fitted)
	mu.Unlock()
	dir := t.TempDir()
	sum, err := Execute(context.Background(), s, dir, RunConfig{Workers: workers, exec: fake})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != len(runs) || len(fitted) != len(runs)-3 {
		t.Fatalf("%d runs stored, %d fitted; want %d and %d", sum.Done, len(fitted), len(runs), len(runs)-3)
	}
	st, err := openStoreFor(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k, twin := range twins {
		if fitted[k] {
			t.Errorf("%s was fitted again", k)
		}
		got, want := st.done[k], st.done[twin]
		if got.SameAs != twin || got.Error != want.Error || got.NLL != want.NLL || got.Setting != "b" ||
			len(got.Notes) == 0 || !strings.Contains(got.Notes[len(got.Notes)-1], twin) {
			t.Errorf("%s: %+v, its twin %+v", k, got, want)
		}
	}
}

// The assumption behind twins, checked on real fits: MGP fitted under the
// given and the learned setting gives the same numbers.
func TestTwinFitsAreTheSameFit(t *testing.T) {
	if testing.Short() {
		t.Skip("fits models")
	}
	s, err := ParseSpec("twin.yaml", []byte(twinSpec))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(s, "")
	var got []*Result
	for _, r := range Expand(s) {
		if r.Method.Name == "MGP" && r.Split == 0 {
			res, err := executeRun(context.Background(), e, r)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res)
		}
	}
	if len(got) != 2 || got[0].Error != got[1].Error || got[0].NLL != got[1].NLL {
		t.Fatalf("MGP under the two settings: %+v and %+v", got[0], got[1])
	}
}

// One fit at a time, a run records the CPU time it used; several at once,
// none (the process's CPU time is then shared).
func TestRunCPUSeconds(t *testing.T) {
	s, err := ParseSpec("twin.yaml", []byte(twinSpec))
	if err != nil {
		t.Fatal(err)
	}
	spin := func(ctx context.Context, e *Env, r Run) (*Result, error) {
		x := 1.0
		for i := range 2_000_000 {
			x += math.Sqrt(float64(i) + x)
		}
		return &Result{Error: 0.1, NLL: x}, nil
	}
	for _, workers := range []int{1, 2} {
		dir := t.TempDir()
		if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: workers, exec: spin}); err != nil {
			t.Fatal(err)
		}
		st, err := openStoreFor(dir, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range st.done {
			switch {
			case r.SameAs != "":
			case workers == 1 && !(r.CPUSeconds > 0 && r.CPUSeconds < 10):
				t.Errorf("one worker: %s used %v s of CPU", k, r.CPUSeconds)
			case workers == 2 && r.CPUSeconds != 0:
				t.Errorf("two workers: %s records %v s of CPU", k, r.CPUSeconds)
			}
		}
	}
}
