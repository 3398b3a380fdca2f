package models

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Preset is a named composition of parts: what a model name means. The
// registry is the only place a model's name decides anything.
type Preset struct {
	// Name is how the CLI, specs and saved models name it ("mgp").
	Name string
	// Summary is one line for help texts.
	Summary string
	// Inputs is the input model (inputs.Names).
	Inputs string
	// Likelihoods are the likelihoods the model is defined with; the first
	// is the default.
	Likelihoods []string
	// Posterior is the default posterior family ("sparse" if empty); unlike
	// the input model and the likelihood, a model may be given another.
	Posterior string
	// Inference is the engine ("svi" if empty).
	Inference string
	// Kernel is the default kernel (KernelOptions.Name; "" = se);
	// SharedKernel gives every latent function one kernel, and
	// LatentNoise > 0 each its own white noise on top, starting there
	// (KernelOptions.Shared, LatentNoise).
	Kernel       string
	SharedKernel bool
	LatentNoise  float64
	// ZInit is the default inducing-input initialisation ("" = random).
	ZInit string
	// Train is the preset's default training: the optimiser, cap
	// (Epochs) and tolerance its paper fits to convergence with. Each
	// non-zero field fills the same field of Options.Train when that is
	// zero; the rest take Defaults'.
	Train TrainOptions
	// Defaults, if set, fills options the caller left zero with the
	// preset's own settings (its kernel, the kernel's starting values, the
	// jitter), before the general defaults fill the rest. It must only
	// fill zero fields, so that it can run again on stored options.
	Defaults func(o *Options) `json:"-"`
	// Order places the preset in listings (the papers' order: 1.x the
	// noisy-input paper, 2.x the SVGP paper, …); ties keep registration order.
	Order float64
}

var (
	presetMu sync.Mutex
	presets  []Preset
)

// RegisterPreset adds a preset; it fails on a taken name or an empty part.
func RegisterPreset(p Preset) error {
	presetMu.Lock()
	defer presetMu.Unlock()
	if p.Posterior == "" {
		p.Posterior = "sparse"
	}
	if p.Inference == "" {
		p.Inference = "svi"
	}
	switch {
	case p.Name == "" || p.Inputs == "" || len(p.Likelihoods) == 0:
		return fmt.Errorf("models: preset %q needs a name, an input model and a likelihood", p.Name)
	}
	for _, q := range presets {
		if q.Name == p.Name {
			return fmt.Errorf("models: preset %q is already registered", p.Name)
		}
	}
	presets = append(presets, p)
	sort.SliceStable(presets, func(i, j int) bool { return presets[i].Order < presets[j].Order })
	return nil
}

func mustRegister(p Preset) {
	if err := RegisterPreset(p); err != nil {
		panic(err)
	}
}

// Presets lists the registered presets in registration order (the
// noisy-input paper's order first).
func Presets() []Preset {
	presetMu.Lock()
	defer presetMu.Unlock()
	return append([]Preset(nil), presets...)
}

// PresetNames lists the registered presets' names.
func PresetNames() []string {
	var out []string
	for _, p := range Presets() {
		out = append(out, p.Name)
	}
	return out
}

// LookupPreset returns the preset of that name.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

func presetList() string { return strings.Join(PresetNames(), ", ") }

// The papers' training, which the presets state (Preset.Train).
var (
	// noisyInputTraining is the noisy-input paper's: Adam at 0.01 over
	// batches of 50, which its runs took for 750 to 1000 epochs; here the
	// stopping rule ends the fit at its plateau, 1000 epochs being the cap.
	noisyInputTraining = TrainOptions{Optimizer: "adam", LR: 0.01, Batch: 50, Epochs: 1000}
	// svgpTraining is the SVGP paper's for the data sets that fit in
	// memory (its Figures 1 and 2, Table 1): L-BFGS on the full batch, to
	// the tolerance of scipy's L-BFGS-B, as GPflow runs it, within 1000
	// iterations (GPflow's notebooks' maxiter). The EP and mean-field
	// engines optimise their objectives the same way; their optimiser
	// field is not read.
	svgpTraining = TrainOptions{Optimizer: "lbfgs", Epochs: 1000}
)
