package cli

import (
	"flag"
	"strings"

	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/models"
)

// setFlags names the flags given on the command line (not left at their
// defaults).
func setFlags(f *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set
}

// refuseIgnored reports the first flag given to gpc train that model m
// would ignore: a setting silently dropped reads as one obeyed (the robust
// models refuse such flags the same way).
func refuseIgnored(m *models.Model, set map[string]bool) error {
	_, samples := m.Inputs().(inputs.Sampler)
	amortised := m.Opts.Inputs.Model == "amortised"
	switch {
	case set["input-noise"] && m.InputNoise() == nil:
		return usagef("--input-noise: model %s has no input-noise part (it takes its inputs as observed) and would ignore it; drop the flag or use a noise-aware model (nimgp, nimgp-nn, nimgp-fo)", m.Name())
	case set["test-samples"] && !samples:
		return usagef("--test-samples: model %s does not sample its test inputs and would ignore it (only nimgp and nimgp-nn do)", m.Name())
	case set["hidden"] && !amortised:
		return usagef("--hidden: model %s has no amortisation networks and would ignore it (only nimgp-nn has)", m.Name())
	case set["residual"] && !amortised:
		return usagef("--residual: model %s has no amortisation networks and would ignore it (only nimgp-nn has)", m.Name())
	case set["degree"] && !kernels.ReadsDegree(m.Opts.Kernel.Name):
		return usagef("--degree: the %s kernel has no degree and would ignore it (give --kernel poly)", m.Opts.Kernel.Name)
	case (set["delta"] || set["fix-delta"]) && !likelihoods.ReadsDelta(m.Likelihood()):
		flag := "--delta"
		if !set["delta"] {
			flag = "--fix-delta"
		}
		return usagef("%s: the %s likelihood has no δ of its own and would ignore it (only %s read it)", flag, m.Opts.Likelihood.Name, strings.Join(likelihoods.DeltaReaders(), ", "))
	}
	return nil
}
