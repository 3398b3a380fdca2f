package models

import (
	"fmt"
	"testing"
)

// The ELBO gradient of every preset, with given (heteroscedastic) and learned
// input noise, against finite differences: all parameter groups, first order
// (which for NIMGP_FO differentiates through ∂μ/∂x) and second order.
func TestELBOGradients(t *testing.T) {
	for _, k := range PresetNames() {
		for _, learn := range []bool{false, true} {
			if m, _ := New(Options{Model: k}); learn && m.InputNoise() == nil {
				continue
			}
			for order := 1; order <= 2; order++ {
				if p, _ := LookupPreset(k); p.Inference == "ep" && order == 2 {
					continue // the EP evidence has a first-order check only
				}
				t.Run(fmt.Sprintf("%s/learn=%v/order%d", k, learn, order), func(t *testing.T) {
					rep, err := CheckGradients(withNoise(Options{Model: k}, 0, learn), order, 1)
					if err != nil {
						t.Fatal(err)
					}
					if !(rep.MaxRelErr <= 1e-6) {
						t.Errorf("%s", rep.Worst())
					}
					t.Logf("max relative error %.2g over %d parameter groups", rep.MaxRelErr, len(rep.Params))
				})
			}
		}
	}
}

// Compositions beyond the presets: the sampled input model, the non-sparse
// posterior (Z = X fixed), a binary likelihood under first-order noise and
// whitened shared inducing inputs, and the polynomial kernel (the MNIST
// tables') under MGP and under NIMGP_FO, which differentiates through the
// kernel's gradient.
func TestELBOGradientsCompositions(t *testing.T) {
	full := Options{Model: "svgp", Posterior: PosteriorOptions{Family: "full"}}
	sampled := Options{Inputs: InputOptions{Model: "sampled"}}
	foLogit := Options{Likelihood: LikelihoodOptions{Name: "logit"}, Inputs: InputOptions{Model: "first-order"}}
	whitened := Options{Model: "nimgp", Posterior: PosteriorOptions{Whitened: true, SharedZ: true}}
	poly := KernelOptions{Name: "poly"}
	mgpPoly, foPoly := Options{Model: "mgp", Kernel: poly}, Options{Model: "nimgp-fo", Kernel: poly}
	for name, o := range map[string]Options{"svgp-full": full, "sampled": sampled, "first-order-logit": foLogit, "nimgp-whitened-shared": whitened,
		"mgp-poly": mgpPoly, "nimgp-fo-poly": foPoly} {
		for order := 1; order <= 2; order++ {
			rep, err := CheckGradients(o, order, 2)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !(rep.MaxRelErr <= 1e-6) {
				t.Errorf("%s order %d: %s", name, order, rep.Worst())
			}
		}
	}
}
