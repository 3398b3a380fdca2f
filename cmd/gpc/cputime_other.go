//go:build !unix

package main

// processCPU reports no CPU time where getrusage is missing; gpc bench
// then leaves the products' share blank.
func processCPU() (int64, bool) { return 0, false }
