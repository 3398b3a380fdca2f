package solvers

import (
	"fmt"
	"io"
	"math"
	"time"
)

// DefaultPlateauWindow is the number of epochs Plateau averages: a
// minibatch epoch's mean loss moves with the shuffle and mixes parameter
// values from across the epoch, and ten epochs' mean is steady enough for
// its trend to be read.
const DefaultPlateauWindow = 10

// Plateau is a stopping rule for minibatch training: it smooths the epoch
// losses over a window and reports convergence once the smoothed loss has
// fallen by less than a relative tolerance per epoch at each of the last
// Window epochs (a single flat reading is often a pause before the
// hyper-parameters move on). It needs two windows of epochs before it
// can read a rate, so a fit never stops before 3·Window − 1 epochs.
type Plateau struct {
	// Window is the epochs averaged (0: DefaultPlateauWindow).
	Window int
	// Tol is the relative decrease of the smoothed loss per epoch below
	// which the fit has converged; Tol ≤ 0 never reports convergence.
	Tol    float64
	losses []float64
	flat   int // consecutive epochs whose rate was below Tol
}

// Add records an epoch's mean loss (the objective being minimised).
func (p *Plateau) Add(loss float64) {
	p.losses = append(p.losses, loss)
	if _, rel, ok := p.Rate(); ok && len(p.losses) >= 2*p.window() && rel < p.Tol {
		p.flat++
	} else {
		p.flat = 0
	}
}

// Epochs is the number of losses recorded.
func (p *Plateau) Epochs() int { return len(p.losses) }

func (p *Plateau) window() int {
	if p.Window > 0 {
		return p.Window
	}
	return DefaultPlateauWindow
}

// Rate is the decrease per epoch of the smoothed loss (positive: still
// improving) and that decrease relative to the smoothed loss's size, read
// from the last two windows of epochs (shorter windows when fewer epochs
// have run, down to single epochs); ok is false with fewer than two epochs.
func (p *Plateau) Rate() (perEpoch, rel float64, ok bool) {
	n := len(p.losses)
	w := min(p.window(), n/2)
	if w < 1 {
		return 0, 0, false
	}
	older, recent := mean(p.losses[n-2*w:n-w]), mean(p.losses[n-w:])
	perEpoch = (older - recent) / float64(w)
	return perEpoch, perEpoch / math.Max(math.Abs(recent), 1e-300), true
}

// Converged reports whether the smoothed loss, read over two full
// windows, has fallen by less than Tol (relative) per epoch at each of the
// last Window epochs.
func (p *Plateau) Converged() bool {
	return p.Tol > 0 && p.flat >= p.window()
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// lbfgsProgress writes an L-BFGS run's progress: a line when the run
// starts, then at most one a second (a full-batch iteration can take
// anywhere from microseconds to minutes), and one at the end.
type lbfgsProgress struct {
	w        io.Writer
	name     string // what −f is ("elbo"); empty prints f as "objective"
	maxIter  int
	start    time.Time
	lastLine time.Time
}

func newLBFGSProgress(s LBFGSSettings) *lbfgsProgress {
	if s.Progress == nil {
		return nil
	}
	now := time.Now()
	return &lbfgsProgress{w: s.Progress, name: s.ProgressName, maxIter: s.MaxIterations, start: now}
}

func (p *lbfgsProgress) value(f float64) string {
	if p.name == "" {
		return fmt.Sprintf("objective %.6g", f)
	}
	return fmt.Sprintf("%s %.6g", p.name, -f)
}

// iteration reports accepted iterate iter (1-based) with objective f, the
// relative decrease rel of its step, after evals evaluations.
func (p *lbfgsProgress) iteration(iter, evals int, f, rel float64) {
	if p == nil {
		return
	}
	now := time.Now()
	if iter > 1 && now.Sub(p.lastLine) < time.Second {
		return
	}
	p.lastLine = now
	elapsed := now.Sub(p.start)
	cap, eta := "", ""
	if p.maxIter > 0 {
		cap = fmt.Sprintf("/%d", p.maxIter)
		// An upper bound: the run usually converges before its cap.
		eta = "  eta ≤ " + formatDuration(elapsed/time.Duration(iter)*time.Duration(max(p.maxIter-iter, 0)))
	}
	_, _ = fmt.Fprintf(p.w, "L-BFGS iteration %d%s  %s  change %.2g  evaluations %d  %s%s\n",
		iter, cap, p.value(f), rel, evals, formatDuration(elapsed), eta)
}

// done writes the run's last line.
func (p *lbfgsProgress) done(res Result) {
	if p == nil {
		return
	}
	_, _ = fmt.Fprintf(p.w, "L-BFGS stopped after %d iterations, %d evaluations, %s: %s, %s\n",
		res.Iterations, res.Evaluations, formatDuration(time.Since(p.start)), res.Status, p.value(res.F))
}
