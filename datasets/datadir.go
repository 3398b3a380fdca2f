package datasets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// DataEnv is the environment variable that points at the data directory
// when no flag is given.
const DataEnv = "GPC_DATA"

// ResolveDataDir returns the directory the data files are read from. The
// first rule that applies wins:
//
//  1. flagValue, if non-empty (the --data-dir flag);
//  2. the GPC_DATA environment variable, if non-empty;
//  3. a shared/data directory found by walking up from the working
//     directory: for the working directory and each ancestor A in turn,
//     A/../shared/data (shared/ next to A) and then A/shared/data. This finds the
//     read-only paper data both from the repository root (../shared/data) and
//     from a package directory while tests run (e.g. /work/main/datasets →
//     /work/shared/data), and in CI where a fresh clone sits beside shared/;
//  4. ./data (git-ignored), where FetchMNIST puts downloads by default.
//
// The result is absolute. It is an error only if the working directory
// cannot be determined or an explicitly chosen path exists but is not a
// directory; a missing directory is not an error here, because the loaders
// report missing files with the directory, how it was chosen and how to get
// the data — more useful than failing before knowing what was needed.
func ResolveDataDir(flagValue string) (string, error) {
	dir, _, err := ResolveDataDirSource(flagValue)
	return dir, err
}

// ResolveDataDirSource is ResolveDataDir that also returns a human-readable
// description of which rule chose the directory, for log lines such as
// "data: /x/shared/data (found by walking up from /x/main)".
func ResolveDataDirSource(flagValue string) (dir, how string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", fmt.Errorf("datasets: cannot determine the working directory to locate the data: %w", err)
	}
	dir, how, err = resolveDataDir(flagValue, os.Getenv(DataEnv), wd)
	if err == nil {
		rememberSource(dir, how)
	}
	return dir, how, err
}

// resolveDataDir is the pure core of ResolveDataDirSource, separated so
// tests can exercise every rule without touching the process environment.
func resolveDataDir(flagValue, envValue, wd string) (string, string, error) {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		return filepath.Clean(p)
	}
	checkDir := func(p, how string) (string, string, error) {
		p = abs(p)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return "", "", fmt.Errorf("datasets: data directory %s (%s) is not a directory", p, how)
		}
		return p, how, nil
	}
	if flagValue != "" {
		return checkDir(flagValue, "from the --data-dir flag")
	}
	if envValue != "" {
		return checkDir(envValue, "from the "+DataEnv+" environment variable")
	}
	for a := filepath.Clean(wd); ; {
		for _, cand := range []string{
			filepath.Join(filepath.Dir(a), "shared", "data"), // ../shared/data first, as documented
			filepath.Join(a, "shared", "data"),
		} {
			if st, err := os.Stat(cand); err == nil && st.IsDir() {
				return cand, "found shared/data by walking up from " + wd, nil
			}
		}
		parent := filepath.Dir(a)
		if parent == a {
			break
		}
		a = parent
	}
	return abs("data"), "default ./data: no flag, no " + DataEnv + ", and no shared/data beside " + wd + " or its ancestors", nil
}

// sources remembers how each resolved directory was chosen so that
// MissingDataError can say so even though loaders only receive the path.
var sources sync.Map // absolute dir → how

func rememberSource(dir, how string) { sources.Store(dir, how) }

func sourceOf(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if how, ok := sources.Load(dir); ok {
		return how.(string)
	}
	return "passed in by the caller"
}

// MissingDataError reports a data file that is not where it should be. Its
// message names the file, the data directory and how that directory was
// chosen, and how to obtain the data, so a failed run explains itself.
type MissingDataError struct {
	Path    string // the file that was looked for
	DataDir string // the data directory it was looked for in
	How     string // how DataDir was chosen (see ResolveDataDirSource)
	Hint    string // how to obtain the data
}

// Error implements error.
func (e *MissingDataError) Error() string {
	return fmt.Sprintf("data file %s not found (data directory %s, %s); %s", e.Path, e.DataDir, e.How, e.Hint)
}

// Hints used in MissingDataError.
const (
	hintDataDir = "point --data-dir or " + DataEnv + " at the directory that holds the papers' data (gpinputnoise/, raetsch/, …; in the development tree it is shared/data beside the repository)"
	hintMNIST   = "run `gpc data fetch mnist` to download MNIST (into <data dir>/mnist/, or ./data/mnist/ when the data directory is read-only; both are searched), or point --data-dir or " + DataEnv + " at a directory that has mnist/"
)

// resolveIfEmpty lets every loader accept "" to mean "resolve as usual".
func resolveIfEmpty(dataDir string) (string, error) {
	if dataDir != "" {
		return dataDir, nil
	}
	return ResolveDataDir("")
}

// openData opens dataDir/rel, turning "does not exist" into a
// *MissingDataError with the given hint.
func openData(dataDir, rel, hint string) (*os.File, error) {
	p := filepath.Join(dataDir, rel)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &MissingDataError{Path: p, DataDir: dataDir, How: sourceOf(dataDir), Hint: hint}
	}
	return f, err
}
