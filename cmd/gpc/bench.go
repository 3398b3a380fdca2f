package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "bench", summary: "time one training iteration of each model", run: runBench})
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("bench", "gpc bench --model NAME|all [--config waveform|mnist] [--iters K]",
		`Time one training iteration (ELBO forward and backward pass and an Adam step)
on random data of the shape of one of the paper's timing configurations:
waveform (batch 50, M = 50, C = 3, d = 21, SE kernel) or mnist (batch 200,
M = 100, C = 10, d = 784, polynomial kernel). Prints milliseconds per
iteration per model and, for --model all, the ratio to MGP; then the
multiply-adds of the iteration's matrix products (machine-independent: the
ratio that time ratios tend to once products dominate) and the rate achieved.`)
	model := f.String("model", "all", "model `NAME`: "+kindList()+" or all")
	config := f.String("config", "waveform", "`configuration`: waveform or mnist")
	iters := f.Int("iters", 20, "timed `iterations` per model (after 2 warm-up iterations)")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	kinds, err := parseKinds(*model)
	if err != nil {
		return err
	}
	if _, ok := models.BenchConfigs[*config]; !ok {
		return usagef("unknown --config %q (want waveform or mnist)", *config)
	}
	if *iters < 1 {
		return usagef("--iters %d: need at least 1 iteration", *iters)
	}
	cfg := models.BenchConfigs[*config]
	fmt.Fprintf(stdout, "config %s: batch %d, M %d, C %d, d %d, %s kernel; %d iterations\n", cfg.Name, cfg.B, cfg.M, cfg.C, cfg.D, cfg.Kernel, *iters)
	// Rows are printed as each model finishes, so the columns have fixed widths.
	all := *model == "all"
	if all {
		fmt.Fprintf(stdout, "%-9s  %9s  %12s  %10s  %10s  %8s\n", "model", "ms/iter", "ratio to mgp", "GMAC/iter", "MAC ratio", "GMAC/s")
	} else {
		fmt.Fprintf(stdout, "%-9s  %9s  %10s  %8s\n", "model", "ms/iter", "GMAC/iter", "GMAC/s")
	}
	var base, baseMACs float64
	for _, k := range kinds {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted")
		}
		st, err := models.Bench(k, *config, *iters)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		ms, gmac := st.Milliseconds, float64(st.MultiplyAdds)/1e9
		if k == models.MGP {
			base, baseMACs = ms, gmac
		}
		rate := gmac / (ms / 1000)
		if all {
			ratio, macRatio := "-", "-"
			if base > 0 {
				ratio = fmt.Sprintf("%.2f", ms/base)
				macRatio = fmt.Sprintf("%.2f", gmac/baseMACs)
			}
			fmt.Fprintf(stdout, "%-9s  %9.2f  %12s  %10.3f  %10s  %8.2f\n", k, ms, ratio, gmac, macRatio, rate)
		} else {
			fmt.Fprintf(stdout, "%-9s  %9.2f  %10.3f  %8.2f\n", k, ms, gmac, rate)
		}
	}
	return nil
}
