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

// skipSequentialUnderRace skips a long sequential fit (a run to
// convergence, a full EP fit on a real data set) under the race detector:
// it has no concurrency the detector could check beyond what the short
// fits exercise, runs in the plain test run, and under -race it multiplies
// CI's time.
func skipSequentialUnderRace(t testing.TB) {
	t.Helper()
	t.Skip("a long sequential fit runs in the plain test run, not under the race detector")
}
