package solvers

import (
	"fmt"
	"math/rand/v2"
)

// Batch is one minibatch: Index are row indices into the training set (fixed length B, because
// compiled graphs have fixed shapes); Weight[i] is the factor that multiplies row i's data term:
// N/|B_real| for real rows and 0 for padding rows that fill the last, smaller batch.
//
// With these weights Σ_i Weight[i]·f(x_Index[i]) is an unbiased estimate of
// the full-data sum Σ_n f(x_n) for every batch, including the short last one,
// so an objective needs no special case for it. Terms that are not sums over
// data (KL divergences, priors) must be added once per batch, unweighted.
//
// The first Real entries of Index are the real rows; the remaining
// len(Index)-Real are padding. Padding rows are valid indices of other rows
// (so gathers never go out of range) and must not influence the result beyond
// being multiplied by their zero weight.
type Batch struct {
	Index  []int
	Weight []float64
	Real   int
}

// FullBatch returns the batch covering all n rows with weight 1, the form
// full-batch objectives (and TrainLBFGS) evaluate. Rows are in natural order
// because the order of a full-data sum does not matter.
func FullBatch(n int) Batch {
	b := Batch{Index: make([]int, n), Weight: make([]float64, n), Real: n}
	for i := range b.Index {
		b.Index[i] = i
		b.Weight[i] = 1
	}
	return b
}

// EpochBatches returns the minibatches Train uses for the given 1-based
// epoch. It is exported so that models and tests can reproduce exactly which
// rows an iteration saw (for example to replay a NaN).
//
// The shuffle depends only on (seed, epoch), not on earlier epochs, so a run
// resumed at epoch k sees the same batches as an uninterrupted one. Orders are
// deterministic for a given seed and Go release. If batchSize >= n (or
// batchSize <= 0) the result is the single FullBatch(n).
func EpochBatches(n, batchSize int, seed uint64, epoch int) ([]Batch, error) {
	if n <= 0 {
		return nil, fmt.Errorf("solvers: number of rows must be positive, got %d", n)
	}
	if batchSize <= 0 || batchSize >= n {
		return []Batch{FullBatch(n)}, nil
	}
	rng := rand.New(rand.NewPCG(seed, Mix64(uint64(epoch))))
	return makeBatches(rng.Perm(n), batchSize), nil
}

// makeBatches splits a permutation into batches of exactly batchSize entries.
// It is separate from the RNG so the weighting can be tested against every
// permutation exhaustively. Requires batchSize < len(perm).
func makeBatches(perm []int, batchSize int) []Batch {
	n := len(perm)
	nb := (n + batchSize - 1) / batchSize
	batches := make([]Batch, 0, nb)
	for start := 0; start < n; start += batchSize {
		end := min(start+batchSize, n)
		nreal := end - start
		b := Batch{Index: make([]int, batchSize), Weight: make([]float64, batchSize), Real: nreal}
		copy(b.Index, perm[start:end])
		w := float64(n) / float64(nreal)
		for i := range nreal {
			b.Weight[i] = w
		}
		// Pad with rows from the front of the permutation: they belong to
		// earlier batches (n-nreal >= batchSize > padding count), so the padding
		// is distinct from the real rows and from itself, and weight 0 keeps
		// them out of the estimate.
		copy(b.Index[nreal:], perm[:batchSize-nreal])
		batches = append(batches, b)
	}
	return batches
}

// Mix64 is the SplitMix64 finaliser: a bijective 64-bit mix. It
// decorrelates the per-epoch PCG streams, which would otherwise start from
// states that differ by one, and serves models for seeds and fingerprints.
func Mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
