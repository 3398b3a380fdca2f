package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
)

// FormatVersion is the newest version of the model file format written by
// Save. Version 2 stores the composition (preset, kernel, likelihood,
// posterior, input model); version 1 files (a flat option list with a model
// kind) are converted on Load. Version 3 adds the input standardisation
// (Options.Inputs.Standardize): Save writes it only for a model that has
// one, so that a gpc reading versions 1 and 2 refuses such a file rather
// than predicting on untransformed inputs, and writes version 2 otherwise.
// A file without a standardisation loads as a model without one.
const FormatVersion = 3

// savedScaler is the input standardisation x' = (x − Mean) / Scale.
type savedScaler struct {
	Mean  []float64 `json:"mean"`
	Scale []float64 `json:"scale"`
}

type savedParam struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type savedModel struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Options json.RawMessage `json:"options"`
	D       int             `json:"d"`
	C       int             `json:"c"`
	N       int             `json:"n"`
	M       int             `json:"m"`
	Params  []savedParam    `json:"params"`
	// MeanSamples are draws of q(u)'s mean the prediction averages over.
	MeanSamples [][]float64 `json:"mean_samples,omitempty"`
	// Standardize is the input standardisation (version 3), absent when
	// the model uses its inputs as given.
	Standardize *savedScaler `json:"standardize,omitempty"`
	// EngineState is what a Stateful engine's fit left (Model.EngineState).
	EngineState json.RawMessage `json:"engine_state,omitempty"`
	// Fit is how the fit ended (FitReport), absent for a model saved
	// before reports existed or fitted by an engine that does not report.
	Fit *FitReport `json:"fit,omitempty"`
}

// Save writes the model to a versioned JSON file: its composition and every
// parameter needed for prediction (per-row local parameters such as NIMGP's
// q(x_i), which prediction does not use, are not stored). The kernel is
// stored as its expression (KernelOptions.Name), which Load rebuilds from
// the registry: a user's kernel registered with kernels.Register reloads
// in any program that registers it. A KernelOptions.Factory or a
// user-written likelihood is not serialisable; Load needs it again.
func (m *Model) Save(path string) error {
	if m.post == nil {
		return errors.New("models: cannot save an untrained model")
	}
	if err := m.checkSaveable(); err != nil {
		return fmt.Errorf("models: cannot save %s: %w", path, err)
	}
	opts, err := json.Marshal(m.Opts)
	if err != nil {
		return fmt.Errorf("models: saving %s: %w", path, err)
	}
	s := savedModel{Format: "gpc-model", Version: 2, Options: opts, D: m.D, C: m.C, N: m.N, M: m.post.M, MeanSamples: m.meanSamples, Fit: m.report}
	if m.scaler != nil {
		s.Version = FormatVersion
		s.Standardize = &savedScaler{Mean: m.scaler.Mean, Scale: m.scaler.Scale}
	}
	for _, p := range m.params() {
		s.Params = append(s.Params, savedParam{Name: p.Name, Shape: p.Shape, Data: p.Data})
	}
	if m.engineState != nil {
		if _, ok := m.engine.(Stateful); !ok {
			return fmt.Errorf("models: saving %s: the %s engine left state but cannot read it back (models.Stateful)", path, m.engine.Name())
		}
		if s.EngineState, err = json.Marshal(m.engineState); err != nil {
			return fmt.Errorf("models: saving %s: the %s engine's state: %w", path, m.engine.Name(), err)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("models: saving %s: %w", path, err)
	}
	// A temporary file in the target directory, renamed over the target:
	// never a half-written model, and nothing left behind on failure.
	err = datasets.WriteFileAtomic(path, b)
	if err != nil {
		return fmt.Errorf("models: saving %s: %w", path, err)
	}
	return nil
}

// Load reads a model written by Save (format versions 1 to 3), or a file
// of a retired format that a LegacyLoader converts (gpc-rmgpc here,
// gpc-htpc with models/laplace linked). custom
// supplies what JSON cannot hold (Options.Kernel.Factory,
// Options.Likelihood.Custom) when the model used them; pass nil otherwise.
func Load(path string, custom *Options) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return load(b, path, custom)
}

