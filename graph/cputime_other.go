//go:build !unix

package graph

// ProcessCPU reports no CPU time where getrusage is missing: callers then
// leave CPU-time figures out.
func ProcessCPU() (int64, bool) { return 0, false }
