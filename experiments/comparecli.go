package experiments

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gpc-dev/gpc/datasets"
	// The comparison's default reference engine.
	_ "github.com/gpc-dev/gpc/models/mcmc"
)

const compareUsage = `usage:
  gpc experiment compare SPEC.yaml [--out DIR] [--data-dir D] [--report-only]

compare runs an approximation-against-MCMC comparison spec (CompareSpec:
each data set's composition fitted under every engine of the spec and
scored against the reference engine), storing DIR/<data set>.json and .png
(default DIR: out/<spec name>); a rerun skips the data sets already stored.
It then writes DIR/report.md and DIR/verdicts.json, the findings' verdicts
computed from the runs. --report-only re-renders them.
`

func mainCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpc experiment compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output directory (default out/<spec name>)")
	dataDir := fs.String("data-dir", "", "data directory (default: $GPC_DATA, ../shared/data, ./data)")
	reportOnly := fs.Bool("report-only", false, "only re-render report.md and verdicts.json from DIR")
	fs.Usage = func() { fmt.Fprint(stderr, compareUsage) }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "gpc experiment compare: want one SPEC.yaml, got %d arguments\n\n%s", len(pos), compareUsage)
		return 2
	}
	s, err := ReadCompareSpec(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "gpc experiment compare: %v\n", err)
		return 2
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("out", s.Name)
	}
	if *reportOnly {
		err = ReportCompareSpec(s, dir)
	} else {
		var dd string
		if dd, err = datasets.ResolveDataDir(*dataDir); err == nil {
			err = RunCompareSpec(ctx, s, dd, dir, stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpc experiment compare: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(dir, "report.md"))
	return 0
}
