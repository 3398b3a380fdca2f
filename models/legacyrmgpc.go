package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/models/ep"
)

// legacyRMGPC is the gpc-rmgpc file (version 1) that the retired package
// models/rmgpc wrote for RMGPC and SMGPC: the standardised training
// inputs, the labels, the standardisation, the kernel's and the latent
// noises' raw (log) values, and the final EP run's sites.
type legacyRMGPC struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Config  struct {
		A0         float64 `json:"a0"`
		B0         float64 `json:"b0"`
		SMGPC      bool    `json:"smgpc"`
		Noise      float64 `json:"noise"`
		MomentBeta bool    `json:"moment_beta"`
		Damping    float64 `json:"damping"`
		Tol        float64 `json:"tol"`
		MaxSweeps  int     `json:"max_sweeps"`
		Jitter     float64 `json:"jitter"`
		ARD        bool    `json:"ard"`
	} `json:"config"`
	D      int       `json:"d"`
	C      int       `json:"c"`
	N      int       `json:"n"`
	X      []float64 `json:"x"`
	Y      []int     `json:"y"`
	Shift  []float64 `json:"shift"`
	Scale  []float64 `json:"scale"`
	Params []struct {
		Name string    `json:"name"`
		Data []float64 `json:"data"`
	} `json:"params"`
	Sites *struct {
		N      int       `json:"n"`
		L      int       `json:"l"`
		TauK   []float64 `json:"tau_k"`
		NuK    []float64 `json:"nu_k"`
		TauY   []float64 `json:"tau_y"`
		NuY    []float64 `json:"nu_y"`
		LogitK []float64 `json:"logit_k"`
		A      []float64 `json:"a"`
		B      []float64 `json:"b"`
		LogitZ []float64 `json:"logit_z"`
	} `json:"sites"`
	Fit struct {
		Evaluations int    `json:"Evaluations"`
		Sweeps      int    `json:"Sweeps"`
		Warning     string `json:"Warning"`
	} `json:"fit"`
}

func init() {
	if err := RegisterLegacyFormat("gpc-rmgpc", loadLegacyRMGPC); err != nil {
		panic(err)
	}
}

