// Package layers holds the graph building blocks of gpc models: trainable
// parameters with positivity transforms (here), and in its subpackages the
// kernels, the likelihoods, the posterior families (variational), the input
// models (inputs), per-row local parameters (local) and the MLP (mlp).
//
// A parameter's storage lives outside any graph (Param.Data) and is shared by
// every graph a model compiles (a training graph of batch size B, a prediction
// graph of another size): a Scope binds each parameter once per graph to an
// input node backed by that storage, so an optimiser step is seen by all.
package layers
