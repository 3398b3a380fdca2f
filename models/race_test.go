//go:build race

package models

import "testing"

// skipFiniteDifferencesUnderRace skips a finite-difference gradient check
// under the race detector: they are sequential arithmetic, checked in the
// plain test run, and under -race they took 7 of the package's 9 minutes,
// which kept the race run of the package's concurrent parts (the graph's
// side-by-side ops, streamed fits, checkpoints) out of CI.
func skipFiniteDifferencesUnderRace(t testing.TB) {
	t.Helper()
	t.Skip("finite-difference gradient checks run in the plain test run, not under the race detector")
}
