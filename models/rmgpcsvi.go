package models

// RMGPC-SVI is the robust multi-class GP of Hernández-Lobato et al. (2011)
// trained the scalable way: a sparse variational GP per class with the
// robust-max likelihood whose label-flip rate ε is learned under a Beta(1,
// 9) prior (the paper's prior on its outlier rate), by minibatch
// stochastic variational inference — for data far too large for EP.
func init() {
	mustRegister(Preset{Name: "rmgpc-svi", ZInit: "kmeans", Order: 3.4, Summary: "robust multi-class sparse GP, ε learned under a Beta(1, 9) prior, by SVI",
		Inputs: "observed", Likelihoods: []string{"robustmax-beta"}})
}
