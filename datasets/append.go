package datasets

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// AppendLine adds line and a newline at the end of the file at path, the
// one append path of gpc's line logs (an experiment's results files), so
// that an append can cut short at most itself, never an earlier line:
//
//   - The line and its newline go out in one write, then the file is
//     synced (and, for a new file, its directory): a kill loses at most
//     the line being written.
//   - A file whose last line has no newline (a torn line: a crash cut a
//     write short) gets one first, in the same write, so the torn tail
//     stays a line of its own for readers to report and the new line
//     starts fresh instead of being glued to it.
//   - A write that fails part way (a full disk) is cut back to the size
//     the file had, so it leaves no torn line behind. This assumes one
//     appender at a time, which callers ensure (the results store holds
//     its file's lock and a mutex).
//   - Links are followed as CreateAtomic follows them, and a link to
//     nothing is refused; but the file appended to must be a regular file
//     (or not exist yet): a log is read back, which a device, FIFO, socket
//     or directory cannot be, and an append to a FIFO with no reader
//     would block for ever.
//
// line must not contain a newline: it would become two lines, the second
// not known to the caller.
func AppendLine(path string, line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("appending to %s: the line contains a newline", path)
	}
	target, st, err := resolveTarget(path)
	if err != nil {
		return err
	}
	if st != nil && !st.Mode().IsRegular() {
		return appendRefusal(path, st.Mode())
	}
	f, err := os.OpenFile(target, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	// The file may have been replaced since resolveTarget looked at it.
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	if !fst.Mode().IsRegular() {
		f.Close()
		return appendRefusal(path, fst.Mode())
	}
	size := fst.Size()
	buf := make([]byte, 0, len(line)+2)
	torn, err := endsTorn(f, size)
	if err != nil {
		f.Close()
		return fmt.Errorf("appending to %s: reading its last byte: %w", path, err)
	}
	if torn {
		buf = append(buf, '\n')
	}
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		// Cut a partial write back off: it would be a torn line.
		terr := f.Truncate(size)
		f.Close()
		if terr != nil {
			return fmt.Errorf("appending to %s: %w (and cutting the partial line off failed: %v; the next read reports it)", path, err, terr)
		}
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	if st == nil {
		// A new file's name is durable only once its directory is synced;
		// a failure here loses nothing that was there before.
		if d, err := os.Open(filepath.Dir(target)); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

// appendRefusal says why a file of mode m is not appended to.
func appendRefusal(path string, m fs.FileMode) error {
	if m.IsDir() {
		return &OutputError{Path: path, Msg: "it is a directory", IsDir: true}
	}
	return &OutputError{Path: path, Msg: "it is a " + kindOf(m) + ", not a regular file; a log gpc appends to is read back, so give a regular file"}
}

// TornTail reports whether the regular file f ends in a line without its
// newline: the tail of an append a crash cut short (AppendLine always ends
// a line with one). A reader that cannot parse its last line says so
// rather than calling the line merely unreadable.
func TornTail(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	torn, err := endsTorn(f, st.Size())
	return err == nil && torn
}

// endsTorn reports whether the size bytes of f end in a line without its
// newline (false for an empty file).
func endsTorn(f *os.File, size int64) (bool, error) {
	if size == 0 {
		return false, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return false, err
	}
	return last[0] != '\n', nil
}