// load is Load on the file's contents b; path names it in messages.
func load(b []byte, path string, custom *Options) (*Model, error) {
	var s savedModel
	var err error
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("models: %s is not a model file: %w", path, err)
	}
	if s.Format != "gpc-model" {
		if l, ok := legacyLoader(s.Format); ok {
			return l(b, path)
		}
		return nil, fmt.Errorf("models: %s is not a gpc model file", path)
	}
	var opts Options
	switch s.Version {
	case 1:
		if opts, err = optionsV1(s.Options); err != nil {
			return nil, fmt.Errorf("models: %s (format version 1): %w", path, err)
		}
	case 2, FormatVersion:
		dec := json.NewDecoder(bytes.NewReader(s.Options))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			return nil, fmt.Errorf("models: %s: options: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("models: %s has format version %d; this gpc reads versions 1 to %d", path, s.Version, FormatVersion)
	}
	// A file states whether the model standardised, also one written
	// before standardisation became the default (absent: it did not).
	opts.Inputs.NoStandardize = !opts.Inputs.Standardize
	if custom != nil {
		opts.Kernel.Factory, opts.Likelihood.Custom = custom.Kernel.Factory, custom.Likelihood.Custom
		if opts.Likelihood.Custom != nil {
			opts.Likelihood.Name = "custom"
		}
	}
	if err := unregisteredKernel(path, opts.Kernel); err != nil {
		return nil, err
	}
	if opts.Likelihood.Name == "custom" && opts.Likelihood.Custom == nil {
		return nil, fmt.Errorf("models: %s was trained with a user-written likelihood; pass it to Load", path)
	}
	m, err := New(opts)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	// The sizes must be backed by the values stored: a file edited to a
	// million classes or inducing points is refused before anything of
	// that size is allocated.
	total := 0
	for _, p := range s.Params {
		total += len(p.Data)
	}
	fits := func(a, b int) bool { return a >= 1 && b >= 1 && b <= total/a }
	// Only an amortised input model stores its networks; every other
	// model carries the default hidden size without using it.
	hiddenOK := true
	if m.Opts.Inputs.Model == "amortised" {
		for _, h := range m.Opts.Inputs.Hidden {
			hiddenOK = hiddenOK && fits(h, 1)
		}
	}
	if s.N > MaxSavedRows {
		return nil, fmt.Errorf("models: %s: n = %d training rows exceeds the limit of %d", path, s.N, int64(MaxSavedRows))
	}
	if s.D < 1 || s.C < 2 || s.M < 1 || s.N < 1 || !fits(s.D, s.M) || !fits(s.M, s.M) || !fits(s.C, s.M) || !hiddenOK {
		return nil, fmt.Errorf("models: %s: invalid sizes d=%d c=%d m=%d n=%d for the %d parameter values stored", path, s.D, s.C, s.M, s.N, total)
	}
	if err := m.allocate(s.D, s.C, s.N, s.M); err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	s.Params = migrateCompositeNoise(s.Params, m)
	if err := checkSavedParams(path, s.Params, m.params()); err != nil {
		return nil, err
	}
	byName := map[string]savedParam{}
	for _, p := range s.Params {
		byName[p.Name] = p
	}
	kernelParam := map[*layers.Param]bool{}
	for _, k := range m.kernels {
		for _, p := range k.Params() {
			kernelParam[p] = true
		}
	}
	for _, p := range m.params() {
		sp, ok := byName[p.Name]
		if !ok && kernelParam[p] {
			return nil, fmt.Errorf("models: %s has no parameter %q of the kernel %q built to load it: the model was trained with another kernel (a KernelOptions.Factory? pass it to Load, or register the kernel with kernels.Register and name it)", path, p.Name, opts.Kernel.Name)
		}
		if !ok {
			return nil, fmt.Errorf("models: %s has no parameter %q", path, p.Name)
		}
		if len(sp.Data) != len(p.Data) {
			return nil, fmt.Errorf("models: %s: parameter %q has %d values, want %d", path, p.Name, len(sp.Data), len(p.Data))
		}
		for i, v := range sp.Data {
			if err := checkParamValue(path, p, i, v); err != nil {
				return nil, err
			}
		}
		copy(p.Data, sp.Data)
	}
	for i, ms := range s.MeanSamples {
		if len(ms) != m.post.Latent*m.post.M {
			return nil, fmt.Errorf("models: %s: mean sample %d has %d values, want %d", path, i, len(ms), m.post.Latent*m.post.M)
		}
		for j, v := range ms {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("models: %s: mean sample %d element %d is %v", path, i, j, v)
			}
		}
	}
	m.meanSamples = s.MeanSamples
	if r := s.Fit; r != nil && (r.Unit != "epoch" && r.Unit != "iteration" || r.Iterations < 0 || r.Cap < 0) {
		return nil, fmt.Errorf("models: %s: fit record of %d %ss of at most %d", path, r.Iterations, r.Unit, r.Cap)
	}
	m.report = s.Fit
	if len(s.EngineState) > 0 {
		st, ok := m.engine.(Stateful)
		if !ok {
			return nil, fmt.Errorf("models: %s holds engine state, but the %s engine keeps none", path, m.engine.Name())
		}
		if m.engineState, err = st.DecodeState(m, s.EngineState); err != nil {
			return nil, fmt.Errorf("models: %s: the %s engine's state: %w", path, m.engine.Name(), err)
		}
	}
	if s.Standardize == nil && opts.Inputs.Standardize {
		// Predicting without the transform the model was trained with
		// would give wrong numbers silently.
		return nil, fmt.Errorf("models: %s: the model was trained on standardised inputs but the file holds no standardisation", path)
	}
	if sc := s.Standardize; sc != nil {
		if len(sc.Mean) != s.D || len(sc.Scale) != s.D {
			return nil, fmt.Errorf("models: %s: the input standardisation has %d means and %d scales for %d features", path, len(sc.Mean), len(sc.Scale), s.D)
		}
		for j := range sc.Mean {
			if err := checkScale(path, j, sc.Mean[j], sc.Scale[j]); err != nil {
				return nil, err
			}
		}
		m.scaler = &datasets.Scaler{Mean: sc.Mean, Scale: sc.Scale}
	}
	return m, nil
}

