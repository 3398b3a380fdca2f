package datasets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Every file gpc writes goes through AtomicFile (directly, or through
// WriteAtomic and WriteFileAtomic), so the rules below hold for every
// writer:
//
//   - A regular file (or a new one) is written to a temporary file beside
//     it, synced and renamed over it only when complete: a reader never
//     sees a half-written or emptied file, and a failure leaves the old
//     file untouched.
//   - A symbolic link is followed deliberately: the file it names is
//     replaced as above and the link stays a link (renaming over the link
//     would turn it into a regular file and leave its target stale). A
//     link to nothing is refused rather than guessed at.
//   - A character device (/dev/null, a terminal) or a FIFO is written
//     through, never renamed over: renaming would replace the device node
//     itself (as root, /dev/null). A FIFO with no process reading it is
//     refused instead of blocking forever. Other special files (sockets,
//     block devices) are refused. Nothing written through can be atomic.

// AtomicFile is a file being written to path under the rules above. Write
// to File, then Commit; Abort (safe after Commit, for a defer) discards
// an uncommitted write.
type AtomicFile struct {
	// File is the temporary file, or the target itself when written
	// through.
	*os.File
	path    string // the name the caller gave, for messages
	target  string // path with its links resolved
	through bool   // writing to the target itself
	done    bool
}

// CreateAtomic starts a write of path. The file gets the permissions
// os.Create would give (0666 less the umask) or, when it replaces a file,
// that file's.
func CreateAtomic(path string) (*AtomicFile, error) {
	if err := CheckWritable(path); err != nil {
		return nil, err
	}
	target, st, err := resolveTarget(path)
	if err != nil {
		return nil, err
	}
	if st != nil && !st.Mode().IsRegular() {
		f, err := openThrough(path, target, st)
		if err != nil {
			return nil, err
		}
		return &AtomicFile{File: f, path: path, target: target, through: true}, nil
	}
	mode := fs.FileMode(0o666)
	if st != nil {
		mode = st.Mode().Perm()
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	var f *os.File
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64()%1e9, 10)+".tmp")
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &AtomicFile{File: f, path: path, target: target}, nil
}

// Commit makes the write visible: the temporary file is synced and renamed
// over the target (a file written through is only closed).
func (a *AtomicFile) Commit() error {
	if a.done {
		return fmt.Errorf("writing %s: already committed or aborted", a.path)
	}
	a.done = true
	if a.through {
		if err := a.File.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", a.path, err)
		}
		return nil
	}
	tmp := a.File.Name()
	err := a.File.Sync()
	if cerr := a.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", a.path, err)
	}
	// Make the rename itself durable; a failure here loses nothing that
	// was there before, so it is not reported.
	if d, err := os.Open(filepath.Dir(a.target)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort discards an uncommitted write: the temporary file is removed and
// the target is untouched. After Commit it does nothing.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.File.Close()
	if !a.through {
		os.Remove(a.File.Name())
	}
}

// WriteFileAtomic writes b to path as WriteAtomic does.
func WriteFileAtomic(path string, b []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteAtomic writes path through write under AtomicFile's rules: a
// regular file is replaced only when write and the sync succeed, a link is
// followed, a device or FIFO is written through.
func WriteAtomic(path string, write func(w io.Writer) error) error {
	a, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	defer a.Abort()
	if err := write(a.File); err != nil {
		return err
	}
	return a.Commit()
}

// resolveTarget follows the links of path to the file a write replaces
// and returns it with its status (nil when it does not exist yet).
func resolveTarget(path string) (string, fs.FileInfo, error) {
	lst, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, nil
	}
	if err != nil {
		return "", nil, &OutputError{Path: path, Msg: err.Error()}
	}
	target := path
	if lst.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			dest, _ := os.Readlink(path)
			return "", nil, &OutputError{Path: path, Msg: "it is a symbolic link to " + dest + ", which does not exist or cannot be reached; give the file itself"}
		}
	}
	st, err := os.Stat(target)
	if err != nil {
		return "", nil, &OutputError{Path: path, Msg: err.Error()}
	}
	return target, st, nil
}

