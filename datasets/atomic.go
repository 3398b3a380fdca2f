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
)

// WriteFileAtomic writes b to path as WriteAtomic does: never a
// half-written file, and an existing one untouched on failure.
func WriteFileAtomic(path string, b []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteAtomic writes a file through write: into a temporary file in the
// target's directory, which is synced and renamed over path only when write
// and the close succeed. A failure at any point removes the temporary file
// and leaves an existing file at path untouched, so a reader never sees a
// half-written or emptied file. The file gets the permissions os.Create
// would give (0666 less the umask) or, when it replaces a file, that file's.
func WriteAtomic(path string, write func(w io.Writer) error) (err error) {
	if err := CheckWritable(path); err != nil {
		return err
	}
	mode := fs.FileMode(0o666)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		mode = st.Mode().Perm()
	}
	dir, base := filepath.Split(path)
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
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// CheckWritable reports, without writing anything, why a file could not be
// created at path: it names a directory, or its directory does not exist or
// is not a directory. It is meant to run before a long computation whose
// result goes to path; permissions are found by the write itself.
func CheckWritable(path string) error {
	if path == "" {
		return errors.New("cannot write a file without a name")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return &OutputError{Path: path, Msg: "it is a directory", IsDir: true}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &OutputError{Path: path, Msg: "directory " + dir + " does not exist"}
	case err != nil:
		return &OutputError{Path: path, Msg: err.Error()}
	case !st.IsDir():
		return &OutputError{Path: path, Msg: dir + " is not a directory"}
	}
	return nil
}

// OutputError is a file that cannot be written, found before writing.
type OutputError struct {
	Path  string
	Msg   string
	IsDir bool // Path names a directory
}

// Error names the path and what went wrong.
func (e *OutputError) Error() string { return "cannot write " + e.Path + ": " + e.Msg }
