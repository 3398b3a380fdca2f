package solvers

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// Jitter policy defaults. Ten-fold steps reach a useful jitter in a few
// retries; the cap at 1e-1 exists because beyond that the "jitter" is no
// longer a numerical fix but a change of model (it swamps a unit-variance
// kernel), so failing loudly is better than training the wrong thing.
const (
	// DefaultMaxJitterIncreases bounds how many times one training run may
	// raise the jitter.
	DefaultMaxJitterIncreases = 5
	// DefaultMaxJitter is the largest jitter the training loops will set.
	DefaultMaxJitter = 1e-1
	// JitterGrowth is the factor applied to the jitter on each Cholesky failure.
	JitterGrowth = 10
	// JitterFloor is used instead of the current jitter when that is zero or
	// negative, since multiplying zero by JitterGrowth would never help.
	JitterFloor = 1e-6
)

// jitterPolicy is shared by Train and TrainLBFGS so that both recover from
// Cholesky failures identically. The increase count is cumulative over the
// run because the raised jitter persists: a run that keeps needing more is
// heading for a model change, not a round-off fix.
type jitterPolicy struct {
	j            Jitterer // nil when the objective cannot adjust its jitter
	increases    int
	maxIncreases int
	maxJitter    float64
	warn         io.Writer
}

func newJitterPolicy(obj any, maxIncreases int, maxJitter float64, warn io.Writer) *jitterPolicy {
	j, _ := obj.(Jitterer)
	if maxIncreases == 0 {
		maxIncreases = DefaultMaxJitterIncreases
	}
	if maxIncreases < 0 {
		maxIncreases = 0
	}
	if maxJitter == 0 {
		maxJitter = DefaultMaxJitter
	}
	if warn == nil {
		warn = os.Stderr
	}
	return &jitterPolicy{j: j, maxIncreases: maxIncreases, maxJitter: maxJitter, warn: warn}
}

// handle decides what to do with an error from an objective evaluation at
// the place described by where. It returns nil when the jitter was raised and
// the caller should retry the same evaluation; otherwise the error to report.
func (p *jitterPolicy) handle(err error, where string) error {
	if !errors.Is(err, ErrNotPositiveDefinite) {
		return fmt.Errorf("solvers: %s: %w", where, err)
	}
	if p.j == nil {
		return fmt.Errorf("solvers: Cholesky failed at %s and the objective does not implement Jitterer: %w", where, err)
	}
	old := p.j.Jitter()
	if p.increases >= p.maxIncreases {
		return fmt.Errorf("solvers: Cholesky failed at %s with jitter %g after %d jitter increases (limit %d): %w",
			where, old, p.increases, p.maxIncreases, err)
	}
	next, ok := NextJitter(old, p.maxJitter)
	if !ok {
		return fmt.Errorf("solvers: Cholesky failed at %s with jitter %g; raising it to %g would exceed the limit %g: %w",
			where, old, next, p.maxJitter, err)
	}
	if serr := p.j.SetJitter(next); serr != nil {
		return fmt.Errorf("solvers: Cholesky failed at %s and setting jitter to %g failed: %v: %w", where, next, serr, err)
	}
	p.increases++
	// A failed warning write must not abort training: the warning is advisory.
	_, _ = fmt.Fprintf(p.warn, "solvers: warning: Cholesky failed at %s; jitter raised to %g\n", where, next)
	return nil
}

// NextJitter is the jitter ladder every Cholesky retry climbs: ten times
// the current jitter, at least JitterFloor, rounded to a clean decimal. ok
// is false when that exceeds maxJitter (0: DefaultMaxJitter), where a
// "jitter" would be a change of model rather than a numerical fix.
func NextJitter(old, maxJitter float64) (next float64, ok bool) {
	if maxJitter == 0 {
		maxJitter = DefaultMaxJitter
	}
	base := old
	if !(base > 0) || math.IsInf(base, 0) {
		base = JitterFloor / JitterGrowth
	}
	// Rounding to 12 significant digits keeps jitters on clean decimals
	// (1e-05, not 9.999999999999999e-06), so warnings and model state read
	// as intended.
	next, _ = strconv.ParseFloat(strconv.FormatFloat(base*JitterGrowth, 'g', 12, 64), 64)
	// A jitter far below the floor is round-off to the factorisation; growing
	// it tenfold at a time would exhaust the retries without effect.
	next = math.Max(next, JitterFloor)
	// The relative slack absorbs any remaining round-off, so that reaching
	// exactly maxJitter is allowed.
	return next, next <= maxJitter*(1+1e-9)
}
