package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/gpc-dev/gpc/experiments"
)

// exitStatus is an exit code from a command that printed its own diagnostics.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func init() {
	register(&command{
		name:    "experiment",
		summary: "run a YAML experiment spec, report it, splice its tables into a document, print the scoreboard (gpc experiment run|report|splice|scoreboard ...)",
		run: func(_ context.Context, args []string, stdout, stderr io.Writer) error {
			if code := experiments.Main(args, stdout, stderr); code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	})
}
