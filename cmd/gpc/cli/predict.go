package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "predict", summary: "write class probabilities for the rows of a CSV file", run: runPredict})
}

type predictArgs struct {
	model, input, out string
	noise             noiseSpec
	labeled           bool
	samples           int
}

func parsePredict(args []string, stdout io.Writer) (*predictArgs, error) {
	f := newFlags("predict",
		"gpc predict --model MODEL.json --input FILE.csv --out PROBS.csv [flags]",
		`Write the class probabilities of a trained model for every row of FILE.csv
to PROBS.csv, one row per input with the header p0,…,p{C−1}.

Without --labeled every column of FILE.csv is an input and there must be
exactly as many as the model was trained with. With --labeled the last column
is the class label; the error rate and the mean negative log-likelihood are
then printed to standard output as one JSON line {"error":…,"nll":…,"n":…}.

--input-noise gives the test inputs' noise variances (a number for every
entry, or a CSV file with the same rows and input columns as FILE.csv); by
default the model's learned or training variance is used. MGP ignores it.

A model trained with standardised inputs (the default of gpc train) applies
its saved transform; give the inputs and variances in the training file's
units. PROBS.csv is written only when every probability is finite, through a
temporary file beside it: a failure or Ctrl-C leaves an existing PROBS.csv
as it was.`)
	var a predictArgs
	var noise string
	f.StringVar(&a.model, "model", "", "trained model `MODEL.json` written by gpc train (required)")
	f.StringVar(&a.input, "input", "", "inputs `FILE.csv` (required)")
	f.StringVar(&a.out, "out", "", "where to write the probabilities, `PROBS.csv` (required)")
	f.StringVar(&noise, "input-noise", "", "test input noise: `VARIANCE|FILE.csv`")
	f.BoolVar(&a.labeled, "labeled", false, "the last column of FILE.csv is the label: also print error and NLL as JSON")
	f.IntVar(&a.samples, "test-samples", 0, "nimgp, nimgp-nn: override the model's Monte Carlo `samples` (0: as trained)")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return nil, err
	}
	if err := noArgs(pos); err != nil {
		return nil, err
	}
	switch {
	case a.model == "":
		return nil, usagef("--model MODEL.json is required")
	case a.input == "":
		return nil, usagef("--input FILE.csv is required")
	case a.out == "":
		return nil, usagef("--out PROBS.csv is required")
	case a.samples < 0 || a.samples > models.MaxTestSamples:
		return nil, usagef("--test-samples %d: want 0 (as trained) to %d samples", a.samples, models.MaxTestSamples)
	}
	if a.noise, err = parseNoise(noise, false); err != nil {
		return nil, err
	}
	return &a, nil
}

// predictScores is the JSON line printed with --labeled.
type predictScores struct {
	Error float64 `json:"error"`
	NLL   float64 `json:"nll"`
	N     int     `json:"n"`
}

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parsePredict(args, stdout)
	if err != nil {
		return err
	}
	if err := checkOutput(a.out, "probs.csv", a.input, a.model, a.noise.file); err != nil {
		return err
	}
	m, err := models.Load(a.model, nil)
	if err != nil {
		return err
	}
	if _, ok := m.Inputs().(inputs.Sampler); a.samples > 0 && !ok {
		return usagef("--test-samples: model %s does not sample its test inputs and would ignore it (only nimgp and nimgp-nn do)", m.Name())
	}
	if a.samples > 0 {
		if err := m.SetTestSamples(a.samples); err != nil {
			return usagef("--test-samples: %v", err)
		}
	}
	ds, lines, err := readInputs(a.input, a.labeled, m.D, m.C)
	if err != nil {
		return err
	}
	// With the rows counted the file's size is known (a probability in
	// 'g' format is at most 24 bytes with its separator): a file system
	// without room for it is found before predicting.
	if err := datasets.CheckWritableSize(a.out, int64(ds.N+1)*int64(m.C)*24); err != nil {
		return err
	}
	var noise []float64
	switch {
	case a.noise.file != "":
		if noise, err = datasets.ReadNoiseCSV(a.noise.file, ds.N, ds.D); err != nil {
			return err
		}
		if m.InputNoise() != nil {
			for k, v := range noise {
				if v == 0 {
					return fmt.Errorf("%s: data row %d, column %d: noise variance 0; predictions need positive variances", a.noise.file, k/ds.D+1, k%ds.D+1)
				}
			}
		}
	case a.noise.value > 0:
		noise = make([]float64, ds.N*ds.D)
		for i := range noise {
			noise[i] = a.noise.value
		}
	}
	if noise != nil && m.InputNoise() == nil {
		// After the file's own checks, which hold for any model.
		return usagef("--input-noise: model %s has no input-noise part (it takes its inputs as observed) and would ignore the variances; drop the flag", m.Name())
	}
	probs, err := m.PredictContext(ctx, ds.X, ds.N, noise)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; nothing written to %s", a.out)
		}
		return explainNumerical("predicting with "+a.model, err)
	}
	// Every probability is checked before the file is touched, and a bad
	// one is reported at the input's file:line.
	for i := range ds.N {
		for k := range m.C {
			if v := probs[i*m.C+k]; math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s:%d: the predicted class probabilities are not finite (p%d = %v): the row's inputs are probably far outside the scale of the training data, or the model's parameters are extreme; nothing written to %s", a.input, lines[i], k, v, a.out)
			}
		}
	}
	if err := datasets.WriteCSV(a.out, probs, ds.N, m.C); err != nil {
		return err
	}
	if a.labeled {
		s := models.Score(probs, ds.Y, m.C)
		b, err := json.Marshal(predictScores{Error: s.Error, NLL: s.NLL, N: ds.N})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return nil
}

// readInputs reads the rows to predict and checks them against a model with
// d features and c classes; lines are the rows' lines in the file.
func readInputs(path string, labeled bool, d, c int) (*datasets.Dataset, []int, error) {
	if labeled {
		// Read without NumClasses first so that a column-count mismatch is
		// reported as such rather than as an out-of-range "label".
		ds, err := datasets.ReadCSV(path, datasets.CSVOptions{Unlabeled: true})
		if err != nil {
			return nil, nil, err
		}
		if ds.D != d+1 {
			return nil, nil, fmt.Errorf("%s has %d columns; with --labeled the model expects %d feature columns and a label (%d columns)", path, ds.D, d, d+1)
		}
		return datasets.ReadCSVLines(path, datasets.CSVOptions{NumClasses: c})
	}
	ds, lines, err := datasets.ReadCSVLines(path, datasets.CSVOptions{Unlabeled: true})
	if err != nil {
		return nil, nil, err
	}
	if ds.D != d {
		hint := ""
		if ds.D == d+1 {
			hint = " (if the last column is the label, add --labeled)"
		}
		return nil, nil, fmt.Errorf("%s has %d columns; the model expects exactly %d feature columns%s", path, ds.D, d, hint)
	}
	return ds, lines, nil
}
