package experiments

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const usage = `usage:
  gpc experiment run SPEC.yaml [--out DIR] [--splits K] [--epochs-scale F]
                     [--methods a,b] [--datasets x,y] [--settings s,t]
                     [--workers W] [--data-dir D] [--quick] [--dry-run]
                     [--shard i/n]
  gpc experiment report DIR [--data-dir D]
  gpc experiment splice FILE.md [--root R] [--data-dir D]
  gpc experiment scoreboard [--root R] [--data-dir D]
  gpc experiment compare SPEC.yaml [--out DIR] [--data-dir D] [--report-only]

run expands the spec's grid (data sets × settings × methods × splits), runs
it on W parallel workers (while as many fits run as there are cores, each
keeps to one core) and appends one JSON line per finished run to
DIR/results.jsonl (default DIR: out/<spec name>, or out/<spec name>-quick
with --quick). Rerunning the same command skips the finished runs, so an
interrupted experiment resumes without losing or repeating work (a run
that is the same fit as an earlier one of the grid, the settings differing
only in what its method does not read, is copied from it, noted same_as); a
minibatch fit under way checkpoints to DIR/checkpoints/ every
protocol.checkpoint_minutes and, on SIGTERM or Ctrl-C, at the end of its
current epoch, logging its epoch and pace each time, and the rerun
continues it from there. It then
writes DIR/report.md, DIR/report.json and the spec's figures (PNG).
report re-renders them from DIR/results.jsonl.
With --shard i/n a runner takes a fixed share of the grid (by a hash of
each run's key) and appends to DIR/results.shard-i-of-n.jsonl: n runners,
on one machine or as the tasks of a cluster job array sharing DIR, run the
whole grid, each resumable on its own; report merges every results file.
Several runners on one machine share its cores best with
GOMAXPROCS=cores/runners set for each (two T11 runners on two cores: 10%
more fits an hour with GOMAXPROCS=1).
A lock stops a second runner on the same results file, and each run's lock
stops runners of other shardings on the same DIR from fitting a run at once
(the run is left to the runner fitting it).
--dry-run checks the spec and prints the grid's size (the shard's with
--shard) and, when DIR holds results, how many of those runs are done,
the CPU time the rest need at each method's median over its finished fits,
and, for each fit with a checkpoint, its epoch, when it was saved and the
time its remaining epochs take at the pace of its last ones (read only:
runners under way are not disturbed).
splice rewrites the generated blocks of a markdown file (such as
docs/REPRODUCTION.md): <!-- gpc:table DIR ID --> … <!-- gpc:end --> gets
table ID of the results in DIR (relative to R, default .) with its computed
verdict, <!-- gpc:rule --> … <!-- gpc:end --> the verdict rule,
<!-- gpc:scoreboard --> … <!-- gpc:end --> the scoreboard.
scoreboard prints the scoreboard: every table and figure of the papers
(experiments/scoreboard.go), the budget run and the verdict computed from
the committed results under R/experiments/results.
compare runs an approximation-against-MCMC comparison spec (see
experiments.CompareSpec and experiments/compare_binary.yaml).
`

