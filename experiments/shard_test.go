package experiments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shardFake is a deterministic run: its numbers depend on the run alone,
// so a sharded grid must store exactly what a single process stores.
func shardFake(ctx context.Context, _ *Env, r Run) (*Result, error) {
	select {
	case <-time.After(time.Duration(1+r.Split%3) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h := ShardOf(r.Key, 1000)
	return &Result{Error: float64(h) / 1000, NLL: float64(r.Split) + float64(len(r.Method.Name))}, nil
}

// TestShardHelperProcess is one shard runner, started by TestShards as a
// separate process; it does nothing in a normal test run.
func TestShardHelperProcess(t *testing.T) {
	if os.Getenv("GPC_SHARD_HELPER") != "1" {
		t.Skip("helper process for TestShards")
	}
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	i, _ := strconv.Atoi(os.Getenv("GPC_SHARD"))
	n, _ := strconv.Atoi(os.Getenv("GPC_SHARDS"))
	die, _ := strconv.Atoi(os.Getenv("GPC_SHARD_DIE_AFTER"))
	_, err = Execute(context.Background(), s, os.Getenv("GPC_SHARD_DIR"), RunConfig{Workers: 2, Shard: i, Shards: n, exec: shardFake,
		afterAppend: func(k int) {
			if k == die {
				syscall.Kill(os.Getpid(), syscall.SIGKILL) // as a cluster's preemption would
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShards runs the mini grid as three concurrent shard processes, one
// of them killed after two runs and then resumed, and checks that the
// merged results equal a single-process run's, with no run stored twice.
func TestShards(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	single := t.TempDir()
	if _, err := Execute(context.Background(), s, single, RunConfig{Workers: 2, exec: shardFake}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func(i, dieAfter int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShardHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GPC_SHARD_HELPER=1", "GPC_SHARD_DIR="+dir, "GPC_SHARD="+strconv.Itoa(i), "GPC_SHARDS=3",
			"GPC_SHARD_DIE_AFTER="+strconv.Itoa(dieAfter))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := 1; i <= 3; i++ {
		die := 0
		if i == 2 {
			die = 2
		}
		cmd := start(i, die)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Wait()
		}()
	}
	wg.Wait()
	if errs[1] != nil || errs[3] != nil {
		t.Fatalf("shards 1 and 3: %v, %v", errs[1], errs[3])
	}
	if ee, ok := errs[2].(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("shard 2 should have been killed, got %v", errs[2])
	}
	killed, err := openStoreFor(dir, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	before := len(killed.done)
	if err := start(2, 0).Wait(); err != nil {
		t.Fatalf("resumed shard 2: %v", err)
	}

	want, err := openStore(single)
	if err != nil {
		t.Fatal(err)
	}
	got, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.done) != 12 || len(got.done) != len(want.done) || len(got.bad) != 0 {
		t.Fatalf("single process stored %d runs, shards %d (%d unreadable lines); after the kill %d", len(want.done), len(got.done), len(got.bad), before)
	}
	for k, w := range want.done {
		g, ok := got.done[k]
		if !ok || g.Error != w.Error || g.NLL != w.NLL || g.Split != w.Split || g.Method != w.Method {
			t.Fatalf("run %s: shards stored %+v (present %v), single process %+v", k, g, ok, w)
		}
	}
	// Every run is in exactly one file, its shard's.
	lines := 0
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(resultsFile(dir, i, 3))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			lines++
			if !strings.Contains(l, fmt.Sprintf(`"key":"`)) {
				t.Fatalf("shard %d: odd line %q", i, l)
			}
		}
	}
	if lines != 12 {
		t.Fatalf("%d result lines over the shard files, want 12", lines)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.jsonl")); err == nil {
		t.Fatal("sharded runners wrote results.jsonl")
	}
}

// A second runner on the same results file stops at once with a message
// naming the file; a runner of another shard is not blocked.
func TestLockStopsSecondRunner(t *testing.T) {
	s, dir, _, finish := blockedRunner(t)
	_, err := Execute(context.Background(), s, dir, RunConfig{Workers: 1, exec: shardFake})
	var setup *SetupError
	if err == nil || !strings.Contains(err.Error(), "another `gpc experiment run` is writing") || !strings.Contains(err.Error(), "results.jsonl") || !errorsAs(err, &setup) {
		t.Fatalf("second runner: %v", err)
	}
	if _, err := Execute(context.Background(), s, dir, RunConfig{Workers: 1, Shard: 1, Shards: 2, exec: shardFake}); err != nil {
		t.Fatalf("a shard beside the unsharded runner: %v", err)
	}
	finish()
}

// blockedRunner starts an unsharded runner of the mini spec in a new
// directory and returns once its one worker is inside its first run (key
// first), where it stays until finish, which waits for the runner's end.
func blockedRunner(t *testing.T) (s *Spec, dir, first string, finish func()) {
	t.Helper()
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := func(ctx context.Context, e *Env, r Run) (*Result, error) {
		once.Do(func() { first = r.Key; close(started) })
		<-release
		return shardFake(ctx, e, r)
	}
	done := make(chan error)
	go func() {
		_, err := Execute(context.Background(), s, dir, RunConfig{Workers: 1, exec: slow})
		done <- err
	}()
	<-started
	return s, dir, first, func() {
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Unreadable result lines are named, with their file and line, and redone.
func TestUnreadableResultLinesAreReported(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte("\x00\x9f garbage\n{\"key\": 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sum, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2, exec: shardFake, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 12 || !strings.Contains(log.String(), "results.jsonl:1: ") || !strings.Contains(log.String(), "results.jsonl:2: ") {
		t.Fatalf("%+v\n%s", sum, log.String())
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// Hostile specs stop at validation with the offending line (issue 14, 5).
func TestHostileSpecs(t *testing.T) {
	cases := []struct{ edit, want string }{
		{strings.Replace(miniSpec, "name: mini", "name: ../../x", 1), `mini.yaml:1:7: name "../../x": use letters`},
		{strings.Replace(miniSpec, "lr: 0.01", "lr: .inf", 1), "mini.yaml:7:37: .inf is not a finite number"},
		{strings.Replace(miniSpec, "lr: 0.01", "lr: .NaN", 1), "mini.yaml:7:37: .NaN is not a finite number"},
		{strings.Replace(miniSpec, "lr: 0.01", "lr: -.NaN", 1), "line 7"},
		{strings.Replace(miniSpec, "lr: 0.01", "lr: 1e999", 1), "line 7"},
		{strings.Replace(miniSpec, "datasets: [toy]", "datasets: [toy, toy]", 1), `mini.yaml:5:17: data set "toy" is listed twice`},
		{strings.Replace(miniSpec, "splits: 3,", "splits: 100000000,", 1), "mini.yaml:6:20: the grid would hold 4e+08 runs"},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := ParseSpec("mini.yaml", []byte(c.edit))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%q took %v", c.want, time.Since(start))
		}
	}
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(s, Options{Splits: 100_000_000}); err == nil || !strings.Contains(err.Error(), "from --splits") {
		t.Fatalf("--splits 1e8: %v", err)
	}
}

// A shard runner beside an unsharded one on the same directory leaves the
// run the other is fitting to it (the other holds that run's lock) and fits
// the rest of its share; no lock file is left when both are done.
func TestRunLockLeavesARunToItsRunner(t *testing.T) {
	s, dir, first, finish := blockedRunner(t)
	var mu sync.Mutex
	fitted := map[string]bool{}
	counting := func(ctx context.Context, e *Env, r Run) (*Result, error) {
		mu.Lock()
		fitted[r.Key] = true
		mu.Unlock()
		return shardFake(ctx, e, r)
	}
	var log strings.Builder
	sum, err := Execute(context.Background(), s, dir, RunConfig{Workers: 2, Shard: ShardOf(first, 2), Shards: 2, exec: counting, Log: &log})
	if err != nil || sum.Busy != 1 || fitted[first] || !strings.Contains(log.String(), "left "+first+" to another runner") {
		t.Fatalf("shard beside the runner fitting %s: %+v, %v, fitted it: %v\n%s", first, sum, err, fitted[first], log.String())
	}
	if sum.Done+sum.Busy != sum.Total-sum.Skipped || sum.Done == 0 {
		t.Fatalf("the shard did not fit the rest of its share: %+v", sum)
	}
	finish()
	if locks, _ := filepath.Glob(filepath.Join(dir, checkpointDir, "*.lock")); len(locks) != 0 {
		t.Errorf("lock files left: %v", locks)
	}
}

// A run that another runner (here a shard's file written while this runner
// works) finished after this runner made its list of runs to do is not fit
// again: the runner reads it when it takes the run's lock, logs it, and
// its own results file does not get a second line for it.
func TestRunFinishedElsewhereIsNotRefit(t *testing.T) {
	s, err := ParseSpec("mini.yaml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "results.shard-1-of-2.jsonl")
	var mu sync.Mutex
	fitted := map[string]bool{}
	var once sync.Once
	elsewhere := func(ctx context.Context, e *Env, r Run) (*Result, error) {
		mu.Lock()
		fitted[r.Key] = true
		mu.Unlock()
		// While the first run is fitted, "another runner" stores every other
		// run of the grid.
		once.Do(func() {
			f, err := os.Create(other)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for _, o := range Expand(e.spec) {
				if o.Key != r.Key {
					fmt.Fprintf(f, "{\"key\":%q,\"error\":0.5,\"nll\":1}\n", o.Key)
				}
			}
		})
		return shardFake(ctx, e, r)
	}
	var log strings.Builder
	sum, err := Execute(context.Background(), s, dir, RunConfig{Workers: 1, exec: elsewhere, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(fitted) != 1 || sum.Done != 1 || !strings.Contains(log.String(), "was finished by another runner") {
		t.Fatalf("fitted %d runs (%+v), want only the first\n%s", len(fitted), sum, log.String())
	}
	own, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(own, []byte("\n")); n != 1 {
		t.Errorf("results.jsonl has %d lines, want the first run's only", n)
	}
	if locks, _ := filepath.Glob(filepath.Join(dir, checkpointDir, "*.lock")); len(locks) != 0 {
		t.Errorf("lock files left: %v", locks)
	}
}

// finishedElsewhere reads another runner's file on from where it stopped:
// a line appended later is found, and a line still being written is taken
// only once its newline is there.
func TestFinishedElsewhereReadsOn(t *testing.T) {
	dir := t.TempDir()
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "results.shard-1-of-2.jsonl")
	appendTo := func(text string) {
		f, err := os.OpenFile(other, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	appendTo("{\"key\":\"a\",\"nll\":1}\n")
	if r, ok := st.finishedElsewhere("a"); !ok || r.NLL != 1 {
		t.Fatalf("a: %v %v", r, ok)
	}
	appendTo("{\"key\":\"b\",\"nl")
	if _, ok := st.finishedElsewhere("b"); ok {
		t.Fatal("b taken from a line still being written")
	}
	appendTo("l\":2}\n")
	if r, ok := st.finishedElsewhere("b"); !ok || r.NLL != 2 {
		t.Fatalf("b once complete: %v %v", r, ok)
	}
	if _, ok := st.finishedElsewhere("c"); ok {
		t.Fatal("c was never stored")
	}
}
