package models

import (
	"context"
	"errors"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

var (
	_ EvidenceReporter = sviEngine{}
	_ EvidenceReporter = epEngine{}
)

// LogEvidence implements EvidenceReporter: the ELBO of the fitted q(u) and
// hyper-parameters on every training row (for a sampling likelihood, its
// Monte Carlo estimate on the likelihood's own draws).
func (sviEngine) LogEvidence(ctx context.Context, m *Model, train *datasets.Dataset) (float64, string, error) {
	obj, err := interruptibly(ctx, func() (*svi.Objective, error) { return m.newObjectiveBatch(train, train.N) })
	if err != nil {
		return 0, "", err
	}
	loss, _, err := obj.Step(solvers.FullBatch(train.N))
	return -loss, "ELBO", errors.Join(err, obj.Close())
}

// LogEvidence implements EvidenceReporter: EP's log Z at the fitted
// hyper-parameters, EP run afresh to convergence.
func (epEngine) LogEvidence(ctx context.Context, m *Model, train *datasets.Dataset) (float64, string, error) {
	o, err := newEPObjective(m, train)
	if err != nil {
		return 0, "", err
	}
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	loss, _, err := o.Step(solvers.FullBatch(train.N))
	return -loss, "log Z_EP", err
}
