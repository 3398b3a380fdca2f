// Command gpc trains, evaluates and benchmarks the multi-class Gaussian-process
// classifiers of "Multi-class Gaussian process classification with noisy
// inputs" (package models): MGP, NIMGP, NIMGP_NN and NIMGP_FO.
//
// Usage:
//
//	gpc <command> [flags]
//
// The commands are:
//
//	demo        run the paper's 1-D toy experiment (Table 1) on built-in
//	            synthetic data for all four models and print a table
//	train       train a model on a CSV file and save it as JSON
//	predict     write class probabilities for the rows of a CSV file
//	check-grad  compare a model's ELBO gradients with finite differences
//	bench       time one training iteration of each model
//	data fetch  download a data set (gpc data fetch mnist)
//	version     print the version
//	help        print this help, or a command's help (gpc help train)
//
// Data files are comma-separated with an optional header. Training files
// hold the inputs followed by an integer class label 0..C−1 in the last
// column:
//
//	gpc train --train train.csv --model nimgp-fo --input-noise 0.1 --out m.json
//	gpc predict --model m.json --input test.csv --labeled --out probs.csv
//
// --input-noise is "learn" (one variance per input dimension, learned with
// the model), a number (the same known variance for every input entry) or a
// CSV file of per-entry variances with the shape of the inputs.
//
// gpc train standardises the inputs (the transform is saved in the model
// and applied by gpc predict; --no-standardize turns it off).
//
// GPC_CPUPROFILE=FILE writes a CPU profile of the command to FILE (go tool
// pprof reads it).
//
// Every command prints its flags with -h. Usage errors exit with status 2,
// runtime errors with status 1 and a message "gpc <command>: ..." on
// standard error. Ctrl-C or SIGTERM interrupts training or prediction, also
// while a model's graph is being built, without writing a file; outputs are
// written through a temporary file renamed over the target.
package main

import (
	"os"

	"github.com/gpc-dev/gpc/cmd/gpc/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
