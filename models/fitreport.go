package models

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gpc-dev/gpc/solvers"
)

// FitReport says how a fit ended: converged by its stopping rule, or
// stopped at its cap (or otherwise) while its objective was still
// improving. Fit keeps it in the model (Model.FitReport), Save stores it as
// the model file's "fit" record, and Fit writes a one-line warning to
// FitConfig.Warnings when the fit did not converge.
type FitReport struct {
	// Optimizer is what ran: "adam", "adadelta" or "lbfgs".
	Optimizer string `json:"optimizer"`
	// Stop is the stopping rule (TrainOptions.Stop).
	Stop string `json:"stop"`
	// Converged is true when the objective's relative change per Unit had
	// fallen below Tolerance when the fit ended.
	Converged bool `json:"converged"`
	// Reason is why the fit ended: "converged", "cap" (the Epochs cap),
	// "iteration limit" (FitConfig.MaxIterations), "stopped by the
	// callback", or the L-BFGS status.
	Reason string `json:"reason"`
	// Iterations counts what ran, in Unit; Cap is the most allowed.
	Iterations int    `json:"iterations"`
	Cap        int    `json:"cap"`
	Unit       string `json:"unit"` // "epoch" or "iteration"
	// Objective names the maximised quantity ("ELBO", "EP log evidence").
	Objective string `json:"objective"`
	// Value is the objective at the end (for minibatch fits, the last
	// epoch's mean estimate).
	Value float64 `json:"value"`
	// Rise is how much the objective rose per Unit at the end (minibatch:
	// smoothed over solvers.DefaultPlateauWindow epochs), RelRise that rise
	// relative to the objective's size, and Tolerance the RelRise below
	// which the fit counts as converged.
	Rise      float64 `json:"rise"`
	RelRise   float64 `json:"rel_rise"`
	Tolerance float64 `json:"tolerance"`
}

// FitReport returns how the model's last fit ended (nil before a fit, for
// an engine that does not report, or for a model saved before reports
// existed).
func (m *Model) FitReport() *FitReport { return m.report }

// String is the report in one line, naming what to raise when the fit
// did not converge.
func (r *FitReport) String() string {
	if r == nil {
		return "no fit report"
	}
	moving := fmt.Sprintf("the %s still rising %.3g per %s (%.2g%%)", r.Objective, r.Rise, r.Unit, 100*r.RelRise)
	switch {
	case r.Converged:
		return fmt.Sprintf("converged after %d %ss (%s %.6g, rising %.2g%% per %s, tolerance %.2g%%)",
			r.Iterations, r.Unit, r.Objective, r.Value, 100*r.RelRise, r.Unit, 100*r.Tolerance)
	case r.Reason == "cap":
		return fmt.Sprintf("stopped at the %d-%s cap with %s; not converged: raise the cap (Options.Train.Epochs, gpc train --epochs)", r.Cap, r.Unit, moving)
	}
	return fmt.Sprintf("stopped after %d %ss (%s) with %s; not converged", r.Iterations, r.Unit, r.Reason, moving)
}

// warnUnconverged writes the report to w (nil: os.Stderr) when the fit
// did not converge.
func (r *FitReport) warnUnconverged(w io.Writer, model string) {
	if r == nil || r.Converged {
		return
	}
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "models: warning: %s %s\n", model, r)
}

// minibatchReport reads a minibatch fit's end from its epoch losses: the
// smoothed rise of the ELBO over the last epochs, against tol.
func minibatchReport(optimizer, stop string, hist solvers.History, cap int, tol float64, reason string) *FitReport {
	r := &FitReport{Optimizer: optimizer, Stop: stop, Iterations: len(hist), Cap: cap, Unit: "epoch", Objective: "ELBO", Tolerance: tol, Reason: reason}
	p := solvers.Plateau{}
	for _, e := range hist {
		p.Add(e.Loss)
	}
	if e, ok := hist.Last(); ok {
		r.Value = -e.Loss
	}
	if rise, rel, ok := p.Rate(); ok {
		r.Rise, r.RelRise = rise, rel
		r.Converged = rel < tol
	}
	if r.Converged {
		r.Reason = "converged"
	}
	return r
}

// lbfgsReport reads an L-BFGS fit's end from the solver's result.
func lbfgsReport(stop, objective string, res solvers.Result, iterations, cap int, tol float64) *FitReport {
	r := &FitReport{Optimizer: "lbfgs", Stop: stop, Iterations: iterations, Cap: cap, Unit: "iteration", Objective: objective, Tolerance: tol,
		Value: -res.F, RelRise: res.LastChange, Rise: res.LastChange * math.Abs(res.F), Reason: string(res.Status)}
	// A run the solver calls converged has met its own tests, which may be
	// tighter or looser than tol (the budget rule uses the solver's).
	r.Converged = res.Converged || res.Iterations > 0 && res.LastChange < tol
	switch {
	case r.Converged:
		r.Reason = "converged"
	case res.Status == solvers.IterationLimit:
		r.Reason = "cap"
	}
	return r
}
