// Command perfdoc regenerates docs/PERFORMANCE.md's tables from a
// benchmark run: it runs `go test -bench` for a fixed set of the project's
// benchmarks (training steps, prediction, the matrix kernels, special
// functions), parses their output and rewrites the block between
// <!-- perfdoc:begin --> and <!-- perfdoc:end --> with one table per group
// and the machine, Go version, commit and flags of the run. Nothing in the
// block is written by hand.
//
//	go run ./cmd/perfdoc                      # the default -benchtime, into docs/PERFORMANCE.md
//	go run ./cmd/perfdoc -benchtime 3x -groups steps,gemm
//	go run ./cmd/perfdoc -print               # to standard output only
//
// Run it from the repository's root on a quiet machine: the numbers are
// the machine's, with whatever else it was running.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// group is one table: the benchmarks matching Regex in Package.
type group struct {
	Key, Title, Package, Regex, Note string
}

// groups are the benchmarks the document reports, in its order.
var groups = []group{
	{"steps", "Training step (ELBO forward and backward pass and the optimiser's update), one model at a time", "./models",
		"^Benchmark(StepWaveform|StepSynthetic|StepAstro|StepMNIST|StepSVGP|StepUCI)$",
		"The papers' shapes: waveform (B=50, M=50, C=3, d=21, SE), synthetic (B=200, M=100, C=3, d=2), astro (B=50, M=100, C=3, d=6), MNIST (B=200, M=100, C=10, d=784, polynomial), SVGP (binary), UCI (B=1024, M=300, d=20; C=2 or 10; SE or Matérn-5/2 + RBF)."},
	{"predict", "Prediction", "./models", "^Benchmark(PredictMC|PredictMCPerDraw)$",
		"NIMGP's and NIMGP_NN's Monte Carlo prediction of the 1-D toy's test rows (S draws of each)."},
	{"gemm", "Matrix products and triangular routines (graph/internal/gemm against gonum)", "./graph/internal/gemm",
		"^Benchmark(Dgemm|GonumDgemm|DgemmTri|Dtrsm|Dtrmm|MicroKernel)$",
		"gpc's packed, cache-blocked kernels (AVX2/FMA, AVX-512 where present) beside gonum's Dgemm on the same shapes."},
	{"graph", "Graph ops: Cholesky and its reverse pass, special functions", "./graph",
		"^Benchmark(Cholesky|CholGrad|NormCDF|LogNormCDFTable|MillsTail|Exp|ExpQuadRows)$", ""},
	{"local", "Per-row parameter tables (NIMGP's q(x_i))", "./layers/local", "^Benchmark(DenseRowAdam|DenseRowAdamOwing300)$",
		"The dense row-wise Adam update, rows settled when read."},
}

const (
	begin = "<!-- perfdoc:begin -->"
	end   = "<!-- perfdoc:end -->"
)

func main() {
	out := flag.String("out", "docs/PERFORMANCE.md", "the markdown `file` whose block to rewrite")
	benchtime := flag.String("benchtime", "1s", "go test -benchtime for every benchmark")
	only := flag.String("groups", "", "comma-separated `groups` to run (default all: steps, predict, gemm, graph, local)")
	print := flag.Bool("print", false, "print the block instead of rewriting -out")
	flag.Parse()
	var chosen []group
	for _, g := range groups {
		if *only == "" || strings.Contains(","+*only+",", ","+g.Key+",") {
			chosen = append(chosen, g)
		}
	}
	if len(chosen) == 0 {
		fmt.Fprintf(os.Stderr, "perfdoc: no group matches %q\n", *only)
		os.Exit(2)
	}
	var runs []run
	for _, g := range chosen {
		fmt.Fprintf(os.Stderr, "perfdoc: %s: go test -run '^$' -bench '%s' -benchtime %s %s\n", g.Key, g.Regex, *benchtime, g.Package)
		cmd := exec.Command("go", "test", "-run", "^$", "-bench", g.Regex, "-benchtime", *benchtime, "-benchmem", "-count", "1", g.Package)
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "perfdoc: %s: %v\n%s", g.Key, err, stdout.String())
			os.Exit(1)
		}
		r := parse(&stdout)
		r.group = g
		runs = append(runs, r)
	}
	block := render(runs, *benchtime, *only)
	if *print {
		fmt.Print(block)
		return
	}
	doc, err := os.ReadFile(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
	updated, err := splice(string(doc), block)
	if err != nil {
		fmt.Fprintf(os.Stderr, "perfdoc: %s: %v\n", *out, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(updated), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "perfdoc: rewrote %s\n", *out)
}

// result is one benchmark line.
type result struct {
	name    string
	iters   int
	metrics []metric
}

type metric struct {
	value float64
	unit  string
}

// run is one go test -bench's parsed output.
type run struct {
	group   group
	cpu     string
	results []result
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output: the cpu: line and every Benchmark
// line's name, iterations and value–unit pairs.
func parse(r io.Reader) run {
	var out run
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, "cpu: "); ok {
			out.cpu = strings.TrimSpace(c)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		res := result{name: procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), ""), iters: n}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			res.metrics = append(res.metrics, metric{v, f[i+1]})
		}
		out.results = append(out.results, res)
	}
	return out
}

