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
		Defaults: func(o *models.Options) {
			if o.Kernel.Name == "" && o.Kernel.Factory == nil {
				o.Kernel.Name = "se-iso"
				if o.Kernel.Init == nil {
					o.Kernel.Init = &models.KernelInit{Lengthscale: 1, Variance: 1}
				}
				o.Kernel.FixVariance = true
				o.Kernel.Shared = true
			}
			if o.Posterior.Jitter == 0 {
				o.Posterior.Jitter = 1e-6
			}
		},
	}
	if err := models.RegisterPreset(p); err != nil {
		panic(err)
	}
}
