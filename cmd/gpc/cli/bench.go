package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "bench", summary: "time one training iteration of each model", run: runBench})
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("bench", "gpc bench --model NAME|all [--config waveform|synthetic|mnist|uci2|uci10] [--iters K]",
		`Time one training iteration (ELBO forward and backward pass and an Adam step)
on random data of the shape of one of the papers' timing configurations:
waveform (batch 50, M = 50, C = 3, d = 21, SE kernel), synthetic (batch 200,
M = 100, C = 3, d = 2, SE kernel: the shape of most of its fits, Tables 2, 3,
11 and 12) or mnist (batch 200, M = 100, C = 10, d = 784, polynomial kernel)
of the noisy-input paper, uci2
or uci10 (batch 1024, M = 300, d = 20, SE kernel; C = 2 or 10) of the
additive-noise paper. The models are built first and
stepped in turn, so a drift in the machine's speed hits them alike. Prints
the median milliseconds per iteration per model, the interquartile spread,
the ratio to MGP when MGP is timed too (the median over rounds of the two
models' times in the same round, which cancels drifts in the machine's
speed), then the multiply-adds of the iteration's
matrix products (machine-independent: the ratio that time ratios tend to
once products dominate), the rate achieved, the heap allocations of an
iteration, and the share of the process's CPU time spent in matrix products
and triangular solves and products (read it on a quiet machine: a call's
time includes any wait for a core).`)
	model := f.String("model", "all", "model `NAME`: "+modelList()+", a comma-separated list of them, or all (the stepwise ones)")
	config := f.String("config", "waveform", "`configuration`: waveform, synthetic, mnist, uci2 or uci10")
	iters := f.Int("iters", 20, "timed `iterations` per model (after 2 warm-up iterations)")
	n := f.Int("n", 0, "training `rows` of random data (0: the configuration's; NIMGP's table of q(x_i) has one row per training row)")
	warmup := f.Int("warmup", 2, "untimed `iterations` before timing (NIMGP's deferred dense update settles in after an epoch, N/batch steps)")
	localAdam := f.String("local-adam", "dense", "NIMGP's per-row q(x_i) `update`: dense (every row at every step, as the authors' TensorFlow Adam; O(N·d)) or lazy (the batch's rows; O(B·d))")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	var kinds []string
	if *model == "all" {
		for _, p := range models.Presets() {
			// The non-sparse family (M = N) is timed on its own: at N = 1000
			// its step is 60× MGP's and would swamp the interleaving.
			if minibatchModel(p.Name) && p.Posterior != "full" {
				kinds = append(kinds, p.Name)
			}
		}
	} else {
		// A list (mgp,nimgp-fo) interleaves just those models: a ratio to
		// MGP without the minutes the other presets take.
		names := strings.Split(*model, ",")
		for _, name := range names {
			k, err := parseModel(strings.TrimSpace(name))
			if err != nil {
				return err
			}
			if !minibatchModel(k) {
				if len(names) > 1 {
					return usagef("--model %q: %s is timed per fit, on its own (--model %s)", *model, k, k)
				}
				// EP and the mean-field model fit by L-BFGS on the whole data
				// set: their cost is seconds per fit, not per minibatch step.
				return benchFits(ctx, stdout, k, *iters)
			}
			kinds = append(kinds, k)
		}
	}
	if _, ok := BenchConfigs[*config]; !ok {
		return usagef("unknown --config %q (want waveform, synthetic, mnist, uci2 or uci10)", *config)
	}
	if *iters < 1 {
		return usagef("--iters %d: need at least 1 iteration", *iters)
	}
	cfg := BenchConfigs[*config]
	if *localAdam != "dense" && *localAdam != "lazy" {
		return usagef("--local-adam %q (want dense or lazy)", *localAdam)
	}
	cfg.LocalAdam = *localAdam
	if *n != 0 {
		if *n < cfg.B {
			return usagef("--n %d: fewer rows than the batch of %d", *n, cfg.B)
		}
		if *n > maxBenchRows {
			return usagef("--n %d exceeds the limit of %d rows", *n, maxBenchRows)
		}
		// The random inputs and NIMGP's table of q(x_i) (means, variances
		// and their Adam moments) are n×d each, for every class count.
		if have, ok := models.MachineMemory(); ok {
			if need := uint64(*n) * uint64(cfg.D) * 8 * 8; need > have {
				return usagef("--n %d: %d rows of %d features need about %.1f GiB, more than this machine's %.1f GiB", *n, *n, cfg.D, float64(need)/(1<<30), float64(have)/(1<<30))
			}
		}
		cfg.N = *n
	}
	if *warmup < 1 {
		return usagef("--warmup %d: need at least 1 iteration", *warmup)
	}
	cfg.Warmup = *warmup
	fmt.Fprintf(stdout, "config %s: batch %d, M %d, C %d, d %d, %s kernel, N %d, %s q(x_i) updates; %d iterations per model after %d untimed, models interleaved\n", cfg.Name, cfg.B, cfg.M, cfg.C, cfg.D, cfg.Kernel, cfg.N, cfg.LocalAdam, *iters, cfg.Warmup)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted")
	}
	stats, err := BenchConfigured(ctx, kinds, cfg, *iters)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted")
	}
	if err != nil {
		return err
	}
	// Ratios are to MGP whenever it is among the models timed.
	// Ratios are to the paper's baseline whenever it is among the models timed.
	mgp := slices.Index(kinds, benchBaseline)
	all := mgp >= 0 && len(kinds) > 1
	if all {
		fmt.Fprintf(stdout, "%-9s  %9s  %7s  %12s  %10s  %10s  %8s  %11s  %8s\n", "model", "ms/iter", "spread", "ratio to mgp", "GMAC/iter", "MAC ratio", "GMAC/s", "allocs/iter", "products")
	} else {
		fmt.Fprintf(stdout, "%-9s  %9s  %7s  %10s  %8s  %11s  %8s\n", "model", "ms/iter", "spread", "GMAC/iter", "GMAC/s", "allocs/iter", "products")
	}
	var baseMACs float64
	if all {
		baseMACs = float64(stats[mgp].MultiplyAdds) / 1e9
	}
	for i, k := range kinds {
		st := stats[i]
		ms, gmac := st.Milliseconds, float64(st.MultiplyAdds)/1e9
		rate := gmac / (ms / 1000)
		spread := fmt.Sprintf("%.0f%%", 100*st.Spread)
		prod := "—"
		if !math.IsNaN(st.ProductShare) {
			prod = fmt.Sprintf("%.0f%%", 100*st.ProductShare)
		}
		if all {
			fmt.Fprintf(stdout, "%-9s  %9.2f  %7s  %12.2f  %10.3f  %10.2f  %8.2f  %11d  %8s\n", k, ms, spread, PairedRatio(st, stats[mgp]), gmac, gmac/baseMACs, rate, st.Allocs, prod)
		} else {
			fmt.Fprintf(stdout, "%-9s  %9.2f  %7s  %10.3f  %8.2f  %11d  %8s\n", k, ms, spread, gmac, rate, st.Allocs, prod)
		}
	}
	return nil
}

// minibatchModel reports whether the preset's engine takes minibatch
// steps (its cost is per step), not full-batch evaluations (per fit).
func minibatchModel(name string) bool {
	// Adam: a preset whose default is L-BFGS (svgp) still times its
	// minibatch steps, as the benchmark's history does.
	m, err := models.New(models.Options{Model: name, Train: models.TrainOptions{Optimizer: "adam"}})
	return err == nil && !m.IsFullBatch()
}

// maxBenchRows bounds gpc bench --n: above the largest training set of the
// papers (the airline data, 5.9 million rows); memory bounds it further.
const maxBenchRows = 10_000_000

// benchBaseline is the model the timing ratios are relative to, as in the
// noisy-input paper's Table 8.
const benchBaseline = "mgp"
