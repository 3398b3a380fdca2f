package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
	"github.com/gpc-dev/gpc/models/rmgpc"
)

func init() {
	register(&command{name: "outliers", summary: "print P(z_i = 1 | y, X) of every training row of an RMGPC model as JSON", run: runOutliers})
}

// The robust paper's models are fitted by their own engines (EP, Laplace)
// with the whole hyper-parameter search inside, not by models' training
// loop, so train and predict hand them over here.

// externalModels are the --model names fitted outside models' compositions.
var externalModels = map[string]string{
	"rmgpc": "robust multi-class GP by EP, outlier indicators under Beta(1, 9) (paper 003)",
	"smgpc": "the same by EP with ρ ≡ 0 and a latent noise per class (paper 003's SMGPC)",
}

// externalModel is a fitted model of one of those engines.
type externalModel interface {
	Predict(x []float64, n int) ([]float64, error)
	Save(path string) error
}

// trainExternal fits an external model on a CSV file and saves it; the
// hyper-parameter search is the engine's own (evidence maximisation).
func trainExternal(ctx context.Context, name, trainPath, out string, quiet bool, stderr io.Writer) error {
	if err := checkOutput(out, "model.json", trainPath); err != nil {
		return err
	}
	ds, err := datasets.ReadCSV(trainPath, datasets.CSVOptions{})
	if err != nil {
		return err
	}
	if ds.C < 2 {
		return fmt.Errorf("%s: every label is 0; a classifier needs at least two classes", trainPath)
	}
	if err := ds.MissingClasses(trainPath, ""); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "training %s on %s: %d rows, %d features, %d classes (hyper-parameters by evidence maximisation)\n", name, trainPath, ds.N, ds.D, ds.C)
	}
	start := time.Now()
	var m externalModel
	switch name {
	case "rmgpc", "smgpc":
		m, err = rmgpc.Fit(ctx, ds, rmgpc.Config{SMGPC: name == "smgpc"})
	default:
		return fmt.Errorf("gpc train: %q is not an external model", name)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("training interrupted; no model written to %s", out)
		}
		return explainNumerical("training on "+trainPath, err)
	}
	if err := m.Save(out); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "wrote %s (%s, trained in %.1f s)\n", out, name, time.Since(start).Seconds())
	}
	return nil
}

// loadedExternal is an external model read back, with its shape.
type loadedExternal struct {
	m    externalModel
	d, c int
	name string
	rm   *rmgpc.Model
}

// loadExternal reads path if it is an RMGPC model file; (nil, nil)
// means it is not one (a models file, say), so the caller loads it as usual.
func loadExternal(path string) (*loadedExternal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(b, &head) != nil {
		return nil, nil // not JSON of ours: models.Load reports it properly
	}
	switch head.Format {
	case rmgpc.FileFormat:
		m, err := rmgpc.Load(path)
		if err != nil {
			return nil, err
		}
		name := "rmgpc"
		if m.Config.SMGPC {
			name = "smgpc"
		}
		return &loadedExternal{m: m, d: m.D, c: m.C, name: name, rm: m}, nil
	case "gpc-htpc":
		// HTPC is a preset now, saved as gpc-model.
		return nil, fmt.Errorf("%s: an HTPC model in the retired gpc-htpc format; retrain it with gpc train --model htpc", path)
	}
	return nil, nil
}

// runOutliers prints {"p": [...]}: P(z_i = 1 | y, X) for every training
// row of an RMGPC model, in the training file's order.
func runOutliers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("outliers", "gpc outliers --model MODEL.json",
		`Print one JSON line {"p": [...]}: the posterior probability P(z_i = 1 | y, X)
that training row i is an outlier (its label drawn at random), for every
training row of an RMGPC model (gpc train --model rmgpc), in file order.`)
	model := f.String("model", "", "RMGPC model `file` (from gpc train --model rmgpc)")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *model == "" {
		return usagef("missing --model")
	}
	ext, err := loadExternal(*model)
	if err != nil {
		return err
	}
	if ext == nil || ext.rm == nil || ext.rm.Config.SMGPC {
		what := "this model"
		if ext != nil {
			what = "a " + ext.name + " model"
		}
		return fmt.Errorf("%s: %s has no outlier indicators; train one with gpc train --model rmgpc", *model, what)
	}
	b, err := json.Marshal(struct {
		P []float64 `json:"p"`
	}{ext.rm.Outliers()})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// externalTrainArgs recognises `gpc train --model rmgpc|smgpc …` and
// parses the flags those engines take (--train, --out, --quiet); ok is
// false for every other model, which parseTrain handles.
func externalTrainArgs(args []string) (name, train, out string, quiet, ok bool, err error) {
	for i, a := range args {
		v := ""
		switch {
		case a == "--model" || a == "-model":
			if i+1 < len(args) {
				v = args[i+1]
			}
		case len(a) > 8 && (a[:8] == "--model=" || a[:7] == "-model="):
			v = a[len("--model="):]
			if a[1] != '-' {
				v = a[len("-model="):]
			}
		}
		if _, is := externalModels[v]; is {
			name = v
		}
	}
	if name == "" {
		return "", "", "", false, false, nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		key, val, hasVal := cutFlag(a)
		switch key {
		case "model", "train", "out":
			if !hasVal {
				if i+1 >= len(args) {
					return "", "", "", false, true, usagef("flag --%s needs a value", key)
				}
				i++
				val = args[i]
			}
			switch key {
			case "train":
				train = val
			case "out":
				out = val
			}
		case "quiet", "q":
			quiet = true
		default:
			return "", "", "", false, true, usagef("%s: --model %s takes only --train, --out and --quiet (its hyper-parameters come from evidence maximisation)", a, name)
		}
	}
	if train == "" || out == "" {
		return "", "", "", false, true, usagef("--model %s needs --train FILE.csv and --out MODEL.json", name)
	}
	return name, train, out, quiet, true, nil
}

// cutFlag splits "--k=v" or "-k" into its key and value.
func cutFlag(a string) (key, val string, hasVal bool) {
	for len(a) > 0 && a[0] == '-' {
		a = a[1:]
	}
	for i := 0; i < len(a); i++ {
		if a[i] == '=' {
			return a[:i], a[i+1:], true
		}
	}
	return a, "", false
}

// predictExternal writes an external model's class probabilities for the
// rows of the input file, as predict does for every model: all checked
// before the file is written, and error and NLL as JSON for labelled rows.
func predictExternal(ctx context.Context, ext *loadedExternal, a *predictArgs, stdout io.Writer) error {
	if a.noise.file != "" || a.noise.value > 0 || a.samples > 0 {
		return usagef("a %s model takes no input noise or --test-samples", ext.name)
	}
	ds, lines, err := readInputs(a.input, a.labeled, ext.d, ext.c)
	if err != nil {
		return err
	}
	probs, err := ext.m.Predict(ds.X, ds.N)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; nothing written to %s", a.out)
		}
		return explainNumerical("predicting with "+a.model, err)
	}
	for i := range ds.N {
		for k := range ext.c {
			if v := probs[i*ext.c+k]; math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s:%d: the predicted class probabilities are not finite (p%d = %v); nothing written to %s", a.input, lines[i], k, v, a.out)
			}
		}
	}
	if err := datasets.WriteCSV(a.out, probs, ds.N, ext.c); err != nil {
		return err
	}
	if a.labeled {
		s := models.Score(probs, ds.Y, ext.c)
		b, err := json.Marshal(predictScores{Error: s.Error, NLL: s.NLL, N: ds.N})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return nil
}
