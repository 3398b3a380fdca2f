package models

import G "gorgonia.org/gorgonia"

// encode returns NIMGP_NN's q(x_i) for the batch: two MLPs of (x̃_i, one-hot
// y_i) give the mean and the log-variance. The networks are not used at test
// time, where y* is unknown; predictions sample p(x*|x̃*) as NIMGP does.
func (t *trainGraph) encode() (mean, logVar *G.Node, err error) {
	t.onehot = newFeed(t.g, "onehot", t.B, t.m.C)
	return t.m.enc.Apply(t.s, t.x.node, t.onehot.node)
}
