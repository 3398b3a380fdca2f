package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/solvers"
)

// BenchConfig describes one of the paper's timing configurations.
type BenchConfig struct {
	Name          string
	N, D, C, B, M int
	Kernel        string
	// AppendixD builds the models with the additive-noise paper's
	// structure (models.AppendixD: one Z and one kernel for all latent
	// functions, k-means Z) around the configuration's sizes.
	AppendixD bool
	// LocalAdam is how NIMGP's per-row q(x_i) are stepped (models'
	// Train.LocalAdam): "" or "dense", every row at every step, or "lazy",
	// the batch's rows only.
	LocalAdam string
	// Warmup is how many untimed iterations come first (0: 2). NIMGP's
	// deferred dense update reaches its steady state only after an epoch,
	// N/B steps, once every row owes the steps of a pass.
	Warmup int
}

// BenchConfigs are the configurations timed by `gpc bench`: Waveform
// (B=50, M=50, C=3, d=21, SE), the synthetic problems' (B=200, M=100,
// C=3, d=2, SE: Tables 2, 3, 11 and 12, most of the paper's fits) and
// MNIST (B=200, M=100, C=10, d=784, polynomial kernel of degree 9) of the
// noisy-input paper, and the
// additive-noise paper's UCI shape (B=1024, M=300, d=20, SE; C = 2, 10).
var BenchConfigs = map[string]BenchConfig{
	"waveform":  {Name: "waveform", N: 1000, D: 21, C: 3, B: 50, M: 50, Kernel: "se"},
	"synthetic": {Name: "synthetic", N: 1000, D: 2, C: 3, B: 200, M: 100, Kernel: "se"},
	"mnist":     {Name: "mnist", N: 2000, D: 784, C: 10, B: 200, M: 100, Kernel: "poly"},
	// The additive-noise paper's UCI shape (Appendix D: m = 300, batch
	// 1024), binary and with ten classes.
	"uci2":  {Name: "uci2", N: 4096, D: 20, C: 2, B: 1024, M: 300, Kernel: "se", AppendixD: true},
	"uci10": {Name: "uci10", N: 4096, D: 20, C: 10, B: 1024, M: 300, Kernel: "se", AppendixD: true},
}

// BenchStats is the cost of one training iteration.
type BenchStats struct {
	// Milliseconds is the median wall time of an iteration.
	Milliseconds float64
	// Spread is the interquartile range of the iteration times divided by
	// their median: how noisy the machine was.
	Spread float64
	// MultiplyAdds is the number of multiply-adds in the iteration's matrix
	// products (graph.MultiplyAdds), independent of the machine.
	MultiplyAdds int64
	// Times are the iteration times in milliseconds, one per round, in
	// round order (see PairedRatio).
	Times []float64
	// Allocs is the median number of heap allocations of an iteration:
	// the fixed cost of the graph's dispatch that a small step pays.
	Allocs int64
	// ProductShare is the fraction of the process's CPU time during the
	// iterations spent in matrix products and triangular solves
	// (graph.ProductTime); NaN where the system does not report CPU time.
	ProductShare float64
}

// PairedRatio is the median over rounds of a's iteration time divided by
// b's in the same round. Both were timed within milliseconds of each
// other, so a change in the machine's speed between rounds cancels; on a
// shared machine it is steadier than the ratio of the medians.
func PairedRatio(a, b BenchStats) float64 {
	n := min(len(a.Times), len(b.Times))
	if n == 0 {
		return 0
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = a.Times[i] / b.Times[i]
	}
	sort.Float64s(r)
	return quantile(r, 0.5)
}

// Bench times several models on one configuration. The models are built
// first and then stepped in turn, one iteration each per round, so that a
// change in the machine's speed during the run (frequent on shared
// machines: single-model runs gave MNIST ratios from 1.2 to 1.6 for the
// same build) affects every model alike. The order rotates from round to
// round, so that no model always follows the same one (and inherits, say,
// the garbage it left for the collector).
func Bench(ctx context.Context, kinds []string, config string, iters int) ([]BenchStats, error) {
	cfg, ok := BenchConfigs[config]
	if !ok {
		return nil, fmt.Errorf("models: unknown benchmark configuration %q (want waveform, synthetic, mnist, uci2 or uci10)", config)
	}
	return BenchConfigured(ctx, kinds, cfg, iters)
}

