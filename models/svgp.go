package models

// SVGP is binary sparse variational GP classification (Hensman, Matthews &
// Ghahramani 2015, "KLSp"): one latent function, a probit (default) or
// logit link, Gauss–Hermite expected log-likelihood.
func init() {
	mustRegister(Preset{Name: "svgp", ZInit: "kmeans", Order: 2.1, Summary: "binary sparse variational GP, probit or logit",
		Inputs: "observed", Likelihoods: []string{"probit", "logit"}, Train: svgpTraining})
}
