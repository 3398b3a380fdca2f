package graph

import "testing"

// Every index is visited exactly once and chunks hold whole rows, for
// sizes below and above the parallel threshold.
func TestParallelForCoversOnce(t *testing.T) {
	for _, c := range []struct{ n, align, cost int }{
		{0, 1, 1}, {1, 1, 1}, {10, 1, 1}, {7, 7, 1 << 20}, {100000, 1, 1}, {200 * 784, 784, 10}, {5 * 3, 3, 1 << 20},
	} {
		seen := make([]int32, c.n)
		parallelFor(c.n, c.align, float64(c.cost), func(lo, hi int) {
			if lo%c.align != 0 || (hi%c.align != 0 && hi != c.n) {
				t.Errorf("n=%d align=%d: chunk [%d,%d) splits a row", c.n, c.align, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("n=%d align=%d: index %d visited %d times", c.n, c.align, i, s)
			}
		}
	}
}
