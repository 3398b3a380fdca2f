// Package solvers holds the optimisers and the training loop shared by every
// Gaussian-process classification model in this module.
//
// Models differ in how they build an objective (an exact marginal likelihood,
// a full-batch ELBO, a minibatch ELBO with inducing points ...), but they all
// end up needing the same things: a stochastic optimiser (Adam), a
// quasi-Newton optimiser for full-batch problems (L-BFGS), a minibatching
// scheme that keeps compiled graphs at a fixed shape, and the same defensive
// handling of NaNs, Cholesky failures and cancellation. Keeping that here means
// each model only has to implement Objective.Step.
//
// The package deliberately knows nothing about the graph engine: parameters
// and gradients are plain []float64 slices (see Param). A model exposes its
// trainable arrays by aliasing their backing storage, so an optimiser update
// is immediately visible to the next graph evaluation without any copying.
//
// Sign convention: every solver here MINIMISES. Models whose natural objective
// is maximised (the ELBO, the log marginal likelihood) must return its
// negation as the loss and the gradient of that negation. Progress output
// converts back and prints elbo = -loss, because that is the number people
// recognise.
package solvers
