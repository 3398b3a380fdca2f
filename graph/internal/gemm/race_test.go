//go:build race

package gemm

import "testing"

// skipUnderRace skips a test that counts allocations: the race detector
// makes sync.Pool drop items and instruments goroutines and channels, so
// the counts under it are not the program's own.
func skipUnderRace(t testing.TB) {
	t.Helper()
	t.Skip("allocation counts are not the program's own under the race detector")
}
