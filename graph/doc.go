// Package graph extends Gorgonia with what Gaussian-process models need and
// Gorgonia lacks: a reverse pass that is correct to any order, differentiable
// linear algebra (Cholesky, triangular solves, log-determinants), special
// functions (Φ, log Φ, φ), structural ops whose gradients Gorgonia gets wrong,
// finite-difference gradient checking, and a small executor.
//
// Every custom op here implements gorgonia.SDOp, and its SymDiff is built only
// from differentiable nodes, so Grad can be applied to the output of Grad.
//
// The ops are written for speed as well: user elementwise functions fuse
// into one op forward and one per argument back (Map, RowReduce, with
// d-vector arguments shared by all rows), a dense layer is one op (Affine),
// a sum of matrix products accumulates block by block in cache, and every node
// keeps its output buffer from run to run of a Program, so a training step
// allocates little and reuses warm memory.
//
// Always take gradients with Grad, never with gorgonia.Grad: the stock pass
// reuses cached derivatives between calls and silently returns wrong
// higher-order gradients; its OuterProd gradient is wrong even at first
// order, and Slice, Sum and scalar Reshape break at second order. Use
// Reshape and MatMul from this package too: Compile refuses a stock Reshape
// of an input, whose view lets in-place ops overwrite it
// (docs/ARCHITECTURE.md lists these caveats).
package graph
