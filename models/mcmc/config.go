package mcmc

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gpc-dev/gpc/models"
)

// Name is the engine's registered name, and the prefix of its settings in
// models.Options.Settings ("mcmc.chains", ...).
const Name = "mcmc"

// Config holds the sampler's settings, read from models.Options.Settings
// under the engine's name; zero fields take the defaults in parentheses.
type Config struct {
	// Chains is the number of independent chains (4), each with its own
	// random stream seeded by Options.Train.Seed and the chain's index.
	Chains int
	// Samples is the draws kept per chain after warm-up (1000), Warmup the
	// iterations discarded first (500), Thin the iterations per kept draw (1).
	Samples, Warmup, Thin int
	// Hyper is "fixed" (the kernel and likelihood hyper-parameters held at
	// a point: the model's initial values, InitFrom's, or Fit's) or
	// "sample" (slice sampling of their unconstrained values in the
	// whitened parameterisation, under a Gaussian prior centred on that
	// point with standard deviation HyperSD).
	Hyper string
	// HyperSD is the prior's standard deviation of each unconstrained
	// (log) hyper-parameter under Hyper "sample" (3).
	HyperSD float64
	// InitFrom is the path of a saved model (gpc train --out) whose kernel
	// and likelihood parameters become the point the chains start from.
	InitFrom string
	// Fit names an engine that fits the hyper-parameters first (say "ep"
	// or "svi"); its values become the point.
	Fit string
	// Proposal is the Gaussian the ellipses are drawn around: "prior"
	// (the GP prior, plain elliptical slice sampling) or "fit" (the
	// Gaussian posterior of the Fit or InitFrom model, q(u) at Z = X, with
	// its covariance scaled by ProposalScale²): the target is unchanged,
	// p(f|y) ∝ N(f; μ, S) · p(y|f) N(f; 0, K)/N(f; μ, S), but the ellipses
	// then have the posterior's shape, which mixes far faster where the
	// data pin f down (Nishihara, Murray & Adams 2014). Hyper "fixed" only.
	Proposal      string
	ProposalScale float64
}

// settings lists the keys Config reads, for error messages.
var settings = []string{"chains", "samples", "warmup", "thin", "hyper", "hyper-sd", "init-from", "fit", "proposal", "proposal-scale"}

// ConfigOf reads the sampler's settings from the options, with defaults,
// and refuses unknown keys under the engine's name and invalid values.
func ConfigOf(o models.Options) (Config, error) {
	c := Config{Chains: 4, Samples: 1000, Warmup: 500, Thin: 1, Hyper: "fixed", HyperSD: 3, Proposal: "prior", ProposalScale: 1}
	for k, v := range o.Settings {
		if len(k) <= len(Name)+1 || k[:len(Name)+1] != Name+"." {
			continue
		}
		key := k[len(Name)+1:]
		var err error
		switch key {
		case "chains":
			c.Chains, err = strconv.Atoi(v)
		case "samples":
			c.Samples, err = strconv.Atoi(v)
		case "warmup":
			c.Warmup, err = strconv.Atoi(v)
		case "thin":
			c.Thin, err = strconv.Atoi(v)
		case "hyper":
			c.Hyper = v
		case "hyper-sd":
			c.HyperSD, err = strconv.ParseFloat(v, 64)
		case "init-from":
			c.InitFrom = v
		case "fit":
			c.Fit = v
		case "proposal":
			c.Proposal = v
		case "proposal-scale":
			c.ProposalScale, err = strconv.ParseFloat(v, 64)
		default:
			return c, fmt.Errorf("mcmc: unknown setting %q (want one of %v)", k, settings)
		}
		if err != nil {
			return c, fmt.Errorf("mcmc: setting %s=%q: %v", k, v, err)
		}
	}
	switch {
	case c.Chains < 1 || c.Chains > 256:
		return c, fmt.Errorf("mcmc: %d chains (want 1 to 256)", c.Chains)
	case c.Samples < 1:
		return c, fmt.Errorf("mcmc: %d samples per chain", c.Samples)
	case c.Warmup < 0 || c.Thin < 1:
		return c, fmt.Errorf("mcmc: warm-up %d, thinning %d", c.Warmup, c.Thin)
	case c.Hyper != "fixed" && c.Hyper != "sample":
		return c, fmt.Errorf("mcmc: hyper %q (want fixed or sample)", c.Hyper)
	case !(c.HyperSD > 0):
		return c, fmt.Errorf("mcmc: hyper-sd %g", c.HyperSD)
	case c.Fit == Name:
		return c, fmt.Errorf("mcmc: fit=%s would fit the hyper-parameters by this engine itself", Name)
	case c.Fit != "" && c.InitFrom != "":
		return c, fmt.Errorf("mcmc: give fit or init-from, not both")
	case c.Proposal != "prior" && c.Proposal != "fit":
		return c, fmt.Errorf("mcmc: proposal %q (want prior or fit)", c.Proposal)
	case c.Proposal == "fit" && c.Fit == "" && c.InitFrom == "":
		return c, fmt.Errorf("mcmc: proposal=fit needs a fit to take the Gaussian from (fit or init-from)")
	case c.Proposal == "fit" && c.Hyper != "fixed":
		return c, fmt.Errorf("mcmc: proposal=fit holds the hyper-parameters (the fit's Gaussian is for its own); hyper must be fixed")
	case !(c.ProposalScale > 0) || math.IsInf(c.ProposalScale, 0):
		return c, fmt.Errorf("mcmc: proposal-scale %g", c.ProposalScale)
	}
	if c.Fit != "" {
		if _, ok := models.LookupEngine(c.Fit); !ok {
			return c, fmt.Errorf("mcmc: fit=%q is not a registered engine (want %s)", c.Fit, models.EngineHelp())
		}
	}
	return c, nil
}

// iterations is the total number of iterations of each chain.
func (c Config) iterations() int { return c.Warmup + c.Samples*c.Thin }
