// Command gpc trains, evaluates and benchmarks Gaussian-process classifiers
// (package models): the noisy-input paper's MGP, NIMGP, NIMGP_NN and
// NIMGP_FO; the scalable variational paper's SVGP, the non-sparse
// variational Gaussian, the mean-field model, EP and EP-FITC; the robust
// paper's RMGPC, SMGPC, HTPC and RMGPC by SVI; the additive-noise paper's
// GPC-I/II/III and GPCsm; or any composition of kernel, likelihood,
// posterior family and input model. It also runs the papers' experiments.
//
// Usage:
//
//	gpc <command> [flags]
//
// The commands are:
//
//	demo        run the noisy-input paper's 1-D toy experiment (Table 1) on
//	            built-in synthetic data for its four models and print a table
//	train       train a model on a CSV file and save it as JSON
//	predict     write class probabilities for the rows of a CSV file
//	plot        draw a trained model's predictions on a CSV file as a PNG
//	check-grad  compare a model's ELBO gradients with finite differences
//	bench       time one training iteration of each model
//	experiment  run a YAML experiment spec, report it, splice its tables
//	            into a document, print the papers' scoreboard
//	data fetch  download a data set (gpc data fetch mnist|airline)
//	outliers    print an RMGPC model's outlier probabilities as JSON
//	version     print the version and the BLAS in use
//	help        print this help, or a command's help (gpc help train)
//
// `gpc help` lists the models (presets); `gpc train -h` the parts a model
// can be composed of.
//
// Data files are comma-separated with an optional header. Training files
// hold the inputs followed by an integer class label 0..C−1 in the last
// column:
//
//	gpc train --train train.csv --model mgp --out m.json
//	gpc predict --model m.json --input test.csv --labeled --out probs.csv
//	gpc plot --model m.json --input test.csv --labeled --out plot.png
//
// --input-noise (models with an input-noise part) is "learn" (one variance
// per input dimension, learned with the model), a number (the same known
// variance for every input entry) or a CSV file of per-entry variances with
// the shape of the inputs.
//
// gpc train standardises the inputs (the transform is saved in the model
// and applied by gpc predict and gpc plot; --no-standardize turns it off).
//
// The papers' data sets are read from --data-dir, else $GPC_DATA, else
// ../shared/data (searched upwards), else ./data.
//
// GPC_CPUPROFILE=FILE writes a CPU profile of the command to FILE (go tool
// pprof reads it).
//
// Every command prints its flags with -h. Usage errors exit with status 2,
// runtime errors with status 1 and a message "gpc <command>: ..." on
// standard error. Ctrl-C or SIGTERM interrupts training or prediction, also
// while a model's graph is being built, without writing a file; outputs are
// written through a temporary file renamed over the target.

// cmd/gpc is cli.Main with nothing added: a program of your own that
// registers kernels, likelihoods, engines, presets or papers and calls
// cli.Main is the same command with them (tests/extgpc).
package main

import (
	"os"

	"github.com/gpc-dev/gpc/cmd/gpc/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
