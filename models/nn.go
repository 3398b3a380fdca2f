package models

// NIMGP_NN amortises q(x_i) by two networks of (x̃_i, y_i)
// (layers/inputs.Amortised).
func init() {
	mustRegister(Preset{Name: "nimgp-nn", Order: 1.3, Summary: "NIMGP with q(x_i) amortised by two MLPs",
		Inputs: "amortised", Likelihoods: []string{"robustmax"}, Train: noisyInputTraining})
}
