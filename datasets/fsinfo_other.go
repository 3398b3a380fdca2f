//go:build !linux

package datasets

// readOnlyFS is unknown off Linux; the probe file of CheckWritableSize
// still finds a read-only file system.
func readOnlyFS(string) bool { return false }

// freeBytes is unknown off Linux.
func freeBytes(string) (uint64, bool) { return 0, false }