// optionsV1 converts a version-1 file's flat options, where the model kind
// chose everything, to the composition it meant.
func optionsV1(raw json.RawMessage) (Options, error) {
	var v1 struct {
		Kind                          string
		Inducing                      int
		Kernel                        string
		Degree                        int
		Epsilon                       float64
		Quadrature                    int
		Whitened, SharedZ             bool
		Jitter                        float64
		LearnNoise                    bool
		NoiseInit, NoiseVar, PriorVar float64
		QXInitVar                     float64
		Hidden                        []int
		Residual                      bool
		TestSamples                   int
		Epochs, Batch                 int
		LR                            float64
		Seed                          uint64
	}
	if err := json.Unmarshal(raw, &v1); err != nil {
		return Options{}, err
	}
	if _, ok := LookupPreset(v1.Kind); !ok {
		return Options{}, fmt.Errorf("unknown model kind %q", v1.Kind)
	}
	o := Options{Model: v1.Kind}
	o.Kernel = KernelOptions{Name: v1.Kernel, Degree: v1.Degree}
	o.Likelihood = LikelihoodOptions{Epsilon: v1.Epsilon, Quadrature: v1.Quadrature}
	o.Posterior = PosteriorOptions{Inducing: v1.Inducing, Whitened: v1.Whitened, SharedZ: v1.SharedZ, Jitter: v1.Jitter}
	o.Inputs.Noise.Learn, o.Inputs.Noise.Init, o.Inputs.Noise.Var = v1.LearnNoise, v1.NoiseInit, v1.NoiseVar
	o.Inputs.PriorVar, o.Inputs.QXInitVar, o.Inputs.Hidden, o.Inputs.Residual, o.Inputs.TestSamples = v1.PriorVar, v1.QXInitVar, v1.Hidden, v1.Residual, v1.TestSamples
	o.Train = TrainOptions{Epochs: v1.Epochs, Batch: v1.Batch, LR: v1.LR, Seed: v1.Seed}
	return o, nil
}

// migrateCompositeNoise converts the kernel parameters of a file written
// before a composite kernel owned one white noise (kernels.Composite): each
// part then had its own σ₀², of which a sum added those of the parts it
// reaches through sums only (kernels.Expr.SumParts) and a product used
// none. The parts' white noises are dropped and the composite's σ₀² set to
// the total the old model used, so that it predicts as it did; where it
// used none, σ₀² is e⁻⁷⁴⁵, the smallest positive scale, which adds nothing
// a float64 can hold to the jitter. Files of either kind load.
func migrateCompositeNoise(saved []savedParam, m *Model) []savedParam {
	if m.Opts.Kernel.Factory != nil {
		return saved
	}
	e, err := kernels.Parse(m.Opts.Kernel.Name)
	if err != nil || !e.Composite() {
		return saved
	}
	byName := map[string]int{}
	for i, p := range saved {
		byName[p.Name] = i
	}
	leaves, used := e.Kernels(), map[int]bool{}
	for _, i := range e.SumParts() {
		used[i] = true
	}
	drop := map[string]bool{}
	var add []savedParam
	seen := map[*layers.Param]bool{}
	for _, k := range m.kernels {
		c, ok := compositeOf(k)
		if !ok || c.WhiteNoise == nil || seen[c.WhiteNoise] {
			continue
		}
		seen[c.WhiteNoise] = true
		if _, ok := byName[c.WhiteNoise.Name]; ok {
			continue // a file written with the composite's own noise
		}
		prefix := strings.TrimSuffix(c.WhiteNoise.Name, "/white")
		var total float64
		found := false
		for i, leaf := range leaves {
			name := kernels.PartName(prefix, i, leaf) + "/white"
			j, ok := byName[name]
			if !ok || len(saved[j].Data) != 1 {
				continue
			}
			found = true
			drop[name] = true
			if used[i] {
				total += math.Exp(saved[j].Data[0])
			}
		}
		if !found {
			continue
		}
		raw := float64(minLogScale)
		if total > 0 {
			raw = math.Max(math.Log(total), minLogScale)
		}
		add = append(add, savedParam{Name: c.WhiteNoise.Name, Shape: []int{}, Data: []float64{raw}})
	}
	if len(add) == 0 {
		return saved
	}
	out := make([]savedParam, 0, len(saved)+len(add))
	for _, p := range saved {
		if !drop[p.Name] {
			out = append(out, p)
		}
	}
	return append(out, add...)
}

// compositeOf returns the composite kernel k is or wraps (a latent noise
// on top of a shared composite).
func compositeOf(k kernels.Kernel) (*kernels.Composite, bool) {
	if w, ok := k.(*kernels.WithNoise); ok {
		k = w.Kernel
	}
	c, ok := k.(*kernels.Composite)
	return c, ok
}
