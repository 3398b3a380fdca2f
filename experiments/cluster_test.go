package experiments

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The cluster templates must name a spec that loads and shard it as many
// ways as they start tasks.
func TestClusterTemplates(t *testing.T) {
	b, err := os.ReadFile("cluster/k8s-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Parallelism    int    `yaml:"parallelism"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.CompletionMode != "Indexed" || job.Spec.Completions < 1 || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("job: %+v", job.Spec)
	}
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	m := regexp.MustCompile(`experiments/(\S+\.yaml).*--shard \$\(\(JOB_COMPLETION_INDEX \+ 1\)\)/(\d+)`).FindStringSubmatch(args)
	if m == nil {
		t.Fatalf("args %q: want a spec and --shard $((JOB_COMPLETION_INDEX + 1))/N", args)
	}
	if n, _ := strconv.Atoi(m[2]); n != job.Spec.Completions {
		t.Fatalf("--shard …/%d but %d completions", n, job.Spec.Completions)
	}
	if _, err := LoadSpec(m[1]); err != nil {
		t.Fatal(err)
	}
	sb, err := os.ReadFile("cluster/slurm.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sb), `--shard "$i/$n"`) || !strings.Contains(string(sb), "SLURM_ARRAY_TASK_ID") {
		t.Fatal("slurm.sbatch must run shard $SLURM_ARRAY_TASK_ID of the array's task count")
	}
	// The image the Job names is built by the Dockerfile its comment names:
	// a static gpc where the Job calls it, with the specs where it reads them.
	df, err := os.ReadFile("cluster/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/gpc", "/usr/local/bin/gpc", "experiments/*.yaml /gpc/experiments/", "WORKDIR /gpc"} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if !strings.Contains(string(b), "docker build -f experiments/cluster/Dockerfile") || !strings.Contains(string(b), "docker push") {
		t.Error("the Job's comment must say how to build and push its image")
	}
}

// TestSlurmArrayRanges runs slurm.sbatch as SLURM would run each task of
// arrays of 32 tasks numbered from 0, 1 and 5 (gpc replaced by a script that
// prints its arguments): every range must run shards 1/32 … 32/32, each
// once. A stepped array (its count not its range's size) is refused.
func TestSlurmArrayRanges(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "gpc")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("cluster/slurm.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	task := func(id, lo, hi, count int) (string, error) {
		cmd := exec.Command("bash", script, "experiments/t1_toy.yaml", "/results/t1", "--quick")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GPC="+fake, "GPC_DATA=/data",
			fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", id), fmt.Sprintf("SLURM_ARRAY_TASK_MIN=%d", lo),
			fmt.Sprintf("SLURM_ARRAY_TASK_MAX=%d", hi), fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%d", count),
			"SLURM_CPUS_PER_TASK=2")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stderr.String(), err
		}
		return stdout.String(), nil
	}
	shardArg := regexp.MustCompile(`--shard (\d+)/(\d+) `)
	for _, lo := range []int{0, 1, 5} {
		hi := lo + 31
		seen := map[int]int{}
		for id := lo; id <= hi; id++ {
			out, err := task(id, lo, hi, 32)
			if err != nil {
				t.Fatalf("--array=%d-%d task %d: %v: %s", lo, hi, id, err, out)
			}
			if !strings.HasPrefix(out, "experiment run experiments/t1_toy.yaml --out /results/t1 ") {
				t.Fatalf("task %d ran %q", id, out)
			}
			m := shardArg.FindStringSubmatch(out)
			if !strings.HasSuffix(strings.TrimSpace(out), "--data-dir /data --quick") {
				t.Fatalf("task %d did not pass on the extra flags: %q", id, out)
			}
			if m == nil || m[2] != "32" {
				t.Fatalf("--array=%d-%d task %d: %q, want --shard i/32", lo, hi, id, out)
			}
			i, _ := strconv.Atoi(m[1])
			seen[i]++
		}
		for i := 1; i <= 32; i++ {
			if seen[i] != 1 {
				t.Errorf("--array=%d-%d: shard %d/32 run %d times", lo, hi, i, seen[i])
			}
		}
	}
	// --array=0-62:2 is 32 tasks over a range of 63: refused, naming the fix.
	if out, err := task(2, 0, 62, 32); err == nil || !strings.Contains(out, "contiguous") {
		t.Fatalf("a stepped array ran: %v %q", err, out)
	}
	// Arguments out of order (no spec): refused, naming them.
	cmd0 := exec.Command("bash", script, "/results/t1", "--quick")
	cmd0.Env = append(os.Environ(), "GPC="+fake, "GPC_DATA=/data", "SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=2", "SLURM_ARRAY_TASK_COUNT=2")
	if out, err := cmd0.CombinedOutput(); err == nil || !strings.Contains(string(out), "want a spec file") {
		t.Fatalf("ran without a spec: %v %s", err, out)
	}
	// Not in an array: refused.
	cmd := exec.Command("bash", script, "experiments/t1_toy.yaml", "/results/t1")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GPC="+fake, "GPC_DATA=/data", "SLURM_ARRAY_TASK_ID=", "SLURM_ARRAY_TASK_MIN=", "SLURM_ARRAY_TASK_MAX=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "job array") {
		t.Fatalf("ran outside an array: %v %s", err, out)
	}
}

// TestMissingRunsNamesShards checks that an incomplete grid's report names
// the shards whose runs are missing, and those never started.
func TestMissingRunsNamesShards(t *testing.T) {
	dir := t.TempDir()
	var planned []Run
	for k := range 40 {
		planned = append(planned, Run{Key: fmt.Sprintf("run-%d", k)})
	}
	done := map[string]bool{}
	for _, r := range planned {
		done[r.Key] = true
	}
	if s := missingRuns(dir, planned, done); s != "" {
		t.Fatalf("complete grid: %q", s)
	}
	// Unsharded.
	delete(done, "run-3")
	if s := missingRuns(dir, planned, done); !strings.Contains(s, "1 of 40 runs") || !strings.Contains(s, "unsharded") {
		t.Fatalf("unsharded: %q", s)
	}
	// Shards 1-3 of 4 wrote files; shard 4's runs are all missing.
	for i := 1; i <= 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("results.shard-%d-of-4.jsonl", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done = map[string]bool{}
	want := 0
	for _, r := range planned {
		if r.shard(4) != 4 {
			done[r.Key] = true
		} else {
			want++
		}
	}
	s := missingRuns(dir, planned, done)
	if !strings.Contains(s, fmt.Sprintf("%d of 40 runs", want)) || !strings.Contains(s, fmt.Sprintf("4/4 (%s, never started)", plural(want, "run"))) || strings.Contains(s, "1/4") {
		t.Fatalf("shard 4 missing: %q", s)
	}
}