// BenchConfigured is Bench on a configuration that need not be one of
// BenchConfigs (a changed field of one, say). It stops with ctx's error
// between models built and between iterations: at MNIST's size a round
// takes seconds.
func BenchConfigured(ctx context.Context, kinds []string, cfg BenchConfig, iters int) ([]BenchStats, error) {
	if iters < 1 {
		return nil, fmt.Errorf("models: %d benchmark iterations", iters)
	}
	sets := map[int]*datasets.Dataset{}
	dataFor := func(c int) *datasets.Dataset {
		if ds, ok := sets[c]; ok {
			return ds
		}
		rng := rand.New(rand.NewPCG(1, 7))
		ds := &datasets.Dataset{Name: cfg.Name, N: cfg.N, D: cfg.D, C: c, X: make([]float64, cfg.N*cfg.D), Y: make([]int, cfg.N)}
		for i := range ds.X {
			ds.X[i] = rng.NormFloat64()
		}
		for i := range ds.Y {
			ds.Y[i] = rng.IntN(c)
		}
		sets[c] = ds
		return ds
	}
	batches, err := solvers.EpochBatches(cfg.N, cfg.B, 1, 1)
	if err != nil {
		return nil, err
	}
	runs := make([]*benchRun, len(kinds))
	for i, kind := range kinds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// A binary model is timed on the same inputs with two classes.
		c := cfg.C
		if m, err := models.New(models.Options{Model: kind}); err == nil {
			if cc, ok := m.Likelihood().(likelihoods.ClassCounter); ok {
				c = cc.Classes()
			}
		}
		if runs[i], err = newBenchRun(kind, cfg, dataFor(c)); err != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
	}
	times := make([][]float64, len(kinds))
	allocs := make([][]float64, len(kinds))
	macs := make([]int64, len(kinds))
	prodNs, cpuNs := make([]int64, len(kinds)), make([]int64, len(kinds))
	_, cpuOK := graph.ProcessCPU()
	graph.TimeProducts(true)
	defer graph.TimeProducts(false)
	var ms runtime.MemStats
	warm := cfg.Warmup
	if warm <= 0 {
		warm = 2
	}
	for it := -warm; it < iters; it++ {
		b := batches[(it+warm)%len(batches)]
		for q := range runs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			i := (q + it + warm) % len(runs)
			r := runs[i]
			runtime.ReadMemStats(&ms)
			a0 := ms.Mallocs
			c0, _ := graph.ProcessCPU()
			p0 := graph.ProductTime()
			m0, t0 := graph.MultiplyAdds(), time.Now()
			if err := r.step(b); err != nil {
				return nil, fmt.Errorf("%s: %w", kinds[i], err)
			}
			if it >= 0 {
				times[i] = append(times[i], float64(time.Since(t0).Nanoseconds())/1e6)
				macs[i] += graph.MultiplyAdds() - m0
				c1, _ := graph.ProcessCPU()
				cpuNs[i] += c1 - c0
				prodNs[i] += int64(graph.ProductTime() - p0)
				runtime.ReadMemStats(&ms)
				allocs[i] = append(allocs[i], float64(ms.Mallocs-a0))
			}
		}
	}
	out := make([]BenchStats, len(kinds))
	for i, t := range times {
		sorted := append([]float64(nil), t...)
		sort.Float64s(sorted)
		med := quantile(sorted, 0.5)
		al := append([]float64(nil), allocs[i]...)
		sort.Float64s(al)
		out[i] = BenchStats{
			Allocs:       int64(quantile(al, 0.5)),
			Milliseconds: med,
			Spread:       (quantile(sorted, 0.75) - quantile(sorted, 0.25)) / med,
			MultiplyAdds: macs[i] / int64(iters),
			Times:        t,
			ProductShare: math.NaN(),
		}
		if cpuOK && cpuNs[i] > 0 {
			out[i].ProductShare = float64(prodNs[i]) / float64(cpuNs[i])
		}
	}
	return out, nil
}

// quantile of sorted values, by linear interpolation.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(lo)
	return sorted[lo]*(1-f) + sorted[lo+1]*f
}

// benchRun is one model's training step on the benchmark data.
type benchRun struct{ st *models.Stepper }

func newBenchRun(name string, cfg BenchConfig, ds *datasets.Dataset) (*benchRun, error) {
	o := models.Options{Model: name, Kernel: models.KernelOptions{Name: cfg.Kernel},
		Posterior: models.PosteriorOptions{Inducing: cfg.M}, Train: models.TrainOptions{Batch: cfg.B, LocalAdam: cfg.LocalAdam}}
	// The noise models learn their noise, as in the paper's MNIST runs;
	// the benchmark's data are used as they are generated.
	o.Inputs.Noise.Learn, o.Inputs.NoStandardize = true, true
	if cfg.AppendixD {
		o = models.AppendixD(o)
	}
	m, err := models.New(o)
	if err != nil {
		return nil, err
	}
	st, err := m.NewStepper(ds)
	if err != nil {
		return nil, err
	}
	return &benchRun{st: st}, nil
}

func (r *benchRun) step(b solvers.Batch) error {
	_, err := r.st.Step(b)
	return err
}

// benchFits times whole fits of a full-batch model (EP, EP-FITC, MFSp):
// iters fits of 30 L-BFGS iterations on 400 random binary rows of 20
// features (a Table 1 size), M = 8, and prints the median seconds per fit.
func benchFits(ctx context.Context, stdout io.Writer, name string, iters int) error {
	const n, d = 400, 20
	rng := rand.New(rand.NewPCG(1, 7))
	ds := &datasets.Dataset{Name: "bench", N: n, D: d, C: 2, X: make([]float64, n*d), Y: make([]int, n)}
	for i := range ds.Y {
		ds.Y[i] = i % 2
		for j := 0; j < d; j++ {
			ds.X[i*d+j] = rng.NormFloat64() + 0.5*float64(ds.Y[i])
		}
	}
	fmt.Fprintf(stdout, "%s: %d fits of 30 L-BFGS iterations, N %d, d %d, M 8\n", name, iters, n, d)
	var secs []float64
	for range iters {
		// Thirty iterations each, whether or not the fit has converged.
		o := models.Options{Model: name, Posterior: models.PosteriorOptions{Inducing: 8}, Train: models.TrainOptions{Epochs: 30, Stop: models.StopBudget}}
		m, err := models.New(o)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := m.Fit(ctx, ds, models.FitConfig{Warnings: io.Discard}); err != nil {
			return err
		}
		secs = append(secs, time.Since(t0).Seconds())
	}
	sort.Float64s(secs)
	fmt.Fprintf(stdout, "%-9s  %9s  %7s\n%-9s  %9.2f  %6.0f%%\n", "model", "s/fit", "spread", name, quantile(secs, 0.5), 100*(quantile(secs, 0.75)-quantile(secs, 0.25))/quantile(secs, 0.5))
	return nil
}
