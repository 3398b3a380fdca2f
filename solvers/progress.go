package solvers

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// refreshInterval is how often the in-place terminal line is redrawn: often
// enough to show life during a long epoch, rarely enough that writing to the
// terminal never costs noticeable time.
const refreshInterval = 500 * time.Millisecond

// progress writes Train's human-readable output. Write errors are ignored on
// purpose: a closed pipe on the progress writer must not kill a training run.
type progress struct {
	w         io.Writer // nil = silent
	tty       bool      // rewrite the current line in place with \r
	epochs    int
	perEpoch  int
	maxIter   int
	start     time.Time
	lastDraw  time.Time
	lastWidth int // width of the in-place line, to blank leftovers
	width     int // digits of epochs, so columns line up
	base      int // steps taken before this session (a resumed run), not timed by start
	lastLine  time.Time
}

// epochLineInterval is the least time between permanent epoch lines after
// the first: a fit of a few hundred rows runs tens of epochs a second,
// and a line for each would bury everything else a run prints.
const epochLineInterval = time.Second

func newProgress(w io.Writer, epochs, perEpoch, maxIter int) *progress {
	now := time.Now()
	return &progress{
		w: w, tty: isTerminal(w), epochs: epochs, perEpoch: perEpoch, maxIter: maxIter,
		start: now, lastDraw: now, width: len(fmt.Sprint(epochs)),
	}
}

// isTerminal reports whether w is a character device. Only then is \r
// rewriting useful; in a log file or buffer it would just be noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// batch is called after every step; it redraws at most every refreshInterval
// and only on terminals.
func (p *progress) batch(epoch, batch, iter int, meanLoss float64) {
	if p.w == nil || !p.tty || batch == p.perEpoch {
		return
	}
	now := time.Now()
	if now.Sub(p.lastDraw) < refreshInterval {
		return
	}
	p.lastDraw = now
	line := fmt.Sprintf("epoch %*d/%d  batch %d/%d  elbo %.4f  eta %s",
		p.width, epoch, p.epochs, batch, p.perEpoch, -meanLoss, formatDuration(p.eta(iter)))
	p.drawInPlace(line)
}

// epoch writes the permanent per-epoch line.
func (p *progress) epoch(e Epoch) {
	if p.w == nil {
		return
	}
	line := fmt.Sprintf("epoch %*d/%d  elbo %.4f  %s  eta %s",
		p.width, e.Epoch, p.epochs, -e.Loss, formatDuration(e.Duration), formatDuration(p.eta(e.Iterations)))
	now := time.Now()
	if e.Epoch > 1 && e.Epoch < p.epochs && now.Sub(p.lastLine) < epochLineInterval {
		if p.tty {
			p.drawInPlace(line)
		}
		return
	}
	p.lastLine = now
	if p.tty {
		p.drawInPlace(line)
		_, _ = io.WriteString(p.w, "\n")
		p.lastWidth = 0
		return
	}
	_, _ = io.WriteString(p.w, line+"\n")
}

// abort terminates a pending in-place line so that an error message printed
// next by the caller starts on a fresh line.
func (p *progress) abort() {
	if p.w != nil && p.tty && p.lastWidth > 0 {
		_, _ = io.WriteString(p.w, "\n")
		p.lastWidth = 0
	}
}

func (p *progress) drawInPlace(line string) {
	pad := ""
	if n := p.lastWidth - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	_, _ = io.WriteString(p.w, "\r"+line+pad)
	p.lastWidth = len(line)
}

// eta extrapolates the mean time per step so far to the steps that remain,
// which stays accurate when MaxIterations ends training before Epochs.
func (p *progress) eta(iter int) time.Duration {
	if iter <= 0 {
		return 0
	}
	total := p.epochs * p.perEpoch
	if p.maxIter > 0 && p.maxIter < total {
		total = p.maxIter
	}
	remaining := total - iter
	if remaining <= 0 {
		return 0
	}
	if iter <= p.base {
		return 0
	}
	perStep := time.Since(p.start) / time.Duration(iter-p.base)
	return perStep * time.Duration(remaining)
}

// formatDuration keeps short times precise ("12.3s") and long ones readable
// ("1m30s").
func formatDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
