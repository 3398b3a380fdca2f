// Package cluster provides k-means for choosing inducing inputs: sparse GP
// classifiers (Hensman et al. 2015; Liu et al.) start Z at k-means centres
// of the training inputs, which covers the data far better than random rows
// at small M.
//
// Everything is float64 and every random choice comes from a math/rand/v2
// PCG generator seeded by Config.Seed, so a (data, k, Config) triple gives
// the same centres on every run; distances are accumulated without fused
// multiply-add so that they also agree across platforms.
package cluster

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Config controls KMeans. The zero value is what inducing-input
// initialisation wants: k-means++ seeding, at most 100 Lloyd iterations, one
// seeding, every row, no cancellation.
type Config struct {
	// Seed fixes the k-means++ seeding, the restarts and the subsample, so
	// that an experiment's inducing inputs are reproducible from its seed.
	Seed uint64
	// MaxIter bounds the Lloyd iterations (0 means 100) because inducing
	// inputs are only a starting point that the optimiser moves anyway; a
	// run stops earlier once no assignment changes.
	MaxIter int
	// Restarts keeps the best of that many seedings by within-cluster sum
	// of squares (0 means 1), trading time for robustness against an
	// unlucky seeding.
	Restarts int
	// Sample > 0 clusters a seeded subset of that many rows when there are
	// more, because centres of a large data set (MNIST, airline) are
	// determined well by a few thousand rows at a fraction of the cost.
	// It must be at least k.
	Sample int
	// Context, if set, is checked before every seeding step and Lloyd
	// iteration so that a long clustering can be abandoned with its
	// experiment; nil means context.Background().
	Context context.Context
}

// KMeans returns k centres (k×d, row-major) of the n×d rows x (row-major),
// chosen by k-means++ seeding followed by Lloyd iterations.
//
// It is meant for inducing-input initialisation, where a bad input should be
// reported rather than silently produce NaN inducing points: it returns an
// error (never panics) for inconsistent sizes, k outside 1…n and non-finite
// values (named by 0-based row and column). Ties are broken by the lowest
// row or centre index, and an empty cluster is re-seeded with the row
// farthest from its centre, so the result depends only on x, k and cfg.
// With k == n the centres are the rows themselves (in some order); duplicate
// rows are allowed and give duplicate centres rather than NaN.
// A cancelled Context yields an error wrapping ctx.Err().
func KMeans(x []float64, n, d, k int, cfg Config) (centres []float64, err error) {
	if err := check(x, n, d, k, cfg); err != nil {
		return nil, err
	}
	if cfg.MaxIter == 0 {
		cfg.MaxIter = 100
	}
	if cfg.Restarts == 0 {
		cfg.Restarts = 1
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if k == n {
		// Every row is its own cluster; Lloyd would reach this too, but
		// only if seeding never picked a duplicate row twice.
		return slices.Clone(x), nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6d65616e73)) // "kmeans"
	if cfg.Sample > 0 && n > cfg.Sample {
		x, n = subsample(x, n, d, cfg.Sample, rng), cfg.Sample
		if k == n {
			return x, nil
		}
	}
	w := newWork(n, d, k)
	var best []float64
	bestSS := math.Inf(1)
	for r := range cfg.Restarts {
		c, err := seed(ctx, x, n, d, k, rng, w.dist)
		if err != nil {
			return nil, err
		}
		ss, err := lloyd(ctx, x, n, d, k, c, cfg.MaxIter, cfg.Restarts > 1, w, nil)
		if err != nil {
			return nil, err
		}
		if r == 0 || ss < bestSS {
			best, bestSS = c, ss
		}
	}
	return best, nil
}

