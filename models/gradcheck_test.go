package models

import (
	"fmt"
	"testing"
)

// The ELBO gradient of every model, with given (heteroscedastic) and learned
// input noise, against finite differences: all parameter groups, first order
// (which for NIMGP_FO differentiates through ∂μ/∂x) and second order.
func TestELBOGradients(t *testing.T) {
	for _, k := range Kinds {
		for _, learn := range []bool{false, true} {
			if k == MGP && learn {
				continue
			}
			for order := 1; order <= 2; order++ {
				t.Run(fmt.Sprintf("%s/learn=%v/order%d", k, learn, order), func(t *testing.T) {
					rep, err := CheckGradients(Options{Kind: k, LearnNoise: learn}, order, 1)
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
