//go:build !unix

package experiments

// lockResults does nothing where flock is not available: concurrent
// runners on one results file are then the user's to avoid.
func lockResults(string) (func(), error) { return func() {}, nil }

// tryLock does nothing where flock is not available: runners sharing a
// directory on such a system must not share runs.
func tryLock(string, bool) (func(), bool, error) { return func() {}, false, nil }