// duration prints nanoseconds in the unit that reads best.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

func number(v float64) string {
	if v == float64(int64(v)) && v < 1e12 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// render writes the generated block: how it was made, then a table per group.
func render(runs []run, benchtime, only string) string {
	var b strings.Builder
	commit := "unknown"
	if c, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(c))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
			commit += " with local changes"
		}
	}
	cpu := ""
	for _, r := range runs {
		if r.cpu != "" {
			cpu = r.cpu
		}
	}
	flags := "-benchtime " + benchtime
	if only != "" {
		flags += " -groups " + only
	}
	load := ""
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(l)); len(f) >= 3 {
			load = fmt.Sprintf(" The machine's load average when the tables were written was %s (1 min), %s (5 min), %s (15 min): on a machine shared with other work, times scale with the load.", f[0], f[1], f[2])
		}
	}
	fmt.Fprintf(&b, "Generated by `go run ./cmd/perfdoc %s` on %s: commit %s, %s, %s/%s, %d CPUs (GOMAXPROCS %d), CPU %q. Each benchmark ran once (`-count 1`) beside whatever else the machine ran; rerun the command to refresh every table.%s\n",
		flags, time.Now().UTC().Format("2006-01-02"), commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cpu, load)
	for _, r := range runs {
		fmt.Fprintf(&b, "\n### %s\n\n", r.group.Title)
		if r.group.Note != "" {
			fmt.Fprintf(&b, "%s `go test -bench '%s' %s`.\n\n", r.group.Note, r.group.Regex, r.group.Package)
		} else {
			fmt.Fprintf(&b, "`go test -bench '%s' %s`.\n\n", r.group.Regex, r.group.Package)
		}
		// Columns: time per op, then every other unit in order of appearance.
		var units []string
		seen := map[string]bool{"ns/op": true}
		for _, res := range r.results {
			for _, m := range res.metrics {
				if !seen[m.unit] {
					seen[m.unit] = true
					units = append(units, m.unit)
				}
			}
		}
		b.WriteString("| benchmark | time per op |")
		sep := "|---|---|"
		for _, u := range units {
			b.WriteString(" " + u + " |")
			sep += "---|"
		}
		b.WriteString(" iterations |\n" + sep + "---|\n")
		for _, res := range r.results {
			vals := map[string]float64{}
			for _, m := range res.metrics {
				vals[m.unit] = m.value
			}
			t := "—"
			if v, ok := vals["ns/op"]; ok {
				t = duration(v)
			}
			fmt.Fprintf(&b, "| %s | %s |", res.name, t)
			for _, u := range units {
				if v, ok := vals[u]; ok {
					fmt.Fprintf(&b, " %s |", number(v))
				} else {
					b.WriteString(" — |")
				}
			}
			fmt.Fprintf(&b, " %d |\n", res.iters)
		}
		if len(r.results) == 0 {
			b.WriteString("| (no benchmark matched) | — | — |\n")
		}
	}
	return b.String()
}

// splice replaces the text between the markers.
func splice(doc, block string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s … %s block", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + block + doc[j:], nil
}
