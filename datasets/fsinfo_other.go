//go:build !linux

package datasets

// readOnlyFS is unknown off Linux; the probe file of CheckWritableSize
// still finds a read-only file system.
func readOnlyFS(string) bool { return false }

// FreeBytes is unknown off Linux (known is false): the checks that use it
// let a write go ahead rather than guess.
func FreeBytes(dir string) (free uint64, known bool) { return 0, false }
