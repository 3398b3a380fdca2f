package models

import (
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// GPC-I, GPC-II, GPC-III and GPCsm (Liu, Ong, Yu, Cai & Shen 2019,
// "Scalable Gaussian process classification with additive noise for
// various likelihoods"): the sparse variational GP with the additive-noise
// likelihoods of layers/likelihoods (gpc1, gpc2, gpc3: a robust step
// likelihood on g = f + N(0, a) with a = 0, 1, 2.897 and a learned δ;
// gpcsm: the softmax through Gumbel noise, in closed form). One latent
// function for two classes and one per class otherwise (gpc1–gpc3; gpcsm
// has one per class always), so the same preset serves binary and
// multi-class data. δ is learned unless Options.Likelihood.FixDelta;
// Options.Likelihood.Delta is its initial (or fixed) value, 1e-3 by default.
//
// The presets fix the parts and take the default training (Adam to the
// minibatch stopping rule); the paper's Appendix D settings (M = 300 k-means inducing inputs, batch
// 1024, Adam 0.01, 10 000 iterations, RBF ℓ = 0.1·√d and σ² = 5) are
// applied by AppendixD, which the experiments and API callers use; the CLI
// takes them as flags.
func init() {
	for _, p := range []Preset{
		{Name: "gpc1", Order: 4.1, Likelihoods: []string{"gpc1"},
			Summary: "sparse GP, additive-noise step likelihood (GPC-I, a = 0), learned δ; binary or multi-class"},
		{Name: "gpc2", Order: 4.2, Likelihoods: []string{"gpc2"},
			Summary: "sparse GP, additive-noise probit likelihood (GPC-II, a = 1), learned δ; binary or multi-class"},
		{Name: "gpc3", Order: 4.3, Likelihoods: []string{"gpc3"},
			Summary: "sparse GP, additive-noise logit likelihood (GPC-III, a = 2.897), learned δ; binary or multi-class"},
		{Name: "gpcsm", Order: 4.4, Likelihoods: []string{"gpcsm"},
			Summary: "multi-class sparse GP, softmax by Gumbel-noise augmentation (GPCsm, closed-form bound)"},
	} {
		p.Inputs, p.ZInit = "observed", "kmeans"
		mustRegister(p)
	}
}

// AdditivePresets are the presets of the additive-noise paper, in its order.
var AdditivePresets = []string{"gpc1", "gpc2", "gpc3", "gpcsm"}

// The UCI settings of the additive-noise paper's Appendix D, shared by all
// its scalable GPCs (and the SVGP baselines here).
const (
	AppendixDInducing   = 300
	AppendixDBatch      = 1024
	AppendixDLR         = 0.01
	AppendixDIterations = 10000
	// AppendixDVariance is the kernels' initial σ² (5.0).
	AppendixDVariance = 5.0
	// AppendixDJitter is GPflow's jitter on K_ZZ, the authors' framework.
	AppendixDJitter = 1e-6
)

// AdditiveKernel is a KernelFactory for Appendix D's RBF kernel: SE with
// ARD started at the GPflow length-scale 0.1·√d in every dimension (ℓ_j =
// 0.01·d here, where ℓ_j divides squared distances) and σ² = 5, trainable;
// the white noise keeps the data-driven initial value (e⁻²⁰). A saved model
// is loaded as the SE kernel (kernels.Default) without the factory: only
// the initial values differ, and they are overwritten by the stored ones.
func AdditiveKernel(name string, d int, init KernelInit) kernels.Kernel {
	return kernels.NewSE(name, d, 0.01*float64(d), AppendixDVariance, init.Noise)
}

// AdditiveMaternRBF is the registered kernel of Table V (and ORTH's):
// Matérn-5/2 plus RBF, both ARD with σ² = 5, the Matérn part started at
// GPflow length-scale 0.1·√d and the RBF part at √d (ℓ_j = 0.01·d and d
// here, where ℓ_j divides squared distances); only the RBF part carries
// the white noise, at the data-driven e⁻²⁰. Its arguments move the starts:
// "liu-matern52-rbf(m,r)" starts the parts at m·√d and r·√d (the default is
// (0.1,1)). Its parameters are name/m52/… and name/rbf/…. Being registered,
// a model trained with it (KernelOptions.Name) saves its name and reloads
// anywhere this package is linked, with no factory passed to Load.
const AdditiveMaternRBF = "liu-matern52-rbf"

func init() {
	if err := kernels.Register(AdditiveMaternRBF, newAdditiveMaternRBF); err != nil {
		panic(err)
	}
}

// newAdditiveMaternRBF is AdditiveMaternRBF's factory. Without data the
// white noise starts at 1, as every kernel's does (Load overwrites it).
func newAdditiveMaternRBF(c kernels.Config) (kernels.Kernel, error) {
	// The squared multipliers: the default's are written as the factory
	// this kernel replaces wrote them (0.01, not 0.1·0.1), so that its fits
	// are bit for bit the same.
	m2, r2 := 0.01, 1.0
	switch len(c.Args) {
	case 0:
	case 2:
		m, r := c.Args[0], c.Args[1]
		if !(m > 0 && r > 0) || math.IsInf(m, 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("models: %s(%g,%g): the length-scale multipliers must be positive and finite", AdditiveMaternRBF, m, r)
		}
		m2, r2 = m*m, r*r
	default:
		return nil, fmt.Errorf("models: %s takes two arguments (the Matérn and RBF parts' length-scales over √d), got %d", AdditiveMaternRBF, len(c.Args))
	}
	noise := 1.0
	if c.Data != nil {
		noise = math.Exp(-20)
	}
	d := float64(c.D)
	mat, err := kernels.NewMatern(c.Name+"/m52", 2.5, c.D, m2*d, AppendixDVariance, 0)
	if err != nil {
		return nil, err
	}
	return kernels.Sum{mat, kernels.NewSE(c.Name+"/rbf", c.D, r2*d, AppendixDVariance, noise)}, nil
}

// AppendixD returns o with the additive-noise paper's UCI settings in its
// zero fields: M = 300 inducing inputs initialised by k-means, batch 1024,
// Adam (learning rate 0.01), GPflow's jitter 1e-6, and the RBF kernel of
// AdditiveKernel when no kernel is chosen (Kernel.Name empty or the
// default, kernels.Default, and no Factory). It also sets
// Posterior.SharedZ and Kernel.Shared, as the
// authors' code (GPflow's SVGP with one kernel and num_latent = C): one Z
// and one kernel for all latent functions, each with its own q(u_c); clear
// Kernel.Shared afterwards for a kernel per class. The budget of 10 000 iterations depends on the training size:
// set Train.Epochs to AppendixDEpochs(n, batch) and stop at exactly
// AppendixDIterations steps with FitConfig.MaxIterations.
func AppendixD(o Options) Options {
	if o.Posterior.Inducing == 0 {
		o.Posterior.Inducing = AppendixDInducing
	}
	if o.Posterior.ZInit == "" {
		o.Posterior.ZInit = "kmeans"
	}
	o.Posterior.SharedZ, o.Kernel.Shared = true, true
	if o.Posterior.Jitter == 0 {
		o.Posterior.Jitter = AppendixDJitter
	}
	if o.Train.Batch == 0 {
		o.Train.Batch = AppendixDBatch
	}
	if o.Train.LR == 0 {
		o.Train.LR = AppendixDLR
	}
	if o.Train.Optimizer == "" {
		o.Train.Optimizer = "adam"
	}
	if o.Kernel.Factory == nil && (o.Kernel.Name == "" || o.Kernel.Name == kernels.Default) {
		o.Kernel.Name, o.Kernel.Factory = kernels.Default, AdditiveKernel
	}
	return o
}

// AppendixDEpochs is the number of epochs over n training rows in batches
// of batch rows that covers AppendixDIterations optimiser steps (an epoch
// is ⌈n/min(batch, n)⌉ steps).
func AppendixDEpochs(n, batch int) int { return EpochsFor(AppendixDIterations, n, batch) }

// EpochsFor is the number of epochs over n rows in batches of batch rows
// that covers at least steps optimiser steps (at least 1).
func EpochsFor(steps, n, batch int) int {
	if n < 1 {
		return 1
	}
	if batch < 1 || batch > n {
		batch = n
	}
	perEpoch := (n + batch - 1) / batch
	return max(1, int(math.Ceil(float64(steps)/float64(perEpoch))))
}
