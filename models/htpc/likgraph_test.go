package htpc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refLik is the log-likelihood, its gradient and its per-point Hessian
// blocks written out by hand (softmax of f = b τ(g), chain rule through τ),
// independent of the graph code.
func refLik(gv, b []float64, y []int, l int) (ll float64, grad, hess []float64) {
	n := len(y)
	grad = make([]float64, n*l)
	hess = make([]float64, n*l*l)
	f, pi := make([]float64, l), make([]float64, l)
	for i := range n {
		mx := math.Inf(-1)
		for k := range l {
			f[k] = b[k] * tau(gv[i*l+k])
			mx = math.Max(mx, f[k])
		}
		var z float64
		for k := range l {
			pi[k] = math.Exp(f[k] - mx)
			z += pi[k]
		}
		for k := range l {
			pi[k] /= z
		}
		ll += f[y[i]] - mx - math.Log(z)
		for k := range l {
			yk := 0.0
			if k == y[i] {
				yk = 1
			}
			d1k := b[k] * tauDeriv(1, gv[i*l+k])
			grad[i*l+k] = (yk - pi[k]) * d1k
			for m := range l {
				d1m := b[m] * tauDeriv(1, gv[i*l+m])
				h := pi[m] * pi[k] * d1m * d1k
				if m == k {
					h += -pi[k]*d1k*d1k + (yk-pi[k])*b[k]*tauDeriv(2, gv[i*l+k])
				}
				hess[i*l*l+m*l+k] = h
			}
		}
	}
	return ll, grad, hess
}

func maxAbsDiff(a, b []float64) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// The graph's ℓ, gradient and Hessian blocks against refLik; its
// third-order terms against central differences of refLik's Hessian and
// gradient.
func TestLikGraphDerivatives(t *testing.T) {
	const n, l = 5, 3
	rng := rand.New(rand.NewPCG(3, 4))
	y := []int{0, 2, 1, 1, 0}
	gv := make([]float64, n*l)
	for i := range gv {
		gv[i] = 1.5 * rng.NormFloat64()
	}
	b := []float64{0.7, 1.9, 1.2}
	lg, err := newLikGraph(y, l)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.close()
	ll, grad, hess, err := lg.newtonTerms(gv, b)
	if err != nil {
		t.Fatal(err)
	}
	rl, rg, rh := refLik(gv, b, y, l)
	if math.Abs(ll-rl) > 1e-12*math.Abs(rl) {
		t.Errorf("ℓ: graph %v, reference %v", ll, rl)
	}
	if d := maxAbsDiff(grad, rg); d > 1e-12 {
		t.Errorf("gradient differs by %g", d)
	}
	if d := maxAbsDiff(hess, rh); d > 1e-12 {
		t.Errorf("Hessian blocks differ by %g", d)
	}
	v, err := lg.value(gv, b)
	if err != nil || v != ll {
		t.Errorf("value %v (err %v), want %v", v, err, ll)
	}

	s := make([]float64, n*l*l)
	u := make([]float64, n*l)
	for i := range s {
		s[i] = rng.NormFloat64()
	}
	for i := range u {
		u[i] = rng.NormFloat64()
	}
	q := func(gv, b []float64) float64 {
		_, _, h := refLik(gv, b, y, l)
		var acc float64
		for i := range h {
			acc += s[i] * h[i]
		}
		return acc
	}
	p := func(gv, b []float64) float64 {
		_, g, _ := refLik(gv, b, y, l)
		var acc float64
		for i := range g {
			acc += u[i] * g[i]
		}
		return acc
	}
	cd := func(fn func(gv, b []float64) float64, x []float64, j int, gv, b []float64) float64 {
		const h = 1e-5
		old := x[j]
		x[j] = old + h
		fp := fn(gv, b)
		x[j] = old - h
		fm := fn(gv, b)
		x[j] = old
		return (fp - fm) / (2 * h)
	}
	gradB, dqdG, dqdB, err := lg.evidenceTerms(gv, b, s)
	if err != nil {
		t.Fatal(err)
	}
	dpdB, err := lg.mixedTerm(gv, b, u)
	if err != nil {
		t.Fatal(err)
	}
	llOf := func(gv, b []float64) float64 { v, _, _ := refLik(gv, b, y, l); return v }
	for j := range l {
		if num := cd(llOf, b, j, gv, b); math.Abs(num-gradB[j]) > 1e-7*math.Max(1, math.Abs(num)) {
			t.Errorf("∂ℓ/∂b_%d: graph %v, numeric %v", j, gradB[j], num)
		}
		if num := cd(q, b, j, gv, b); math.Abs(num-dqdB[j]) > 1e-7*math.Max(1, math.Abs(num)) {
			t.Errorf("∂q/∂b_%d: graph %v, numeric %v", j, dqdB[j], num)
		}
		if num := cd(p, b, j, gv, b); math.Abs(num-dpdB[j]) > 1e-7*math.Max(1, math.Abs(num)) {
			t.Errorf("∂p/∂b_%d: graph %v, numeric %v", j, dpdB[j], num)
		}
	}
	for j := range gv {
		if num := cd(q, gv, j, gv, b); math.Abs(num-dqdG[j]) > 1e-7*math.Max(1, math.Abs(num)) {
			t.Errorf("∂q/∂G_%d: graph %v, numeric %v", j, dqdG[j], num)
		}
	}
}