// check validates the arguments up front so that callers get one precise
// message instead of an index panic or NaN centres later.
func check(x []float64, n, d, k int, cfg Config) error {
	switch {
	case d < 1:
		return fmt.Errorf("cluster: d = %d columns, need at least 1", d)
	case n < 1:
		return fmt.Errorf("cluster: n = %d rows, need at least 1", n)
	case n > math.MaxInt/d || len(x) != n*d:
		return fmt.Errorf("cluster: len(x) = %d values, but n×d = %d×%d", len(x), n, d)
	case k < 1:
		return fmt.Errorf("cluster: k = %d centres, need at least 1", k)
	case k > n:
		return fmt.Errorf("cluster: k = %d centres, but only n = %d rows", k, n)
	case cfg.MaxIter < 0:
		return fmt.Errorf("cluster: MaxIter = %d is negative", cfg.MaxIter)
	case cfg.Restarts < 0:
		return fmt.Errorf("cluster: Restarts = %d is negative", cfg.Restarts)
	case cfg.Sample < 0:
		return fmt.Errorf("cluster: Sample = %d is negative", cfg.Sample)
	case cfg.Sample > 0 && cfg.Sample < k && n > cfg.Sample:
		return fmt.Errorf("cluster: Sample = %d rows cannot give k = %d centres", cfg.Sample, k)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("cluster: non-finite value %v at row %d, column %d (0-based)", v, i/d, i%d)
		}
	}
	return nil
}

// subsample returns s of the n rows, chosen uniformly without replacement by
// Floyd's algorithm (O(s) draws and memory, where a permutation of n would
// cost 8n bytes for the airline data) and kept in their original order,
// which makes the copy cache-friendly and independent of map order.
func subsample(x []float64, n, d, s int, rng *rand.Rand) []float64 {
	chosen := make(map[int]struct{}, s)
	for j := n - s; j < n; j++ {
		t := rng.IntN(j + 1)
		if _, ok := chosen[t]; ok {
			t = j
		}
		chosen[t] = struct{}{}
	}
	idx := make([]int, 0, s)
	for i := range chosen {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	sub := make([]float64, 0, s*d)
	for _, i := range idx {
		sub = append(sub, x[i*d:(i+1)*d]...)
	}
	return sub
}

// work holds Lloyd's per-row and per-centre buffers, allocated once per call
// so that restarts and iterations do not allocate.
type work struct {
	assign []int     // centre of each row; -1 before the first assignment
	dist   []float64 // squared distance of each row to its centre
	counts []int     // rows per centre
	sums   []float64 // k×d coordinate sums per centre
}

func newWork(n, d, k int) *work {
	return &work{assign: make([]int, n), dist: make([]float64, n), counts: make([]int, k), sums: make([]float64, k*d)}
}

// seed is k-means++ (Arthur & Vassilvitskii 2007): each next centre is a row
// drawn with probability proportional to its squared distance to the nearest
// centre so far, which spreads the centres over the data. When every
// distance is zero (only duplicates of chosen rows remain) the draw is
// uniform, so duplicate rows cannot cause a division by zero. dist is
// scratch of length n.
func seed(ctx context.Context, x []float64, n, d, k int, rng *rand.Rand, dist []float64) ([]float64, error) {
	c := make([]float64, 0, k*d)
	first := rng.IntN(n)
	c = append(c, x[first*d:(first+1)*d]...)
	for i := range n {
		dist[i] = sq(x[i*d:(i+1)*d], c)
	}
	for len(c) < k*d {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cluster: k-means cancelled: %w", err)
		}
		var total float64
		for _, v := range dist[:n] {
			total += v
		}
		var pick int
		if total > 0 {
			// The last row with positive weight absorbs rounding in u, so
			// a zero-distance row (an existing centre) is never drawn.
			u := rng.Float64() * total
			for i, v := range dist[:n] {
				if v > 0 {
					pick = i
					if u < v {
						break
					}
					u -= v
				}
			}
		} else {
			pick = rng.IntN(n)
		}
		cen := x[pick*d : (pick+1)*d]
		c = append(c, cen...)
		for i := range n {
			dist[i] = min(dist[i], sq(x[i*d:(i+1)*d], cen))
		}
	}
	return c, nil
}

