package models

// MGP is the noisy-input paper's noise-unaware baseline: a sparse
// variational multi-class GP with the robust-max likelihood, f evaluated at
// the observed inputs.
func init() {
	mustRegister(Preset{Name: "mgp", Order: 1.1, Summary: "multi-class sparse GP, robust-max, inputs as observed",
		Inputs: "observed", Likelihoods: []string{"robustmax"}, Train: noisyInputTraining})
}
