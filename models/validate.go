package models

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gpc-dev/gpc/layers"
)

// This file holds the bounds on every size a model allocates from its
// options or from a model file, the checks of a model file's stored values
// beyond their sizes, and the estimate of a fit's memory against the
// machine's. Each error names the option or file field and the limit, so a
// hand-edited or corrupted file is refused before anything of its claimed
// size is allocated.

// Limits on sizes taken from options or model files. Each is far above any
// use in the papers (20 quadrature points, 500 test samples, hidden layers
// of 50 units, a few million rows), and far below what would exhaust
// memory or run for days.
const (
	// MaxQuadrature bounds Likelihood.Quadrature: beyond a few hundred
	// Gauss–Hermite points the rule's weights underflow anyway.
	MaxQuadrature = 1000
	// MaxTestSamples bounds Inputs.TestSamples (gpc predict
	// --test-samples), the draws of x* per prediction row.
	MaxTestSamples = 100000
	// MaxLikelihoodSamples bounds Likelihood.Samples, Monte Carlo draws
	// per row.
	MaxLikelihoodSamples = 100000
	// MaxHidden bounds each of Inputs.Hidden, an amortised network's width.
	MaxHidden = 1 << 16
	// MaxSavedRows bounds a model file's "n", the training rows it was
	// fitted on.
	MaxSavedRows = 1 << 40
)

// validateLimits reports the first size of resolved options beyond its
// limit, naming the option (as it appears in a model file's "options").
func validateLimits(o Options) error {
	switch {
	case o.Likelihood.Quadrature > MaxQuadrature:
		return fmt.Errorf("models: Likelihood.Quadrature %d exceeds the limit of %d quadrature points", o.Likelihood.Quadrature, MaxQuadrature)
	case o.Likelihood.Samples > MaxLikelihoodSamples:
		return fmt.Errorf("models: Likelihood.Samples %d exceeds the limit of %d Monte Carlo draws", o.Likelihood.Samples, MaxLikelihoodSamples)
	case o.Inputs.TestSamples > MaxTestSamples:
		return fmt.Errorf("models: Inputs.TestSamples %d exceeds the limit of %d test samples", o.Inputs.TestSamples, MaxTestSamples)
	}
	for _, h := range o.Inputs.Hidden {
		if h > MaxHidden {
			return fmt.Errorf("models: Inputs.Hidden: a layer of %d units exceeds the limit of %d", h, MaxHidden)
		}
	}
	return nil
}

// checkSavedParams refuses a model file whose parameter list names a
// parameter twice or one the model does not have: either is a hand edit
// that Load would otherwise resolve silently (the last copy winning, the
// stranger ignored).
func checkSavedParams(path string, saved []savedParam, have []*layers.Param) error {
	known := map[string]bool{}
	for _, p := range have {
		known[p.Name] = true
	}
	seen := map[string]bool{}
	for i, p := range saved {
		if seen[p.Name] {
			return fmt.Errorf("models: %s: params[%d]: parameter %q is listed twice", path, i, p.Name)
		}
		seen[p.Name] = true
		if !known[p.Name] {
			return fmt.Errorf("models: %s: params[%d]: %q is not a parameter of this model", path, i, p.Name)
		}
	}
	return nil
}

// maxLogScale and minLogScale bound the stored logarithm of a positive
// parameter (length-scale, variance, noise): beyond them exp overflows to
// +Inf or underflows to 0, a scale no prediction can use.
const (
	maxLogScale = 709
	minLogScale = -745
)

// checkParamValue reports why element i of p, with stored value v, is not
// usable: not finite, or (for a positive parameter stored as its log) a
// scale of 0 or +Inf.
func checkParamValue(path string, p *layers.Param, i int, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("models: %s: parameter %q element %d is %v", path, p.Name, i, v)
	}
	if p.Transform == layers.Exp && (v > maxLogScale || v < minLogScale) {
		return fmt.Errorf("models: %s: parameter %q element %d is the logarithm %v of a positive scale, which is %v; want a logarithm between %d and %d", path, p.Name, i, v, math.Exp(v), minLogScale, maxLogScale)
	}
	return nil
}

// checkScale reports a standardisation scale that is not positive, or so
// small that dividing by it overflows.
func checkScale(path string, j int, mean, scale float64) error {
	if !finite(mean) || !finite(scale) || !(scale > 0) || math.IsInf(1/scale, 0) {
		return fmt.Errorf("models: %s: the input standardisation of column %d (mean %v, scale %v) is not a finite mean and a positive finite scale", path, j+1, mean, scale)
	}
	return nil
}

