package models

// RMGPC is the robust multi-class GP of Hernández-Lobato, Hernández-Lobato
// & Dupont (2011): one latent function per class sharing the paper's
// isotropic kernel (22), the robust-max likelihood with outlier indicators
// z_i ~ Bernoulli(ρ), ρ ~ Beta(1, 9), fitted by multi-latent EP with γ
// maximising the EP evidence; the fit keeps P(z_i = 1 | y, X) for every
// training row (Model.Outliers). SMGPC is the paper's baseline (Kim &
// Ghahramani 2006): the same EP with ρ ≡ 0 (the argmax likelihood) and a
// learnt latent noise ϑ_k² per class, a white noise on each class's kernel.
func init() {
	mustRegister(Preset{Name: "rmgpc", Order: 3.1, Summary: "robust multi-class GP by EP, outlier indicators under Beta(1, 9) (paper 003)",
		Inputs: "observed", Likelihoods: []string{"robustmax-rho"}, Posterior: "full", Inference: "ep",
		Kernel: "se-gamma", SharedKernel: true})
	mustRegister(Preset{Name: "smgpc", Order: 3.2, Summary: "multi-class GP by EP with ρ ≡ 0 and a latent noise per class (paper 003's SMGPC)",
		Inputs: "observed", Likelihoods: []string{"argmax"}, Posterior: "full", Inference: "ep",
		Kernel: "se-gamma", SharedKernel: true, LatentNoise: 1})
}
