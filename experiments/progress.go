package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/models"
)

// Progress is how far a grid's runs are in a results directory, with an
// estimate of the CPU time the rest need: what a session resuming a long
// experiment reads first to plan its cores (`gpc experiment run --dry-run`
// with --out).
type Progress struct {
	// Total counts the runs asked about; Done those with a stored result
	// (in any of the directory's results files).
	Total, Done int
	// Copies counts the runs left that are another run's fit (Run.Twin):
	// copied when it is done, at no cost.
	Copies int
	// PerFit is the median CPU seconds of a finished fit by method (its
	// CPUSeconds, or Seconds where that is missing), over the fits that
	// were not copies.
	PerFit map[string]float64
	// CPULeft estimates the CPU seconds of the runs left: each one at its
	// method's median, or at the median over all methods for a method with
	// no finished fit; 0 when no fit has finished.
	CPULeft float64
	// Warnings name results lines that could not be read (file:line:
	// reason), whose runs a runner would redo, and checkpoints that could
	// not be read.
	Warnings []string
	// InProgress lists the runs left whose fits have a checkpoint in the
	// directory (under way, or stopped to resume), in grid order.
	InProgress []FitProgress
}

// FitProgress is how far the fit of a run left has come, from its
// checkpoint.
type FitProgress struct {
	Key, Method string
	// Epochs is the run's budget of epochs, 0 when a floor on its steps
	// (min_steps) may raise it once the training size is known.
	Epochs int
	Info   models.CheckpointInfo
}

// progressOf is run r's progress as its checkpoint info records it.
func progressOf(r Run, info models.CheckpointInfo) FitProgress {
	f := FitProgress{Key: r.Key, Method: r.Method.Name, Info: info}
	if r.Budget.MinSteps == 0 {
		f.Epochs = r.Budget.Epochs
	}
	return f
}

// String reads like "KEY: epoch 15 of 350, saved 2026-11-27 08:25:33 UTC;
// median of the last 5 epochs 30.6 s, so ≈ 2 h 47 min more at that pace".
func (f FitProgress) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: epoch %d", f.Key, f.Info.Epoch)
	if f.Epochs > 0 {
		fmt.Fprintf(&b, " of %d", f.Epochs)
	}
	fmt.Fprintf(&b, ", saved %s", f.Info.Saved.UTC().Format("2006-01-02 15:04:05 UTC"))
	h := f.Info.History
	if len(h) > 0 {
		recent := h[max(0, len(h)-5):]
		ds := make([]float64, len(recent))
		for i, e := range recent {
			ds[i] = e.Duration.Seconds()
		}
		pace := median(ds)
		fmt.Fprintf(&b, "; median of the last %d epochs %.1f s", len(recent), pace)
		if f.Epochs > f.Info.Epoch {
			fmt.Fprintf(&b, ", so ≈ %s more at that pace", roughDuration(time.Duration(pace*float64(f.Epochs-f.Info.Epoch)*float64(time.Second))))
		}
	}
	return b.String()
}

// ReadProgress reads dir's results files (none is no progress, not an
// error) and measures runs against them.
func ReadProgress(dir string, runs []Run) (Progress, error) {
	st, err := openStoreFor(dir, 0, 0)
	if err != nil {
		return Progress{}, err
	}
	p := Progress{Total: len(runs), PerFit: map[string]float64{}, Warnings: st.warnings()}
	times := map[string][]float64{}
	var all []float64
	left := map[string]int{}
	for _, r := range runs {
		res, ok := st.done[r.Key]
		switch {
		case ok:
			p.Done++
			if res.SameAs != "" {
				continue
			}
			t := res.CPUSeconds
			if t <= 0 {
				t = res.Seconds
			}
			if t > 0 {
				times[r.Method.Name] = append(times[r.Method.Name], t)
				all = append(all, t)
			}
		case r.Twin != "":
			p.Copies++
		default:
			left[r.Method.Name]++
			path := filepath.Join(dir, checkpointDir, checkpointName(r.Key))
			if _, err := os.Stat(path); err != nil {
				continue
			}
			info, err := models.ReadCheckpointInfo(path)
			if err != nil {
				p.Warnings = append(p.Warnings, err.Error())
				continue
			}
			p.InProgress = append(p.InProgress, progressOf(r, info))
		}
	}
	for m, ts := range times {
		p.PerFit[m] = median(ts)
	}
	if len(all) > 0 {
		overall := median(all)
		for m, n := range left {
			t, ok := p.PerFit[m]
			if !ok {
				t = overall
			}
			p.CPULeft += float64(n) * t
		}
		// A fit under way needs only the rest of its epochs.
		for _, f := range p.InProgress {
			if f.Epochs > 0 {
				t, ok := p.PerFit[f.Method]
				if !ok {
					t = overall
				}
				p.CPULeft -= t * float64(min(f.Info.Epoch, f.Epochs)) / float64(f.Epochs)
			}
		}
	}
	return p, nil
}

// median is the middle value (the mean of the two middle ones).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// String reads like "85 of 200 done, 115 left (≈ 5.4 h of one core at the
// finished fits' medians: GPC-I 2.9 min, …)".
func (p Progress) String() string {
	var b strings.Builder
	left := p.Total - p.Done
	fmt.Fprintf(&b, "%d of %d done, %d left", p.Done, p.Total, left)
	if p.Copies > 0 {
		fmt.Fprintf(&b, " (%d of them copies of another run's fit)", p.Copies)
	}
	if left > p.Copies && p.CPULeft > 0 {
		ms := make([]string, 0, len(p.PerFit))
		for m, t := range p.PerFit {
			ms = append(ms, fmt.Sprintf("%s %s", m, time.Duration(t*float64(time.Second)).Round(time.Second)))
		}
		sort.Strings(ms)
		fmt.Fprintf(&b, "; ≈ %.1f h of one core at the finished fits' median CPU time (%s)", p.CPULeft/3600, strings.Join(ms, ", "))
	}
	return b.String()
}

// roughDuration writes d to the minute ("2 h 05 min", "45 min"), or to the
// second under a minute.
func roughDuration(d time.Duration) string {
	if d < time.Minute-time.Second/2 {
		return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
	}
	m := int(d.Round(time.Minute) / time.Minute)
	if m < 60 {
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d h %02d min", m/60, m%60)
}