// lloyd alternates assignment and mean steps on c in place, for at most
// maxIter mean steps or until no assignment changes. It returns the
// within-cluster sum of squares of the final c when score is set (one more
// assignment pass if maxIter was reached, needed only to compare restarts),
// and otherwise that of the last assignment, an upper bound. trace, if
// non-nil, receives the sum of squares after every assignment step, so a
// test can check that it never increases.
//
// Each iteration is O(n·k·d) and allocates nothing.
func lloyd(ctx context.Context, x []float64, n, d, k int, c []float64, maxIter int, score bool, w *work, trace func(float64)) (float64, error) {
	if w == nil {
		w = newWork(n, d, k)
	}
	assign, dist, counts, sums := w.assign[:n], w.dist[:n], w.counts[:k], w.sums[:k*d]
	for i := range assign {
		assign[i] = -1
	}
	for it := 0; ; it++ {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("cluster: k-means cancelled: %w", err)
		}
		ss, changed := assignStep(x, n, d, k, c, assign, dist)
		if trace != nil {
			trace(ss)
		}
		if !changed || it == maxIter {
			return ss, nil
		}
		clear(counts)
		for _, j := range assign {
			counts[j]++
		}
		reseedEmpty(x, d, c, assign, dist, counts)
		clear(sums)
		for i, j := range assign {
			s := sums[j*d : (j+1)*d]
			for t, v := range x[i*d : (i+1)*d] {
				s[t] += v
			}
		}
		for j := range k {
			if counts[j] == 0 {
				continue // re-seeded in place by reseedEmpty
			}
			m := float64(counts[j])
			for t := range d {
				c[j*d+t] = sums[j*d+t] / m
			}
		}
		if it == maxIter-1 && !score {
			return ss, nil
		}
	}
}

// assignStep moves every row to its nearest centre, recording the distances
// for re-seeding, and reports the sum of squares and whether any row moved.
// The strict comparison keeps the lowest index on ties. (Abandoning a
// distance once it exceeds the best so far was tried and was slower: the
// data-dependent branch costs more than it saves on 20-d data.)
func assignStep(x []float64, n, d, k int, c []float64, assign []int, dist []float64) (ss float64, changed bool) {
	for i := range n {
		row := x[i*d : (i+1)*d]
		bj, bd := 0, math.Inf(1)
		for j := range k {
			if v := sq(row, c[j*d:(j+1)*d]); v < bd {
				bj, bd = j, v
			}
		}
		ss += bd
		dist[i] = bd
		if assign[i] != bj {
			assign[i], changed = bj, true
		}
	}
	return ss, changed
}

// reseedEmpty gives every empty centre the row farthest from its own centre
// (lowest index on ties), the row the current clustering serves worst. That
// row leaves its cluster, so the sum of squares cannot rise; it is never
// taken from a cluster it alone occupies, and a row already at distance 0
// only lends its coordinates, since moving it would let the next assignment
// move it straight back and the iterations would never settle.
func reseedEmpty(x []float64, d int, c []float64, assign []int, dist []float64, counts []int) {
	for j, cnt := range counts {
		if cnt > 0 {
			continue
		}
		// n ≥ k and a centre is empty, so some cluster holds two rows.
		far, fd := -1, -1.0
		for i, v := range dist {
			if v > fd && counts[assign[i]] > 1 {
				far, fd = i, v
			}
		}
		copy(c[j*d:(j+1)*d], x[far*d:(far+1)*d])
		if fd > 0 {
			counts[assign[far]]--
			assign[far], counts[j] = j, 1
			dist[far] = 0
		}
	}
}

// sq is the squared Euclidean distance. The explicit float64 conversion
// forbids fused multiply-add, so results agree bit for bit across platforms.
func sq(a, b []float64) float64 {
	b = b[:len(a)]
	var s float64
	for i, v := range a {
		r := v - b[i]
		s += float64(r * r)
	}
	return s
}
