package models

// NIMGP treats the noiseless inputs as latent variables with a free q(x_i)
// per training point (layers/inputs.Latent).
func init() {
	mustRegister(Preset{Name: "nimgp", Order: 1.2, Summary: "MGP with latent noiseless inputs, q(x_i) per point",
		Inputs: "latent", Likelihoods: []string{"robustmax"}, Train: noisyInputTraining})
}
