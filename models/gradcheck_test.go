package models

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/solvers"
)

// The ELBO gradient of every preset, with given (heteroscedastic) and learned
// input noise, against finite differences: all parameter groups, first order
// (which for NIMGP_FO differentiates through ∂μ/∂x) and second order.
func TestELBOGradients(t *testing.T) {
	skipFiniteDifferencesUnderRace(t)
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
// whitened shared inducing inputs, the polynomial kernel (the MNIST
// tables') under MGP and under NIMGP_FO, which differentiates through the
// kernel's gradient (so that order 2 reaches the kernel's third
// derivative), Matérn-5/2 under NIMGP_FO, and Table V's Matérn-5/2 + RBF
// under GPC-I. (Matérn-3/2 is C² but not C³ where an input meets an
// inducing point, which k-means initialisation makes happen, so NIMGP_FO's
// second order has no finite value there to check against.)
func TestELBOGradientsCompositions(t *testing.T) {
	skipFiniteDifferencesUnderRace(t)
	full := Options{Model: "svgp", Posterior: PosteriorOptions{Family: "full"}}
	sampled := Options{Inputs: InputOptions{Model: "sampled"}}
	foLogit := Options{Likelihood: LikelihoodOptions{Name: "logit"}, Inputs: InputOptions{Model: "first-order"}}
	whitened := Options{Model: "nimgp", Posterior: PosteriorOptions{Whitened: true, SharedZ: true}}
	poly := KernelOptions{Name: "poly"}
	mgpPoly, foPoly := Options{Model: "mgp", Kernel: poly}, Options{Model: "nimgp-fo", Kernel: poly}
	foMatern := Options{Model: "nimgp-fo", Kernel: KernelOptions{Name: "matern52"}}
	gpcMaternRBF := Options{Model: "gpc1", Kernel: KernelOptions{Name: AdditiveMaternRBF}}
	for name, o := range map[string]Options{"svgp-full": full, "sampled": sampled, "first-order-logit": foLogit, "nimgp-whitened-shared": whitened,
		"mgp-poly": mgpPoly, "nimgp-fo-poly": foPoly, "nimgp-fo-matern52": foMatern, "gpc1-matern52+rbf": gpcMaternRBF} {
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

// NIMGP_FO with the polynomial kernel and learned noise on inputs wide
// enough (D = 12 against M = 4) that Δ takes its closed form
// (variational.Built.InflatedClassMarginals), as on MNIST.
func TestELBOGradientsClosedFormDelta(t *testing.T) {
	skipFiniteDifferencesUnderRace(t)
	o := withNoise(Options{Model: "nimgp-fo", Kernel: KernelOptions{Name: "poly"}}, 0, true)
	for order := 1; order <= 2; order++ {
		rep, err := checkGradients(o, order, 2, 12)
		if err != nil {
			t.Fatal(err)
		}
		if !(rep.MaxRelErr <= 1e-6) {
			t.Errorf("order %d: %s", order, rep.Worst())
		}
	}
}

// hiddenKernel hides the polynomial kernel's DotProduct (keeping its
// white noise), so that NIMGP_FO differentiates the means.
type hiddenKernel struct{ p *kernels.Polynomial }

func (h hiddenKernel) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) { return h.p.K(s, x, z) }
func (h hiddenKernel) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) { return h.p.Diag(s, x) }
func (h hiddenKernel) Params() []*layers.Param                          { return h.p.Params() }
func (h hiddenKernel) Noise(s *layers.Scope) (*G.Node, error)           { return h.p.Noise(s) }

// The closed-form Δ gives the ELBO the differentiated one gives, at the
// same parameters.
func TestClosedFormDeltaELBO(t *testing.T) {
	elbo := func(hide bool) (float64, int64) {
		o := withNoise(Options{Model: "nimgp-fo", Kernel: KernelOptions{Name: "poly"}}, 0, true)
		if hide {
			o.Kernel.Factory = func(name string, d int, init KernelInit) kernels.Kernel {
				return hiddenKernel{kernels.NewPolynomial(name, 9, d, init.Lengthscale, init.Variance, init.Noise)}
			}
		}
		mod, ds, _, err := gradcheckModel(o, 2, 12)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := mod.newObjective(ds)
		if err != nil {
			t.Fatal(err)
		}
		defer obj.Close()
		before := graph.MultiplyAdds()
		loss, _, err := obj.Step(solvers.FullBatch(ds.N))
		if err != nil {
			t.Fatal(err)
		}
		return loss, graph.MultiplyAdds() - before
	}
	closed, closedMACs := elbo(false)
	diff, diffMACs := elbo(true)
	if math.Abs(closed-diff) > 1e-10*math.Abs(diff) {
		t.Errorf("ELBO %v with the closed-form Δ, %v with the differentiated one", closed, diff)
	}
	// The closed form is taken only where it is cheaper: fewer multiply-adds
	// show that the model took it (equal counts, that it did not).
	if closedMACs >= diffMACs {
		t.Errorf("%d multiply-adds with the closed form, %d without: the closed form was not used", closedMACs, diffMACs)
	}
	t.Logf("ELBO %v, %v; multiply-adds %d, %d", closed, diff, closedMACs, diffMACs)
}
