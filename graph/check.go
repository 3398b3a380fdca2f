package graph

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// CheckOptions controls a finite-difference gradient check.
type CheckOptions struct {
	// Step is the finite-difference step, scaled by max(1, |θ|). Default 1e-3;
	// Richardson extrapolation keeps the truncation error at O(Step⁴).
	Step float64
	// MaxPerParam limits how many elements of each parameter are checked
	// (chosen at random with Seed); 0 checks all.
	MaxPerParam int
	// Seed fixes the random choices (element subsets, second-order directions).
	Seed uint64
}

// ParamError is the discrepancy found for one parameter.
type ParamError struct {
	Name     string
	RelErr   float64 // max |analytic−numeric| / max(max|numeric|, max|analytic|, 1e-12)
	Analytic []float64
	Numeric  []float64
	Index    []int // the elements checked
}

// CheckReport is the result of a gradient check.
type CheckReport struct {
	Params []ParamError
	// MaxRelErr is the worst relative error over all parameters.
	MaxRelErr float64
}

// Worst names the parameter with the largest error.
func (r CheckReport) Worst() string {
	w, e := "", -1.0
	for _, p := range r.Params {
		if p.RelErr > e {
			w, e = p.Name, p.RelErr
		}
	}
	return fmt.Sprintf("%s (relative error %.3g)", w, e)
}

func (o *CheckOptions) defaults() {
	if o.Step == 0 {
		o.Step = 1e-3
	}
}

// CheckGrad compares Grad(cost, params) with central finite differences of the
// cost. Parameters must be input nodes of cost's graph carrying values; they
// are restored afterwards. The graph gains the gradient nodes.
func CheckGrad(cost *G.Node, params G.Nodes, opts CheckOptions) (CheckReport, error) {
	opts.defaults()
	grads, err := Grad(cost, params...)
	if err != nil {
		return CheckReport{}, err
	}
	return compare(cost, params, grads, opts)
}

// CheckGrad2 checks second derivatives: it forms L = Σ_p ⟨R_p, ∂cost/∂p⟩ for
// fixed random directions R_p, then compares Grad(L, params), which
// differentiates through the first gradient, with finite differences of L.
func CheckGrad2(cost *G.Node, params G.Nodes, opts CheckOptions) (CheckReport, error) {
	opts.defaults()
	g1, err := Grad(cost, params...)
	if err != nil {
		return CheckReport{}, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 2))
	terms := G.Nodes{}
	for i, g := range g1 {
		s := g.Shape()
		r := make([]float64, s.TotalSize())
		for k := range r {
			r[k] = rng.NormFloat64()
		}
		rn := Input(cost.Graph(), fmt.Sprintf("dir%d", i), s, r)
		p, err := G.HadamardProd(g, rn)
		if err != nil {
			return CheckReport{}, err
		}
		if p, err = G.Sum(p); err != nil {
			return CheckReport{}, err
		}
		terms = append(terms, p)
	}
	L, err := addAll(terms)
	if err != nil {
		return CheckReport{}, err
	}
	g2, err := Grad(L, params...)
	if err != nil {
		return CheckReport{}, err
	}
	return compare(L, params, g2, opts)
}

func compare(cost *G.Node, params, grads G.Nodes, opts CheckOptions) (CheckReport, error) {
	prog, err := Compile(cost.Graph(), append(G.Nodes{cost}, grads...)...)
	if err != nil {
		return CheckReport{}, err
	}
	defer prog.Close()
	if err := prog.Run(); err != nil {
		return CheckReport{}, err
	}
	eval := func() (float64, error) {
		if err := prog.Run(); err != nil {
			return 0, err
		}
		return prog.Scalar(cost)
	}
	// Read every analytic gradient before any perturbed run overwrites them.
	anas := make([][]float64, len(grads))
	for i := range grads {
		if anas[i], err = prog.Float64s(grads[i]); err != nil {
			return CheckReport{}, err
		}
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 1))
	var rep CheckReport
	for i, p := range params {
		ana := anas[i]
		orig, err := Float64s(p.Value())
		if err != nil {
			return rep, fmt.Errorf("graph: parameter %v: %w", p.Name(), err)
		}
		orig = append([]float64(nil), orig...)
		idx := make([]int, len(orig))
		for k := range idx {
			idx[k] = k
		}
		if opts.MaxPerParam > 0 && len(idx) > opts.MaxPerParam {
			rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
			idx = idx[:opts.MaxPerParam]
		}
		pe := ParamError{Name: p.Name(), Index: idx}
		work := append([]float64(nil), orig...)
		at := func(k int, x float64) (float64, error) {
			work[k] = x
			defer func() { work[k] = orig[k] }()
			if err := G.Let(p, NewValue(p.Shape(), work)); err != nil {
				return 0, err
			}
			return eval()
		}
		for _, k := range idx {
			h := opts.Step * math.Max(1, math.Abs(orig[k]))
			d := func(h float64) (float64, error) {
				fp, err := at(k, orig[k]+h)
				if err != nil {
					return 0, err
				}
				fm, err := at(k, orig[k]-h)
				return (fp - fm) / (2 * h), err
			}
			d1, err := d(h)
			if err != nil {
				return rep, err
			}
			d2, err := d(h / 2)
			if err != nil {
				return rep, err
			}
			pe.Numeric = append(pe.Numeric, (4*d2-d1)/3)
			pe.Analytic = append(pe.Analytic, ana[k])
		}
		if err := G.Let(p, NewValue(p.Shape(), orig)); err != nil {
			return rep, err
		}
		pe.RelErr = relErr(pe.Analytic, pe.Numeric)
		rep.Params = append(rep.Params, pe)
		rep.MaxRelErr = math.Max(rep.MaxRelErr, pe.RelErr)
		if math.IsNaN(pe.RelErr) {
			rep.MaxRelErr = math.NaN()
		}
	}
	return rep, nil
}

func relErr(a, n []float64) float64 {
	var diff, scale float64
	for k := range a {
		diff = math.Max(diff, math.Abs(a[k]-n[k]))
		scale = math.Max(scale, math.Max(math.Abs(a[k]), math.Abs(n[k])))
		if math.IsNaN(a[k]) || math.IsNaN(n[k]) {
			return math.NaN()
		}
	}
	return diff / math.Max(scale, 1e-12)
}