// checkSaveable names the first value Save could not write: JSON has no
// NaN or infinity, and a file holding one would not load.
func (m *Model) checkSaveable() error {
	for _, p := range m.params() {
		for i, v := range p.Data {
			if !finite(v) {
				return fmt.Errorf("parameter %q element %d is %v after training; nothing of the model is usable", p.Name, i, v)
			}
		}
	}
	for i, s := range m.meanSamples {
		for j, v := range s {
			if !finite(v) {
				return fmt.Errorf("mean sample %d element %d is %v", i, j, v)
			}
		}
	}
	if sc := m.scaler; sc != nil {
		for j := range sc.Mean {
			if !finite(sc.Mean[j]) || !finite(sc.Scale[j]) {
				return fmt.Errorf("the input standardisation of column %d (mean %v, scale %v) is not finite", j+1, sc.Mean[j], sc.Scale[j])
			}
		}
	}
	return nil
}

// MemoryError is a fit whose estimated memory exceeds what the machine
// has: refused before allocating, where the Go runtime would otherwise die
// with a trace.
type MemoryError struct {
	// What is being sized ("ep on 30000 rows").
	What string
	// Need is the estimate and Have the machine's memory, in bytes.
	Need, Have uint64
	// Hint says what to change.
	Hint string
}

// Error gives the estimate, the memory available and the hint.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("models: %s needs about %s of memory, more than this machine's %s; %s", e.What, gib(e.Need), gib(e.Have), e.Hint)
}

func gib(b uint64) string { return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB" }

// trainingMemory estimates the bytes a fit on n rows of d features holds
// at once: the dense n×n (full family and EP: K, its factor, Σ and the
// gradient) or M×M matrices of every latent function, and the batch's
// n×M cross-covariances. It is a lower bound within a small factor, enough
// to refuse a fit that cannot succeed.
func (m *Model) trainingMemory(n, d, c int) uint64 {
	latent := uint64(m.lik.Latent(c))
	const f64 = 8
	if m.Opts.Posterior.Family == "full" {
		nn := uint64(n) * uint64(n)
		return 4 * latent * nn * f64
	}
	M := uint64(min(m.Opts.Posterior.Inducing, n))
	b := uint64(min(m.Opts.Train.Batch, n))
	if m.IsFullBatch() {
		b = uint64(n)
	}
	return latent*(4*M*M+3*b*M)*f64 + uint64(n)*uint64(d)*f64
}

// checkMemory refuses a fit whose estimated memory exceeds the machine's
// (the smaller of physical memory and a cgroup limit); without either
// known it checks nothing.
func (m *Model) checkMemory(n, d, c int) error {
	have, ok := MachineMemory()
	if !ok {
		return nil
	}
	need := m.trainingMemory(n, d, c)
	if need <= have {
		return nil
	}
	what := fmt.Sprintf("%s on %d rows", m.Name(), n)
	hint := "use fewer --inducing points or a smaller --batch"
	if latent := m.lik.Latent(c); m.Opts.Posterior.Family == "full" {
		what = fmt.Sprintf("%s on %d rows × %d latent functions (the full family holds an n×n matrix per function)", m.Name(), n, latent)
		hint = "use the sparse family (--posterior sparse, or a sparse model such as svgp or ep-fitc) or fewer rows"
	}
	return &MemoryError{What: what, Need: need, Have: have, Hint: hint}
}

// MachineMemory is the memory a process here can have: MemTotal of
// /proc/meminfo, lowered to a cgroup v2 memory.max if one is set; false
// when neither can be read (off Linux).
func MachineMemory() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var total uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, false
			}
			total = kb << 10
			break
		}
	}
	if total == 0 {
		return 0, false
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if lim, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && lim > 0 && lim < total {
			total = lim
		}
	}
	return total, true
}

// SavedSizeEstimate is about the bytes Save will write for a model fitted
// on n rows of d features and c classes: per latent function M inducing
// inputs, q(u)'s mean and a full M×M factor, at about 24 bytes a number in
// JSON. gpc train checks its output has room for it before training.
func (m *Model) SavedSizeEstimate(n, d, c int) int64 {
	M := int64(m.inducing(n))
	latent := int64(m.lik.Latent(c))
	values := latent*(M*int64(d)+M+M*M) + 2*int64(d)
	for _, h := range m.Opts.Inputs.Hidden {
		if m.Opts.Inputs.Model == "amortised" {
			values += 2 * int64(h) * int64(d+1)
		}
	}
	return 24*values + 4096
}
