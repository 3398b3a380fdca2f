package experiments

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
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
	// reason), whose runs a runner would redo.
	Warnings []string
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
