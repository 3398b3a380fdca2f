package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// checkOutput reports, before any work, why --out could not be written: it
// names a directory (example is a file name to suggest inside it), its
// directory is missing, or it is one of the command's input files, which
// the write would replace. The write itself goes to a temporary file beside
// the target, renamed over it only when complete (datasets.WriteAtomic);
// a link is followed and a device or FIFO written through. The directory
// is probed for a file system mounted read-only or one the user cannot
// create files in, so a long fit is never lost at its end.
func checkOutput(path, example string, inputs ...string) error {
	err := datasets.CheckWritable(path)
	var oe *datasets.OutputError
	if errors.As(err, &oe) && oe.IsDir {
		return fmt.Errorf("%w (give a file name such as %s)", err, filepath.Join(path, example))
	}
	if err != nil {
		return err
	}
	out, err := os.Stat(path)
	if err != nil {
		return nil // a new file
	}
	for _, in := range inputs {
		if st, err := os.Stat(in); in != "" && err == nil && os.SameFile(out, st) {
			return fmt.Errorf("cannot write %s: it is the input file %s, which would be lost; choose another name", path, in)
		}
	}
	return nil
}

// explainNumerical rewrites a kernel matrix that no jitter made positive
// definite as "doing: reason"; other errors pass unchanged.
func explainNumerical(doing string, err error) error {
	var npd *models.NotPositiveDefiniteError
	if errors.As(err, &npd) {
		return fmt.Errorf("%s: %s", doing, npd.Reason())
	}
	return err
}
