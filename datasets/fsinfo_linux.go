//go:build linux

package datasets

import "syscall"

// stRdonly is ST_RDONLY of statfs(2)'s f_flags (mounted read-only).
const stRdonly = 1

// readOnlyFS reports whether dir is on a file system mounted read-only,
// which root's writes ignore no more than anyone's.
func readOnlyFS(dir string) bool {
	var s syscall.Statfs_t
	return syscall.Statfs(dir, &s) == nil && s.Flags&stRdonly != 0
}

// FreeBytes is the room left for an unprivileged user on dir's file
// system (statfs(2)); known is false when it cannot be found.
func FreeBytes(dir string) (free uint64, known bool) {
	var s syscall.Statfs_t
	if syscall.Statfs(dir, &s) != nil {
		return 0, false
	}
	return s.Bavail * uint64(s.Bsize), true
}
