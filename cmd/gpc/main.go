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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"

	"github.com/gpc-dev/gpc/datasets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C, restore the default behaviour so that a
		// second one kills the process even if it is stuck.
		<-ctx.Done()
		stop()
	}()
	stopProfile, err := startProfile(os.Getenv("GPC_CPUPROFILE"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpc: GPC_CPUPROFILE: %v\n", err)
		os.Exit(1)
	}
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err := stopProfile(); err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "gpc: GPC_CPUPROFILE: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole command to path (none
// when path is empty), for go tool pprof: where a long experiment run
// spends its time is otherwise guesswork.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	// Written beside path and renamed over it when the command ends, as
	// every output is (datasets.CreateAtomic).
	f, err := datasets.CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f.File); err != nil {
		f.Abort()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Commit()
	}, nil
}

// command is one subcommand of gpc.
type command struct {
	name    string
	summary string
	// run executes the command with the arguments after its name. It returns
	// a *usageError for bad arguments, errHelp after printing its help, and
	// any other error for runtime failures.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// hidden commands are not listed by gpc help.
	hidden bool
}

// commands is the command table; files register their commands in init so
// each command lives next to its implementation.
var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// order is the order commands are listed in by gpc help.
var order = []string{"demo", "train", "predict", "check-grad", "bench", "experiment", "data", "version", "help"}

// usageError is a problem with the command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errHelp reports that help was requested and printed (exit status 0).
var errHelp = errors.New("help requested")

// run is main without the process: it parses args (without the program
// name), runs the command and returns the exit status. It never panics.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context whose cancellation (Ctrl-C) interrupts
// long-running commands.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	case "-version", "--version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		msg := fmt.Sprintf("gpc: unknown command %q", name)
		if strings.HasPrefix(name, "-") {
			msg = fmt.Sprintf("gpc: flag %s given before a command", name)
		}
		fmt.Fprintf(stderr, "%s\nRun 'gpc help' for the list of commands.\n", msg)
		return 2
	}
	defer func() {
		// Last line of defence: a bug must not show a stack trace to a
		// user who only gave bad input.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "gpc %s: internal error: %v\n", name, r)
			code = 1
		}
	}()
	err := cmd.run(ctx, args[1:], stdout, stderr)
	return exitCode(name, err, stderr)
}

// exitCode reports err on stderr and maps it to an exit status.
func exitCode(name string, err error, stderr io.Writer) int {
	var ue *usageError
	var st exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st) // the command has reported the problem itself
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gpc %s: %s\nRun 'gpc %s -h' for usage.\n", name, ue.msg, name)
		return 2
	default:
		fmt.Fprintf(stderr, "gpc %s: %v\n", name, err)
		return 1
	}
}

// printUsage writes the overall help.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `gpc: Gaussian-process classification (noisy inputs, scalable variational,
robust and additive-noise classifiers), built on automatic differentiation.

Usage:
	gpc <command> [flags]

Commands:
`)
	names := append([]string(nil), order...)
	for n := range commands {
		found := false
		for _, o := range order {
			found = found || o == n
		}
		if !found {
			names = append(names, n)
		}
	}
	sort.SliceStable(names[len(order):], func(i, j int) bool { return names[len(order)+i] < names[len(order)+j] })
	for _, n := range names {
		if c, ok := commands[n]; ok && !c.hidden {
			fmt.Fprintf(w, "\t%-11s %s\n", n, c.summary)
		}
	}
	fmt.Fprintf(w, `
Models (gpc train --model NAME):
%s
Run 'gpc <command> -h' for a command's flags. Start with 'gpc demo'.
`, modelHelp())
}

func init() {
	register(&command{name: "help", summary: "print help for gpc or a command (gpc help train)", run: runHelp})
}

func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch len(args) {
	case 0:
		printUsage(stdout)
		return nil
	case 1:
		switch args[0] {
		case "help", "-h", "-help", "--help":
			printUsage(stdout)
			return nil
		}
		c, ok := commands[args[0]]
		if !ok {
			return usagef("unknown command %q", args[0])
		}
		return c.run(ctx, []string{"-h"}, stdout, stderr)
	}
	return usagef("too many arguments %q", args)
}

// cmdFlags is a FlagSet with gpc's usage conventions.
type cmdFlags struct {
	*flag.FlagSet
	usage string // the synopsis lines after "Usage:"
	about string // a paragraph describing the command
}

func newFlags(name, usage, about string) *cmdFlags {
	fs := flag.NewFlagSet("gpc "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by exitCode, help by parse
	return &cmdFlags{FlagSet: fs, usage: usage, about: about}
}

// printHelp writes the command's usage and flags to w.
func (f *cmdFlags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n\t%s\n\n%s\n", f.usage, strings.TrimSpace(f.about))
	has := false
	f.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprint(w, "\nFlags:\n")
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
}

// parse parses args, allowing flags and positional arguments to be mixed
// ("gpc data fetch mnist --data-dir d"), and returns the positional ones.
// -h prints the help to stdout and returns errHelp.
func (f *cmdFlags) parse(args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.printHelp(stdout)
				return nil, errHelp
			}
			return nil, &usageError{err.Error()}
		}
		rest := f.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// noArgs rejects positional arguments.
func noArgs(pos []string) error {
	if len(pos) > 0 {
		return usagef("unexpected argument %q (all inputs are given with flags)", pos[0])
	}
	return nil
}
