package experiments

import (
	"os"
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
}