// openThrough opens the special file target for writing, or says why not.
func openThrough(path, target string, st fs.FileInfo) (*os.File, error) {
	m := st.Mode()
	switch {
	case m.IsDir():
		return nil, &OutputError{Path: path, Msg: "it is a directory", IsDir: true}
	case m&fs.ModeNamedPipe != 0:
		// Non-blocking open: without a reader it fails at once (ENXIO)
		// instead of waiting for one; Go's poller then makes the writes
		// themselves wait for the reader as usual.
		f, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ENXIO) {
			return nil, &OutputError{Path: path, Msg: "it is a FIFO that no process is reading; start the reader first or give a file"}
		}
		if err != nil {
			return nil, &OutputError{Path: path, Msg: err.Error()}
		}
		return f, nil
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, &OutputError{Path: path, Msg: err.Error()}
		}
		return f, nil
	default:
		return nil, &OutputError{Path: path, Msg: "it is a " + kindOf(m) + ", not a file gpc writes to; give a regular file"}
	}
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeCharDevice != 0: // a character device has ModeDevice set too
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file (" + m.Type().String() + ")"
}

// CheckWritable reports why a file could not be written at path, before a
// long computation whose result goes there: CheckWritableSize with no
// expected size.
func CheckWritable(path string) error { return CheckWritableSize(path, 0) }

// CheckWritableSize reports why a file of about size bytes (0 when not
// known) could not be written at path: it names a directory or a link to
// nothing, its directory does not exist, is not a directory, is on a
// read-only file system, cannot have files created in it, or has less
// room than size. A regular file or a new one is probed by creating and
// removing an empty temporary file beside it (the only check that holds
// for every user, root included); a device or FIFO is written through and
// needs none of this.
func CheckWritableSize(path string, size int64) error {
	if path == "" {
		return errors.New("cannot write a file without a name")
	}
	target, st, err := resolveTarget(path)
	if err != nil {
		return err
	}
	if st != nil && st.IsDir() {
		return &OutputError{Path: path, Msg: "it is a directory", IsDir: true}
	}
	if st != nil && !st.Mode().IsRegular() {
		return nil
	}
	dir := filepath.Dir(target)
	dst, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &OutputError{Path: path, Msg: "directory " + dir + " does not exist"}
	case err != nil:
		return &OutputError{Path: path, Msg: err.Error()}
	case !dst.IsDir():
		return &OutputError{Path: path, Msg: dir + " is not a directory"}
	}
	if readOnlyFS(dir) {
		return &OutputError{Path: path, Msg: dir + " is on a read-only file system"}
	}
	probe, err := os.CreateTemp(dir, "."+filepath.Base(target)+".probe-*")
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrPermission) {
			msg = "no permission to create files in " + dir
		} else if errors.Is(err, syscall.EROFS) {
			msg = dir + " is on a read-only file system"
		}
		return &OutputError{Path: path, Msg: msg}
	}
	probe.Close()
	os.Remove(probe.Name())
	if free, ok := FreeBytes(dir); ok && size > 0 && uint64(size) > free {
		return &OutputError{Path: path, Msg: fmt.Sprintf("it needs about %s but %s has %s free", ByteSize(uint64(size)), dir, ByteSize(free))}
	}
	return nil
}

// ByteSize writes n bytes in the largest binary unit that keeps the number
// ≥ 1 ("512 B", "1.5 MiB"), for messages about sizes and free space.
func ByteSize(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}

// OutputError is a file that cannot be written, found before writing.
type OutputError struct {
	Path  string
	Msg   string
	IsDir bool // Path names a directory
}

// Error names the path and what went wrong.
func (e *OutputError) Error() string { return "cannot write " + e.Path + ": " + e.Msg }