// Main is the `gpc experiment` command: args are the words after
// "experiment". It returns the process exit code (0 ok, 1 failure, 2 usage).
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "run":
		return mainRun(ctx, args[1:], stdout, stderr)
	case "report":
		return mainReport(ctx, args[1:], stdout, stderr)
	case "splice":
		return mainSplice(args[1:], stdout, stderr)
	case "scoreboard":
		return mainScoreboard(args[1:], stdout, stderr)
	case "compare":
		return mainCompare(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "gpc experiment: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// parseInterleaved parses flags that may come before or after positional
// arguments (the flag package stops at the first positional one).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func mainRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpc experiment run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output directory (default out/<spec name>[-quick])")
	splits := fs.Int("splits", 0, "number of splits/repetitions (default: the spec's)")
	scale := fs.Float64("epochs-scale", 1, "multiply every epoch budget by F")
	methods := fs.String("methods", "", "comma-separated methods to run (default all)")
	dsets := fs.String("datasets", "", "comma-separated data sets to run (default all)")
	sets := fs.String("settings", "", "comma-separated settings to run (default all)")
	workers := fs.Int("workers", runtime.NumCPU(), "parallel runs")
	dataDir := fs.String("data-dir", "", "data directory (default: $GPC_DATA, ../shared/data, ./data)")
	quick := fs.Bool("quick", false, "use the spec's quick profile")
	dry := fs.Bool("dry-run", false, "validate the spec, print the grid size and exit")
	shard := fs.String("shard", "", "run only share `i/n` of the grid (1 ≤ i ≤ n), into DIR's results.shard-i-of-n.jsonl")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "gpc experiment run: want one SPEC.yaml, got %d arguments\n\n%s", len(pos), usage)
		return 2
	}
	if *splits < 0 || !(*scale > 0) || *workers < 1 {
		fmt.Fprintln(stderr, "gpc experiment run: --splits must be ≥ 0, --epochs-scale > 0 and --workers ≥ 1")
		return 2
	}
	si, sn, err := parseShard(*shard)
	if err != nil {
		fmt.Fprintf(stderr, "gpc experiment run: %v\n", err)
		return 2
	}
	spec, err := LoadSpec(pos[0])
	if err != nil {
		if _, cerr := ReadCompareSpec(pos[0]); cerr == nil {
			fmt.Fprintf(stderr, "gpc experiment run: %s is a comparison spec; run it with gpc experiment compare %s\n", pos[0], pos[0])
			return 2
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	rs, err := Resolve(spec, Options{Splits: *splits, EpochsScale: *scale, Methods: splitList(*methods), Datasets: splitList(*dsets), Settings: splitList(*sets), Quick: *quick})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", pos[0], err)
		return 1
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("out", rs.Name)
		if *quick {
			dir += "-quick"
		}
	}
	if *dry {
		// The size is counted, not expanded: Resolve has bounded it by
		// MaxRuns, but building that many runs takes seconds and memory
		// that --dry-run, a quick check, should not spend.
		fmt.Fprintf(stdout, "%s: %d runs = %d data sets × %d settings × %d methods × %d splits (%s)\n",
			rs.Name, len(rs.Datasets)*len(rs.Settings)*len(rs.Methods)*rs.Protocol.Splits, len(rs.Datasets), len(rs.Settings), len(rs.Methods), rs.Protocol.Splits, rs.Budget)
		files, _ := filepath.Glob(filepath.Join(dir, "results*.jsonl"))
		if sn <= 1 && len(files) == 0 {
			return 0
		}
		if sn > 1 {
			n := 0
			eachRun(rs, func(r Run) {
				if r.shard(sn) == si {
					n++
				}
			})
			fmt.Fprintf(stdout, "shard %d/%d: %d of them\n", si, sn, n)
		}
		if len(files) == 0 {
			return 0
		}
		runs := Expand(rs)
		if sn > 1 {
			runs = slices.DeleteFunc(runs, func(r Run) bool { return r.shard(sn) != si })
		}
		// Read only: the results files of runners under way are not locked.
		if len(files) > 0 {
			p, err := ReadProgress(dir, runs)
			if err != nil {
				fmt.Fprintf(stderr, "gpc experiment run: %v\n", err)
				return 1
			}
			for _, w := range p.Warnings {
				fmt.Fprintln(stderr, w)
			}
			fmt.Fprintf(stdout, "in %s: %v\n", dir, p)
			for _, f := range p.InProgress {
				fmt.Fprintf(stdout, "  checkpointed: %v\n", f)
			}
		}
		return 0
	}
	cfg := RunConfig{Workers: *workers, DataDir: *dataDir, Log: stderr, Shard: si, Shards: sn}
	if *methods != "" || *dsets != "" || *sets != "" {
		// The report covers the whole grid, not the part run now.
		if cfg.Grid, err = Resolve(spec, Options{Splits: *splits, EpochsScale: *scale, Quick: *quick}); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", pos[0], err)
			return 1
		}
	}
	sum, err := Execute(ctx, rs, dir, cfg)
	var setup *SetupError
	if errors.As(err, &setup) {
		fmt.Fprintf(stderr, "gpc experiment run: %v\n", err)
		return 1
	}
	reportStart := time.Now()
	// An interrupt stops the report too (a figure may draw a data set of
	// seconds again); `gpc experiment report DIR` writes it later.
	rerr := ReportContext(ctx, dir, *dataDir)
	if rerr != nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "report: not written (interrupted); gpc experiment report %s writes it\n", dir)
	} else if rerr != nil {
		fmt.Fprintf(stderr, "report: %v\n", rerr)
	}
	if rerr != nil && err == nil {
		err = rerr
	}
	busy := ""
	if sum.Busy > 0 {
		busy = fmt.Sprintf(", %d left to another runner fitting them", sum.Busy)
	}
	// A report that failed is not named as if it were there.
	report := "Report: " + filepath.Join(dir, "report.md")
	if st, err := os.Stat(filepath.Join(dir, "report.md")); rerr != nil && (err != nil || !st.Mode().IsRegular() || st.ModTime().Before(reportStart.Add(-time.Second))) {
		report = "No report written (see the error above)"
	} else if rerr != nil {
		report += " (incomplete: see the error above)"
	}
	fmt.Fprintf(stdout, "%s: %d runs: %d done now, %d skipped (already done), %d failed%s. %s\n",
		rs.Name, sum.Total, sum.Done, sum.Skipped, sum.Failed, busy, report)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "interrupted: finished runs are saved; rerun the same command to continue")
		} else {
			fmt.Fprintln(stderr, err)
		}
		return 1
	}
	return 0
}

func mainReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpc experiment report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "data directory (for generated tables and data figures)")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "gpc experiment report: want one DIR\n\n%s", usage)
		return 2
	}
	if st, err := openStore(pos[0]); err == nil {
		for _, w := range st.warnings() {
			fmt.Fprintln(stderr, w)
		}
	}
	if err := ReportContext(ctx, pos[0], *dataDir); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "gpc experiment report: interrupted; the report files are each whole, old or new\n")
		} else {
			fmt.Fprintln(stderr, err)
		}
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(pos[0], "report.md"), filepath.Join(pos[0], "report.json"))
	if miss, err := MissingRuns(pos[0]); err == nil && miss != "" {
		fmt.Fprintf(stdout, "incomplete: %s\n", miss)
	}
	return 0
}

func mainSplice(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpc experiment splice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "data directory (for generated tables)")
	root := fs.String("root", ".", "directory the blocks' results paths are relative to")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "gpc experiment splice: want one FILE\n\n%s", usage)
		return 2
	}
	changed, err := SpliceFile(pos[0], *root, *dataDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if changed {
		fmt.Fprintf(stdout, "rewrote the generated blocks of %s\n", pos[0])
	} else {
		fmt.Fprintf(stdout, "%s is up to date\n", pos[0])
	}
	return 0
}

func mainScoreboard(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpc experiment scoreboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "data directory (for generated tables)")
	root := fs.String("root", ".", "the repository, whose experiments/results the scoreboard reads")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) != 0 {
		return 2
	}
	md, err := ScoreboardMarkdown(*root, *dataDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprint(stdout, md)
	return 0
}

// parseShard reads --shard "i/n"; "" is no sharding (0, 0).
func parseShard(v string) (i, n int, err error) {
	if v == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(v, "/")
	i, e1 := strconv.Atoi(strings.TrimSpace(a))
	n, e2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || e1 != nil || e2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 1 ≤ i ≤ n, e.g. --shard 2/8", v)
	}
	return i, n, nil
}
