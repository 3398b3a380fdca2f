package laplace

import "github.com/gpc-dev/gpc/models"

// registerHTPC registers the heavy-tailed process classifier of Wauthier &
// Jordan (2010), the robust multi-class paper's Laplace baseline: the htpc
// likelihood (the hyperbolic-secant copula of each class's latent GP, then
// softmax) under this engine, with that paper's isotropic SE kernel (22)
// held at unit amplitude, since the copula's marginals are hyperbolic
// secant only for unit-variance latent processes, starting at γ = 1 with b_k
// = 1 and no white noise, and a jitter of 1e-6.
func registerHTPC() {
	p := models.Preset{
		Name:        "htpc",
		Summary:     "heavy-tailed process classifier: the htpc likelihood by Laplace (paper 003's HTPC baseline)",
		Inputs:      "observed",
		Likelihoods: []string{"htpc"},
		Posterior:   "full",
		Inference:   "laplace",
		Order:       3.3,
		// The paper's kernel (22) is registered as se-gamma: unit
		// amplitude (the copula's marginals are hyperbolic secant only for
		// unit-variance processes), γ from 1, no white noise.
		Kernel:       "se-gamma",
		SharedKernel: true,
		Defaults: func(o *models.Options) {
			if o.Posterior.Jitter == 0 {
				o.Posterior.Jitter = 1e-6
			}
		},
	}
	if err := models.RegisterPreset(p); err != nil {
		panic(err)
	}
}
