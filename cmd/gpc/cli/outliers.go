package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "outliers", summary: "print P(z_i = 1 | y, X) of every training row of a model with outlier indicators (rmgpc) as JSON", run: runOutliers})
}

// oldRobustFormat is the file format of the RMGPC and SMGPC models of
// earlier builds, which fitted them outside the model framework.
const oldRobustFormat = "gpc-rmgpc"

// errOldRobust explains that such a file must be retrained: its EP sites
// were stored per (row, class) in a layout the framework does not read,
// and a retrain on the same data gives the same model.
func errOldRobust(path string) error {
	return fmt.Errorf("%s: an RMGPC/SMGPC model file of an earlier gpc (format %q), which this build no longer reads; retrain it with gpc train --model rmgpc (or smgpc)", path, oldRobustFormat)
}

// runOutliers prints {"p": [...]}: P(z_i = 1 | y, X) for every training
// row of a model whose engine reports outliers (models.OutlierReporter),
// in the training file's order.
func runOutliers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("outliers", "gpc outliers [--model] MODEL.json",
		`Print one JSON line {"p": [...]}: the posterior probability P(z_i = 1 | y, X)
that training row i is an outlier (its label drawn at random), for every
training row of a model with outlier indicators (gpc train --model rmgpc),
in file order.`)
	model := f.String("model", "", "model `file` (from gpc train --model rmgpc)")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 1 && *model == "" {
		*model, pos = pos[0], nil
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *model == "" {
		return usagef("missing --model")
	}
	m, err := models.Load(*model, nil)
	if err != nil {
		return err
	}
	p, err := m.Outliers()
	if err != nil {
		return fmt.Errorf("%s: %w", *model, err)
	}
	b, err := json.Marshal(struct {
		P []float64 `json:"p"`
	}{p})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