// loadLegacyRMGPC converts a gpc-rmgpc file to the rmgpc preset (smgpc for
// a file with Config.SMGPC) under the ep engine: the kernel's γ becomes
// se-gamma's, SMGPC's ϑ_k² the latent noises, and the stored sites are
// mapped onto today's site layout, from which the posterior q(u) at Z = X,
// ρ's Beta posterior, the outlier posteriors and log Z_EP are recomputed
// with no EP sweep and no hyper-parameter training, as the old Load did:
// the converted model predicts what the old one predicted. Settings that
// the preset cannot express are refused: an ARD kernel or a kernel
// amplitude other than 1 (se-gamma has one γ and none), no jitter, the
// moment-matched Beta projection.
func loadLegacyRMGPC(b []byte, path string) (*Model, error) {
	var f legacyRMGPC
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("models: reading %s (gpc-rmgpc): %w", path, err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("models: %s (a gpc-rmgpc model of the retired models/rmgpc): %s", path, fmt.Sprintf(format, a...))
	}
	cfg, s := f.Config, f.Sites
	switch {
	case f.Version != 1:
		return nil, fail("format version %d; this gpc converts version 1", f.Version)
	case s == nil || f.C < 2 || f.N < 1 || f.D < 1 || f.N > maxEPRows || len(f.X) != f.N*f.D || len(f.Y) != f.N:
		return nil, fail("malformed sizes or data")
	case (f.Shift == nil) != (f.Scale == nil):
		return nil, fail("malformed standardisation")
	case cfg.ARD:
		return nil, fail("an ARD kernel (one γ per input), which the se-gamma kernel of the rmgpc preset does not have; retrain it")
	case cfg.MomentBeta:
		return nil, fail("the moment-matched Beta projection, which today's EP does not run; retrain it")
	case !(cfg.Jitter > 0):
		return nil, fail("jitter %g; today's EP needs a positive one", cfg.Jitter)
	}
	nl := f.N * f.C
	robust := !cfg.SMGPC
	if s.N != f.N || s.L != f.C || len(s.TauK) != nl || len(s.NuK) != nl || len(s.TauY) != nl || len(s.NuY) != nl ||
		robust && (len(s.LogitK) != nl || len(s.A) != f.N || len(s.B) != f.N || len(s.LogitZ) != f.N) {
		return nil, fail("malformed EP sites")
	}
	raw := map[string][]float64{}
	for _, p := range f.Params {
		raw[p.Name] = p.Data
	}
	gamma, amp := raw["rmgpc/se/lengthscale"], raw["rmgpc/se/variance"]
	if len(gamma) != 1 || len(amp) != 1 {
		return nil, fail("no scalar kernel parameters rmgpc/se/lengthscale and rmgpc/se/variance")
	}
	if amp[0] != 0 {
		return nil, fail("a kernel amplitude σ² = %g, which the se-gamma kernel (amplitude 1) does not have; retrain it", math.Exp(amp[0]))
	}

	o := Options{Model: "rmgpc"}
	if cfg.SMGPC {
		o.Model = "smgpc"
		o.Kernel.LatentNoise = cfg.Noise
	} else {
		o.Likelihood.DeltaPrior = [2]float64{cfg.A0, cfg.B0}
	}
	o.Inputs.Standardize = f.Shift != nil
	o.Posterior.Jitter = cfg.Jitter
	o.EP.Damping, o.EP.Tol, o.EP.MaxSweeps = cfg.Damping, cfg.Tol, cfg.MaxSweeps
	m, err := Restore(o, f.D, f.C, f.N, f.N)
	if err != nil {
		return nil, fail("%v", err)
	}
	set := func(p *layers.Param, v []float64, what string) error {
		if p == nil || len(v) != len(p.Data) {
			return fail("%s does not fit the %s preset", what, o.Model)
		}
		for i, x := range v {
			if err := checkParamValue(path, p, i, x); err != nil {
				return err
			}
		}
		copy(p.Data, v)
		return nil
	}
	if err := set(kernelGamma(m), gamma, "the kernel's γ"); err != nil {
		return nil, err
	}
	if cfg.SMGPC {
		for c, k := range m.kernels {
			wn, ok := k.(*kernels.WithNoise)
			if !ok {
				return nil, fail("the smgpc preset has no latent noise for class %d", c)
			}
			if err := set(wn.Theta, raw[fmt.Sprintf("rmgpc/noise%d", c)], fmt.Sprintf("ϑ²_%d", c)); err != nil {
				return nil, err
			}
		}
	}
	for i, v := range f.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fail("training input %d is %v", i, v)
		}
	}
	copy(m.post.Z[0].Data, f.X)
	if f.Shift != nil {
		if err := m.SetStandardization(f.Shift, f.Scale); err != nil {
			return nil, fail("%v", err)
		}
	}
	train := &datasets.Dataset{X: f.X, Y: f.Y, N: f.N, D: f.D, C: f.C}
	if err := train.Validate(); err != nil {
		return nil, fail("%v", err)
	}
	o2, err := newMultiObjective(context.Background(), m, train)
	if err != nil {
		return nil, fail("%v", err)
	}
	if o2.ly.Robust != robust {
		return nil, fail("the %s likelihood's outlier indicators do not match the file's sites", m.Opts.Likelihood.Name)
	}
	sites := o2.ly.NewSites()
	for i := range f.N {
		for j := o2.ly.Row[i]; j < o2.ly.Row[i+1]; j++ {
			lat, e := o2.ly.Lat[j], o2.ly.Entry[j]
			// The old sites are Θ(f_y − f_k) on the pair (f_k, f_{y_i}),
			// indexed by (i, k); today's layout lists them as latents
			// [k, y_i].
			if len(lat) != 2 || lat[1] != f.Y[i] || lat[0] == f.Y[i] {
				return nil, fail("today's %s sites are not the pairs (f_k, f_y) the file stores", m.Opts.Likelihood.Name)
			}
			ik := i*f.C + lat[0]
			sites.Tau[e], sites.Nu[e] = s.TauK[ik], s.NuK[ik]
			sites.Tau[e+1], sites.Nu[e+1] = s.TauY[ik], s.NuY[ik]
			if robust {
				sites.Logit[j] = s.LogitK[ik]
			}
		}
		if robust {
			sites.A[i], sites.B[i], sites.LogitZ[i] = s.A[i], s.B[i], s.LogitZ[i]
		}
	}
	if err := o2.ly.Check(sites); err != nil {
		return nil, fail("%v", err)
	}
	o2.sites = sites
	o2.cfg.MaxSweeps = -1 // the posterior at the stored sites
	res, err := o2.run(o2.tolerance())
	if err != nil && !errors.Is(err, ep.ErrNotConverged) {
		return nil, fail("the EP posterior at the stored sites: %v", err)
	}
	st := MultiEPState{LogZ: res.LogZ, Evaluations: f.Fit.Evaluations, Sweeps: f.Fit.Sweeps, Converged: true, Negative: res.Negative, Warning: f.Fit.Warning}
	if robust {
		st.Outliers, st.A, st.B = res.Outliers(f.N), res.A, res.B
	}
	if err := o2.setPosterior(); err != nil {
		return nil, fail("%v", err)
	}
	m.SetEngineState(&st)
	return m, nil
}

// kernelGamma is the γ of the se-gamma kernel the robust presets share
// (under SMGPC's latent noise), nil for another kernel.
func kernelGamma(m *Model) *layers.Param {
	k := m.kernels[0]
	if w, ok := k.(*kernels.WithNoise); ok {
		k = w.Kernel
	}
	if iso, ok := k.(*kernels.IsoSE); ok {
		return iso.Lengthscale
	}
	return nil
}
