package mcmc

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// checkpointFormat tags the engine's checkpoint files, so that another
// file at the path (an svi checkpoint, a model) is refused, not misread.
const checkpointFormat = "gpc-mcmc-checkpoint 1"

// ckFile is a checkpoint: the fingerprint of the fit and every chain's
// state at an iteration boundary.
type ckFile struct {
	Format string
	// Print fingerprints what the draws depend on: the options, the
	// training rows and the point the chains start from.
	Print   string
	Seconds float64
	Chains  []ckChain
}

type ckChain struct {
	Iter int
	PCG  []byte
	// F and LL are the current f and log p(y|f) as the chain computed
	// them (f is updated along the ellipse, not recomputed as Lν, so a
	// resumed chain needs the same bits).
	Nu, Theta, F, G            []float64
	LL                         float64
	Draws, Fs, Thetas          [][]float64
	LLs                        []float64
	Steps, Shrinks, HyperEvals int
}

// checkpointer writes a fit's checkpoints.
type checkpointer struct {
	ck    *models.Checkpoint
	print string
	last  time.Time
	base  float64 // seconds sampled before this process
}

// fingerprint hashes the options, the rows as trained on and the point.
func fingerprint(m *models.Model, train *datasets.Dataset, point []float64) (string, error) {
	o, err := json.Marshal(m.Opts)
	if err != nil {
		return "", err
	}
	h := uint64(0x6d636d63)
	mix := func(v uint64) {
		h ^= v
		h *= 0x100000001b3
		h ^= h >> 29
	}
	for _, v := range train.X {
		mix(math.Float64bits(v))
	}
	for _, y := range train.Y {
		mix(uint64(y))
	}
	for _, v := range point {
		mix(math.Float64bits(v))
	}
	return fmt.Sprintf("%s|N=%d D=%d C=%d|%016x", o, train.N, train.D, train.C, h), nil
}

// openCheckpoint resumes the sampler from ck's file when it exists (one
// of another fit, or a damaged one, is an error naming it, never a silent
// fresh start) and returns the writer of later checkpoints.
func openCheckpoint(ck *models.Checkpoint, m *models.Model, train *datasets.Dataset, cfg Config, s *sampler) (*checkpointer, error) {
	fp, err := fingerprint(m, train, s.theta0)
	if err != nil {
		return nil, err
	}
	w := &checkpointer{ck: ck, print: fp, last: time.Now()}
	b, err := os.ReadFile(ck.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return w, nil
	}
	if err != nil {
		return nil, err
	}
	var f ckFile
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&f); err != nil || f.Format != checkpointFormat {
		return nil, fmt.Errorf("mcmc: checkpoint %s is not an mcmc checkpoint or is damaged", ck.Path)
	}
	if f.Print != fp {
		return nil, fmt.Errorf("mcmc: checkpoint %s is of another fit (options, training rows or starting hyper-parameters differ)", ck.Path)
	}
	if len(f.Chains) != len(s.chains) {
		return nil, fmt.Errorf("mcmc: checkpoint %s has %d chains, the fit %d", ck.Path, len(f.Chains), len(s.chains))
	}
	for k, c := range s.chains {
		fc := f.Chains[k]
		if len(fc.Nu) != len(c.nu) || len(fc.F) != len(c.f) || len(fc.Theta) != len(c.t.theta) {
			return nil, fmt.Errorf("mcmc: checkpoint %s: chain %d has the wrong size", ck.Path, k)
		}
		if err := c.pcg.UnmarshalBinary(fc.PCG); err != nil {
			return nil, fmt.Errorf("mcmc: checkpoint %s: chain %d: %w", ck.Path, k, err)
		}
		c.iter, c.nu, c.t.theta = fc.Iter, fc.Nu, fc.Theta
		c.draws, c.fs, c.thetas, c.lls = fc.Draws, fc.Fs, fc.Thetas, fc.LLs
		c.steps, c.shrinks, c.hyperEvals = fc.Steps, fc.Shrinks, fc.HyperEvals
		if err := c.t.factor(); err != nil {
			return nil, err
		}
		if len(fc.G) != len(c.g) {
			return nil, fmt.Errorf("mcmc: checkpoint %s: chain %d has the wrong size", ck.Path, k)
		}
		c.f, c.g, c.ll = fc.F, fc.G, fc.LL
	}
	w.base = f.Seconds
	s.resumedSeconds = f.Seconds
	if ck.Restore != nil {
		if err := ck.Restore(nil); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// maybeSave writes a checkpoint when Every has passed since the last one,
// or always when force (the run is ending early).
func (w *checkpointer) maybeSave(s *sampler, seconds float64, force bool) error {
	if !force && time.Since(w.last) < w.ck.Every {
		return nil
	}
	f := ckFile{Format: checkpointFormat, Print: w.print, Seconds: w.base + seconds}
	for _, c := range s.chains {
		pcg, err := c.pcg.MarshalBinary()
		if err != nil {
			return err
		}
		f.Chains = append(f.Chains, ckChain{Iter: c.iter, PCG: pcg, Nu: c.nu, Theta: c.t.theta, F: c.f, G: c.g, LL: c.ll,
			Draws: c.draws, Fs: c.fs, Thetas: c.thetas, LLs: c.lls, Steps: c.steps, Shrinks: c.shrinks, HyperEvals: c.hyperEvals})
	}
	if err := datasets.WriteAtomic(w.ck.Path, func(out io.Writer) error { return gob.NewEncoder(out).Encode(&f) }); err != nil {
		return fmt.Errorf("mcmc: checkpoint: %w", err)
	}
	w.last = time.Now()
	if w.ck.Written != nil {
		w.ck.Written(models.CheckpointInfo{Iterations: s.chains[0].iter, Saved: w.last})
	}
	return nil
}
