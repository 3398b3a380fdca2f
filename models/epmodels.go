package models

// EP and EP-FITC are the SVGP classification paper's baselines: binary
// probit expectation propagation on the full GP prior, and on the FITC
// prior with M inducing inputs (generalised FITC, Naish-Guzman & Holden
// 2007); hyper-parameters and Z maximise the EP evidence. SVGP-KL is the
// non-sparse variational Gaussian (Z = X held fixed), the paper's "KL".
func init() {
	mustRegister(Preset{Name: "ep", Order: 2.4, Summary: "binary expectation propagation on the full GP prior (probit)",
		Inputs: "observed", Likelihoods: []string{"probit"}, Posterior: "full", Inference: "ep", Train: svgpTraining})
	mustRegister(Preset{Name: "ep-fitc", ZInit: "kmeans", Order: 2.5, Summary: "binary EP on the FITC prior with M inducing inputs (generalised FITC)",
		Inputs: "observed", Likelihoods: []string{"probit"}, Posterior: "sparse", Inference: "ep", Train: svgpTraining})
	mustRegister(Preset{Name: "svgp-kl", Order: 2.2, Summary: "binary non-sparse variational Gaussian (Z = X fixed), probit or logit",
		Inputs: "observed", Likelihoods: []string{"probit", "logit"}, Posterior: "full", Train: svgpTraining})
}
