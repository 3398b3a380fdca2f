// Package models composes Gaussian-process classifiers from parts and
// trains, saves and applies them. A model is
//
//	kernel × likelihood × posterior family × input model × inference engine
//
// each part replaceable on its own (Options): kernels from layers/kernels
// (SE, Matérn-3/2 and 5/2, polynomial, linear) or a user's KernelFactory;
// likelihoods from layers/likelihoods' registry (robust-max, probit, logit,
// the additive-noise GPC-I/II/III and GPCsm, the Monte Carlo softmax) or a
// user's; the sparse variational posterior (whitened or not, Z shared or
// per function) or the non-sparse one with Z = X held fixed; an input model
// from layers/inputs (observed, latent q(x_i), amortised, first-order,
// sampled); and an engine: stochastic variational inference (models/svi),
// expectation propagation (models/ep, whose posterior becomes q(u) so that
// prediction is shared) or the sparse mean-field bound (mfsp).
//
// Named models are presets (Presets, RegisterPreset), one file or family
// each, listed by `gpc help`: the noisy-input paper's mgp, nimgp, nimgp-nn
// and nimgp-fo; the scalable variational paper's svgp, svgp-kl, mfsp, ep
// and ep-fitc; the robust paper's rmgpc-svi (its RMGPC, SMGPC and HTPC are
// the packages models/rmgpc and models/htpc); and the additive-noise
// paper's gpc1, gpc2, gpc3 and gpcsm. Nothing outside the preset files asks
// which preset a model is: questions such as "does it use input noise?"
// are asked of the model's parts.
//
// A model trains with Fit (or FitStream, from disk with flat memory) and
// Continue (a warm start on a grown data set), predicts with Predict, is
// scored with Score, saved with Save and read back with Load.
package models
