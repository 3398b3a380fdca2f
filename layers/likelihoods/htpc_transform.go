package likelihoods

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// The copula transform. A latent Gaussian value g ~ N(0, 1) is mapped to
// f = b·τ(g), τ(g) = F₁⁻¹(Φ(g)) = (2/π) log tan(πΦ(g)/2), where F₁ is the
// CDF of the hyperbolic-secant distribution with unit scale
// (density ½ sech(πf/2)). Then f has the hyperbolic-secant marginal with
// scale b, and the dependence between the f(x) is the Gaussian copula of the
// GP on g (the digest's §3.2 reading of Wauthier & Jordan 2010).
//
// Writing the derivatives in terms of s = t', c = πφ(g)cot(πΦ(g)) and
// p = g + c, where t = (π/2)τ:
//
//	t'  = s = πφ/sin(πΦ)       s' = −s p
//	c'  = −g c − s²            p' = 1 − g c − s²
//	t'' = −s p                 t''' = s(p² − p')
//	t'''' = s(−p³ + 3p p' − p''),  p'' = −c + g²c + g s² + 2 s² p.
//
// t is odd, so the even derivatives' sign follows g and the odd ones are
// even functions; every quantity is evaluated at |g| in terms of
// x = πΦ(−|g|) ∈ (0, π/2] and the inverse Mills ratio λ(−|g|), so nothing
// cancels catastrophically when Φ(g) rounds to 1 (the naive log tan(πΦ/2)
// becomes +Inf near g ≈ 8.3).

// maxTauDeriv is the highest derivative of τ the op can build. The Newton
// Hessian needs τ⁽²⁾, the evidence gradient τ⁽³⁾ (a third derivative of
// the log-likelihood), and a second-order check of that gradient τ⁽⁴⁾.
const maxTauDeriv = 4

// tauDeriv returns the k-th derivative of τ at g, for 0 ≤ k ≤ maxTauDeriv.
func tauDeriv(k int, g float64) float64 {
	a, sign := g, 1.0
	if g < 0 {
		a, sign = -g, -1
	}
	q := 0.5 * math.Erfc(a/math.Sqrt2) // Φ(−a)
	x := math.Pi * q
	if k == 0 {
		return sign * (2 / math.Pi) * -logTanHalf(x, a)
	}
	lam := graph.InvMillsValue(-a)
	xs, omx := xOverSin(x), oneMinusXCot(x)
	s := lam * xs
	p := -(lam - a) + lam*omx // p(a) = a + c(a), c(a) = −λ·x·cot x
	var t float64
	switch k {
	case 1:
		return (2 / math.Pi) * s
	case 2:
		t = -s * p
	case 3:
		c := p - a
		p1 := 1 - a*c - s*s
		return (2 / math.Pi) * s * (p*p - p1)
	case 4:
		c := p - a
		p1 := 1 - a*c - s*s
		p2 := -c + a*a*c + a*s*s + 2*s*s*p
		t = s * (-p*p*p + 3*p*p1 - p2)
	default:
		panic(fmt.Sprintf("likelihoods: derivative %d of τ not available", k))
	}
	return sign * (2 / math.Pi) * t
}

// tau is τ(g) = F₁⁻¹(Φ(g)), the unit-scale hyperbolic-secant quantile of Φ(g).
func tau(g float64) float64 { return tauDeriv(0, g) }

// logTanHalf is log tan(x/2) for x = πΦ(−a), taking log(x/2) from log Φ
// when x is small so that it stays finite after Φ(−a) underflows.
func logTanHalf(x, a float64) float64 {
	y := x / 2
	if y < 1e-4 {
		// log tan y = log y + y²/3 + O(y⁴).
		return math.Log(math.Pi/2) + graph.LogNormCDFValue(-a) + y*y/3
	}
	return math.Log(math.Tan(y))
}

// xOverSin is x / sin x, 1 at x = 0.
func xOverSin(x float64) float64 {
	if x < 1e-4 {
		return 1 + x*x/6
	}
	return x / math.Sin(x)
}

// oneMinusXCot is 1 − x·cot x, by its series where the subtraction would
// lose the leading digits.
func oneMinusXCot(x float64) float64 {
	if x < 0.1 {
		x2 := x * x
		return x2 * (1.0/3 + x2*(1.0/45+x2*(2.0/945+x2*(1.0/4725+x2*2.0/93555))))
	}
	return 1 - x*math.Cos(x)/math.Sin(x)
}

// tauOp applies τ^(k) elementwise. It is a Gorgonia op (not a graph.Map of
// an ElemFunc) because differentiating it must terminate: its SymDiff is
// ḡ ⊙ τ^(k+1)(x), another tauOp, so graph.Grad can go to any order up to
// maxTauDeriv with closed-form, tail-stable derivatives at every level.
type tauOp struct {
	k    int // derivative order
	dims int // dimensions of the input, which fix the op's type
}

// tauNode returns τ^(k)(x) elementwise.
func tauNode(x *G.Node, k int) (*G.Node, error) {
	if x.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("likelihoods: τ of %v with dtype %v, want float64", x.Name(), x.Dtype())
	}
	if k > maxTauDeriv {
		return nil, fmt.Errorf("likelihoods: derivative %d of τ requested; only %d are implemented", k, maxTauDeriv)
	}
	return G.ApplyOp(tauOp{k: k, dims: x.Dims()}, x)
}

func (op tauOp) Arity() int { return 1 }

func (op tauOp) Type() hm.Type {
	var t hm.Type = tensor.Float64
	if op.dims > 0 {
		t = G.TensorType{Dims: op.dims, Of: tensor.Float64}
	}
	return hm.NewFnType(t, t)
}

func (op tauOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if s, ok := in[0].(tensor.Shape); ok {
		return s.Clone(), nil
	}
	return nil, fmt.Errorf("likelihoods: cannot infer the shape of τ from %T", in[0])
}

func (op tauOp) Do(vs ...G.Value) (G.Value, error) {
	x, err := graph.Float64s(vs[0])
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = tauDeriv(op.k, v)
	}
	return graph.NewValue(vs[0].Shape(), out), nil
}

func (op tauOp) ReturnsPtr() bool     { return false }
func (op tauOp) CallsExtern() bool    { return false }
func (op tauOp) OverwritesInput() int { return -1 }
func (op tauOp) String() string       { return fmt.Sprintf("likelihoods.htpctau%d{%dd}", op.k, op.dims) }

// WriteHash names every parameter: Gorgonia merges nodes whose ops hash
// equal, and τ⁽¹⁾ must not be merged with τ⁽²⁾.
func (op tauOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }

func (op tauOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

func (op tauOp) DiffWRT(int) []bool { return []bool{true} }

func (op tauOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, err := tauNode(in[0], op.k+1)
	if err != nil {
		return nil, err
	}
	r, err := G.HadamardProd(d, grad)
	return G.Nodes{r}, err
}
