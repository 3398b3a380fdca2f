// Package cli is the gpc command line as a library: Main runs it, so a
// user's own main package can register kernels, likelihoods, engines,
// presets, data families or papers and get every gpc command with them.
// cmd/gpc is that main package with nothing added.
package cli

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

// Main runs the gpc command line on args (without the program name) with
// the process's standard streams and returns the exit status: Ctrl-C or
// SIGTERM cancels the command's context (a second one kills the process),
// and GPC_CPUPROFILE=FILE writes a CPU profile of the command. A program
// that registers its own parts (kernels.Register, likelihoods.Register,
// models.RegisterEngine, models.RegisterPreset, experiments.RegisterPaper)
// in init and then calls
//
//	os.Exit(cli.Main(os.Args[1:]))
//
// is the whole gpc command with those parts: train, predict, compare and
// the experiment runner name them like the built-in ones.
func Main(args []string) int {
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
		return 1
	}
	code := Run(ctx, args, os.Stdout, os.Stderr)
	stop()
	if err := stopProfile(); err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "gpc: GPC_CPUPROFILE: %v\n", err)
		code = 1
	}
	return code
}

// Run is Main with a context and streams of the caller's: it parses args,
// runs the command and returns the exit status (2 for usage errors, 1 for
// runtime errors). It never panics.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runContext(ctx, args, stdout, stderr)
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
var order = []string{"demo", "train", "predict", "plot", "check-grad", "bench", "experiment", "data", "version", "help"}

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
