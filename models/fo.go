package models

// NIMGP_FO inflates the latent variances by the first-order term
// Δ = ∂μᵀ V ∂μ (layers/inputs.FirstOrder).
func init() {
	mustRegister(Preset{Name: "nimgp-fo", Order: 1.4, Summary: "MGP with first-order input-noise variances Δ = ∂μᵀV∂μ",
		Inputs: "first-order", Likelihoods: []string{"robustmax"}, Train: noisyInputTraining})
}
