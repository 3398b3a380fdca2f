// Package cluster provides k-means for choosing inducing inputs: sparse GP
// classifiers (Hensman et al. 2015; Liu et al.) start Z at k-means centres
// of the training inputs, which covers the data far better than random rows
// at small M.
package cluster

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// Config controls KMeans; the zero value is k-means++ seeding, at most 100
// Lloyd iterations, one restart, all rows.
type Config struct {
	// Seed fixes the seeding and any subsample.
	Seed uint64
	// MaxIter bounds the Lloyd iterations (default 100); a run also stops
	// when no assignment changes.
	MaxIter int
	// Restarts keeps the best of that many seedings by within-cluster sum
	// of squares (default 1).
	Restarts int
	// Sample > 0 clusters a seeded subset of that many rows when there are
	// more: centres of a large data set (MNIST, airline) need not see every row.
	Sample int
	// Context, if set, is checked every iteration.
	Context context.Context
}

// KMeans returns k centres (k×d, row-major) of the n×d rows x (row-major).
func KMeans(x []float64, n, d, k int, cfg Config) ([]float64, error) {
	switch {
	case d < 1 || n < 1:
		return nil, fmt.Errorf("cluster: %d rows of %d columns", n, d)
	case len(x) != n*d:
		return nil, fmt.Errorf("cluster: %d values for %d rows of %d columns", len(x), n, d)
	case k < 1 || k > n:
		return nil, fmt.Errorf("cluster: %d centres for %d rows", k, n)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("cluster: value %v at row %d, column %d", v, i/d, i%d)
		}
	}
	if cfg.MaxIter == 0 {
		cfg.MaxIter = 100
	}
	if cfg.Restarts < 1 {
		cfg.Restarts = 1
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6d))
	if cfg.Sample > 0 && n > cfg.Sample && cfg.Sample >= k {
		idx := rng.Perm(n)[:cfg.Sample]
		sub := make([]float64, 0, cfg.Sample*d)
		for _, i := range idx {
			sub = append(sub, x[i*d:(i+1)*d]...)
		}
		x, n = sub, cfg.Sample
	}
	var best []float64
	bestSS := math.Inf(1)
	for range cfg.Restarts {
		c := seed(x, n, d, k, rng)
		ss, err := lloyd(ctx, x, n, d, k, c, cfg.MaxIter, nil)
		if err != nil {
			return nil, err
		}
		if ss < bestSS {
			best, bestSS = c, ss
		}
	}
	return best, nil
}

// seed is k-means++: each next centre drawn with probability proportional
// to the squared distance to the nearest chosen one (uniformly when all
// distances are zero, as for duplicate rows).
func seed(x []float64, n, d, k int, rng *rand.Rand) []float64 {
	c := make([]float64, 0, k*d)
	first := rng.IntN(n)
	c = append(c, x[first*d:(first+1)*d]...)
	dist := make([]float64, n)
	for i := range dist {
		dist[i] = sq(x[i*d:(i+1)*d], c[:d])
	}
	for len(c) < k*d {
		var total float64
		for _, v := range dist {
			total += v
		}
		pick := rng.IntN(n)
		if total > 0 {
			u := rng.Float64() * total
			for i, v := range dist {
				if u -= v; u < 0 {
					pick = i
					break
				}
			}
		}
		cen := x[pick*d : (pick+1)*d]
		c = append(c, cen...)
		for i := range dist {
			dist[i] = math.Min(dist[i], sq(x[i*d:(i+1)*d], cen))
		}
	}
	return c
}

// lloyd iterates assignment and mean steps in place on c and returns the
// final within-cluster sum of squares; trace, if set, receives it after
// every assignment (for tests).
func lloyd(ctx context.Context, x []float64, n, d, k int, c []float64, maxIter int, trace func(float64)) (float64, error) {
	assign := make([]int, n)
	for i := range assign {
		assign[i] = -1
	}
	sums := make([]float64, k*d)
	counts := make([]int, k)
	var ss float64
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("cluster: k-means cancelled: %w", err)
		}
		changed := false
		ss = 0
		for i := 0; i < n; i++ {
			row := x[i*d : (i+1)*d]
			bj, bd := 0, math.Inf(1)
			for j := 0; j < k; j++ {
				if v := sq(row, c[j*d:(j+1)*d]); v < bd {
					bj, bd = j, v
				}
			}
			ss += bd
			if assign[i] != bj {
				assign[i], changed = bj, true
			}
		}
		if trace != nil {
			trace(ss)
		}
		if !changed {
			break
		}
		clear(sums)
		clear(counts)
		for i, j := range assign {
			counts[j]++
			for t, v := range x[i*d : (i+1)*d] {
				sums[j*d+t] += v
			}
		}
		for j := 0; j < k; j++ {
			if counts[j] == 0 {
				// An empty cluster takes the row farthest from its centre.
				far, fd := 0, -1.0
				for i, a := range assign {
					if v := sq(x[i*d:(i+1)*d], c[a*d:(a+1)*d]); v > fd {
						far, fd = i, v
					}
				}
				copy(c[j*d:(j+1)*d], x[far*d:(far+1)*d])
				continue
			}
			for t := 0; t < d; t++ {
				c[j*d+t] = sums[j*d+t] / float64(counts[j])
			}
		}
	}
	return ss, nil
}

func sq(a, b []float64) float64 {
	var s float64
	for i := range a {
		r := a[i] - b[i]
		s += r * r
	}
	return s
}
