package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

func TestParseValid(t *testing.T) {
	for _, c := range []struct {
		in, canon string
		kernels   []string
	}{
		{"se", "se", []string{"se"}},
		{"  matern52 + linear ", "matern52+linear", []string{"matern52", "linear"}},
		{"se*linear", "se*linear", []string{"se", "linear"}},
		{"se+linear*poly", "se+linear*poly", []string{"se", "linear", "poly"}},
		{"(se+linear)*poly(3)", "(se+linear)*poly(3)", []string{"se", "linear", "poly"}},
		{"((se))", "se", []string{"se"}},
		{"(se+linear)+matern32", "se+linear+matern32", []string{"se", "linear", "matern32"}},
		{"se-iso*matern52-iso", "se-iso*matern52-iso", []string{"se-iso", "matern52-iso"}},
		{"poly( 2 )", "poly(2)", []string{"poly"}},
	} {
		e, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if e.String() != c.canon {
			t.Errorf("Parse(%q) = %q, want %q", c.in, e.String(), c.canon)
		}
		if !slices.Equal(e.Kernels(), c.kernels) {
			t.Errorf("Parse(%q).Kernels() = %v, want %v", c.in, e.Kernels(), c.kernels)
		}
		// The canonical form parses to itself.
		if e2, err := Parse(e.String()); err != nil || e2.String() != c.canon {
			t.Errorf("Parse(%q) = %v, %v", e.String(), e2, err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, c := range []struct {
		in   string
		pos  int
		says string
	}{
		{"", 1, "empty"},
		{"   ", 1, "empty"},
		{"se+", 4, "expected a kernel name or (, found end"},
		{"se++linear", 4, `found "+"`},
		{"(se", 4, "expected ) to close the ( at position 1"},
		{"se)", 3, `unexpected ")"`},
		{"foo", 1, `unknown kernel "foo"`},
		{"se*matern", 4, `unknown kernel "matern"`},
		{"se linear", 4, `unexpected kernel name "linear"`},
		{"poly(", 6, "expected a number argument"},
		{"poly(x)", 6, "expected a number argument"},
		{"poly(3", 7, "expected , or ) to close the arguments opened at position 5"},
		{"poly(1e999)", 6, "is not a number"},
		{"se$", 3, "unexpected character '$'"},
		{"()", 2, "empty parentheses"},
		{"ß+se", 1, "unexpected character 'ß'"},
		{"se+ß", 4, "unexpected character 'ß'"},
	} {
		_, err := Parse(c.in)
		var ee *ExprError
		if !errors.As(err, &ee) {
			t.Errorf("Parse(%q): error %v, want an *ExprError", c.in, err)
			continue
		}
		if ee.Pos != c.pos || !strings.Contains(ee.Error(), c.says) || !strings.Contains(ee.Error(), "position") {
			t.Errorf("Parse(%q): %v (position %d), want position %d and %q", c.in, err, ee.Pos, c.pos, c.says)
		}
	}
	var ee *ExprError
	if _, err := Parse("se+rq"); !errors.As(err, &ee) || ee.Unknown != "rq" {
		t.Errorf("an unregistered kernel's error does not name it: %v", err)
	}
}

func TestBuildArgumentsRefused(t *testing.T) {
	for _, in := range []string{"se(2)", "linear(1)", "matern52(2.5)", "poly(0)", "poly(2.5)", "poly(3,4)"} {
		if _, err := Build(in, Config{Name: "k", D: 2}); err == nil {
			t.Errorf("Build(%q) accepted", in)
		}
	}
	k, err := Build("poly(4)", Config{Name: "k", D: 2, Degree: 7})
	if err != nil || k.(*Polynomial).Degree != 4 {
		t.Fatalf("poly(4): %v, %v", k, err)
	}
	if k, _ = Build("poly", Config{Name: "k", D: 2, Degree: 7}); k.(*Polynomial).Degree != 7 {
		t.Errorf("poly with Config.Degree 7 has degree %d", k.(*Polynomial).Degree)
	}
	if k, _ = Build("poly", Config{Name: "k", D: 2}); k.(*Polynomial).Degree != 9 {
		t.Errorf("poly's default degree is %d, want 9", k.(*Polynomial).Degree)
	}
}

func TestRegisterRefuses(t *testing.T) {
	f := func(c Config) (Kernel, error) { return NewLinear(c.Name, c.D, 1), nil }
	for _, name := range []string{"se", "", "a+b", "2se", "a b", "x(1)"} {
		if err := Register(name, f); err == nil {
			t.Errorf("Register(%q) accepted", name)
		}
	}
	if err := Register("test-nil", nil); err == nil {
		t.Error("a nil factory was accepted")
	}
}

// Parts of a composite get their own parameter-name prefixes, numbered left
// to right; a single kernel keeps the prefix it always had.
func TestCompositeNames(t *testing.T) {
	k, err := Build("(se+linear)*se", Config{Name: "k3", D: 2})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range k.Params() {
		names = append(names, p.Name)
	}
	want := []string{"k3/0:se/lengthscales", "k3/0:se/variance", "k3/1:linear/lengthscales", "k3/2:se/lengthscales", "k3/2:se/variance", "k3/white"}
	if !slices.Equal(names, want) {
		t.Errorf("parameters %v, want %v", names, want)
	}
	c, ok := k.(*Composite)
	if !ok {
		t.Fatalf("(se+linear)*se built as %T, want *Composite", k)
	}
	if _, ok := c.Kernel.(Product); !ok {
		t.Errorf("(se+linear)*se combines its parts as %T, want Product", c.Kernel)
	}
	if s, ok := c.Kernel.(Product)[0].(Sum); !ok || len(s) != 2 {
		t.Errorf("first factor %T, want a Sum of two", c.Kernel.(Product)[0])
	}
	k, _ = Build("se", Config{Name: "k0", D: 2})
	if k.Params()[0].Name != "k0/lengthscales" {
		t.Errorf("a single kernel's parameter %s, want k0/lengthscales", k.Params()[0].Name)
	}
}

// oldMedianDistance and oldMeanSquaredNorm are the formulas models/model.go
// applied before the registry, verbatim up to the data access.
func oldMedianDistance(x []float64, n, d int, rng *rand.Rand) float64 {
	idx := make([]int, 1000)
	for i := range idx {
		idx[i] = rng.IntN(n)
	}
	var d2 []float64
	for i := 0; i < 1000; i++ {
		a := x[idx[i]*d : (idx[i]+1)*d]
		for j := i + 1; j < 1000; j++ {
			b := x[idx[j]*d : (idx[j]+1)*d]
			var s float64
			for t := range a {
				s += (a[t] - b[t]) * (a[t] - b[t])
			}
			d2 = append(d2, s)
		}
	}
	slices.Sort(d2)
	med := d2[len(d2)/2]
	if len(d2)%2 == 0 {
		med = 0.5 * (d2[len(d2)/2-1] + d2[len(d2)/2])
	}
	if med <= 0 {
		return 1
	}
	return math.Sqrt(med)
}

func oldMeanSquaredNorm(x []float64, n, d int, rng *rand.Rand) float64 {
	var s float64
	for i := 0; i < 1000; i++ {
		r := rng.IntN(n)
		for _, v := range x[r*d : (r+1)*d] {
			s += v * v
		}
	}
	if s <= 0 {
		return 1
	}
	return s / 1000
}

// Each registered kernel initialises itself from the data: the stationary
// ones (and linear's ℓ) as the original code did for every kernel but the
// polynomial (ℓ the median pairwise distance, σ² = e, σ₀² = e⁻²⁰), the
// polynomial one as the original MNIST code (ℓ the mean squared norm,
// σ² = 1/512, σ₀² = 1); bit for bit the old formulas on the same draws.
func TestRegisteredInit(t *testing.T) {
	const n, d = 300, 4
	rng := rand.New(rand.NewPCG(9, 9))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = 2*rng.NormFloat64() + 1
	}
	seed := func() *rand.Rand { return rand.New(rand.NewPCG(4, 0x6770)) }
	med := oldMedianDistance(x, n, d, seed())
	msn := oldMeanSquaredNorm(x, n, d, seed())
	type want struct {
		ell, variance, noise, jitter float64
		iso                          bool
	}
	stat := want{med, math.E, math.Exp(-20), 1e-3, false}
	iso := stat
	iso.iso = true
	wants := map[string]want{
		"se": stat, "matern32": stat, "matern52": stat,
		"se-iso": iso, "matern32-iso": iso, "matern52-iso": iso,
		"poly":   {msn, 1.0 / 512, 1, 1e-10, false},
		"linear": {med, math.NaN(), math.NaN(), 1e-3, false},
	}
	for _, name := range Names() {
		w, ok := wants[name]
		if !ok {
			continue // registered by another test
		}
		t.Run(name, func(t *testing.T) {
			r := seed()
			data := NewData(x, n, d, r)
			after := r.Uint64()
			k, err := New(name, Config{Name: "k", D: d, Data: data})
			if err != nil {
				t.Fatal(err)
			}
			// The same number of draws whatever the kernel: what the model
			// draws next (its inducing inputs) does not depend on it.
			r2 := seed()
			for range SampleRows {
				r2.IntN(n)
			}
			if r2.Uint64() != after {
				t.Error("NewData did not draw exactly SampleRows indices")
			}
			got := map[string]*layers.Param{}
			for _, p := range k.Params() {
				got[p.Name[strings.LastIndex(p.Name, "/")+1:]] = p
			}
			ls := got["lengthscales"]
			if wantLen := d; w.iso {
				if !ls.Shape.IsScalar() {
					t.Errorf("length-scales of shape %v, want a scalar", ls.Shape)
				}
			} else if len(ls.Data) != wantLen {
				t.Errorf("%d length-scales, want %d", len(ls.Data), wantLen)
			}
			for i := range ls.Data {
				if ls.Value(i) != math.Exp(math.Log(w.ell)) {
					t.Errorf("ℓ_%d = %v, want %v", i, ls.Value(i), w.ell)
				}
			}
			check := func(key string, v float64) {
				p := got[key]
				if math.IsNaN(v) {
					if p != nil {
						t.Errorf("unexpected parameter %s", p.Name)
					}
					return
				}
				if p == nil || p.Value(0) != math.Exp(math.Log(v)) {
					t.Errorf("%s = %v, want %v", key, p, v)
				}
			}
			check("variance", w.variance)
			check("white", w.noise)
			if j := JitterOf(k); j != w.jitter {
				t.Errorf("jitter %g, want %g", j, w.jitter)
			}
			// Without data every hyper-parameter starts at 1.
			k1, err := New(name, Config{Name: "k", D: d})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range k1.Params() {
				for i := range p.Data {
					if p.Value(i) != 1 {
						t.Errorf("without data %s = %v, want 1", p.Name, p.Value(i))
					}
				}
			}
		})
	}
	// A composite's parts share one sample: the summaries are computed once
	// and each part gets its own kernel's initial values.
	data := NewData(x, n, d, seed())
	k, err := Build("se+poly", Config{Name: "k", D: d, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	s := k.(*Composite).Kernel.(Sum)
	if s[0].(*SE).Lengthscales.Value(0) != math.Exp(math.Log(med)) || s[1].(*Polynomial).Lengthscales.Value(0) != math.Exp(math.Log(msn)) {
		t.Error("the parts of se+poly do not start at their own kernels' values")
	}
	if JitterOf(k) != 1e-3 {
		t.Errorf("se+poly's jitter %g, want the larger 1e-3", JitterOf(k))
	}
}

// Isotropic kernels equal their ARD forms with all ℓ_j equal.
func TestIsotropicValues(t *testing.T) {
	const d = 3
	for _, pair := range [][2]string{{"se-iso", "se"}, {"matern32-iso", "matern32"}, {"matern52-iso", "matern52"}} {
		rng := rand.New(rand.NewPCG(1, 1))
		g := G.NewGraph()
		s := layers.NewScope(g)
		_, x := input(s, "X", 4, d, rng)
		_, z := input(s, "Z", 3, d, rng)
		var outs []*G.Node
		for _, name := range pair {
			k, err := New(name, Config{Name: name, D: d})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range k.Params() {
				p.Fill(1.7)
			}
			K, err := k.K(s, x, z)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, K)
		}
		p, err := graph.Compile(g, outs...)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		a, _ := p.Float64s(outs[0])
		b, _ := p.Float64s(outs[1])
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-14 {
				t.Fatalf("%s K[%d] = %v, %s %v", pair[0], i, a[i], pair[1], b[i])
			}
		}
	}
}

// noiseParams are the white-noise parameters KZZ and KDiag use: a
// composite's own, a single kernel's (through Noiser).
func noiseParams(k Kernel) map[*layers.Param]bool {
	out := map[*layers.Param]bool{}
	if c, ok := k.(*Composite); ok {
		if c.WhiteNoise != nil {
			out[c.WhiteNoise] = true
		}
		return out
	}
	if _, ok := k.(Noiser); ok {
		for _, p := range k.Params() {
			if strings.HasSuffix(p.Name, "/white") {
				out[p] = true
			}
		}
	}
	return out
}

// Finite-difference checks, first and second order, of kernels built from
// expressions: sums, products, nested ones, isotropic parts, with respect
// to every hyper-parameter they use and both inputs.
func TestExpressionGradients(t *testing.T) {
	const d = 2
	for _, expr := range []string{"se-iso", "matern32-iso", "matern52-iso", "matern52+linear", "se*linear", "se-iso*matern32", "(se+linear)*poly(2)", "se+linear*poly(3)+matern52-iso"} {
		t.Run(expr, func(t *testing.T) {
			for order := 1; order <= 2; order++ {
				rng := rand.New(rand.NewPCG(2, 2))
				k, err := Build(expr, Config{Name: "k", D: d})
				if err != nil {
					t.Fatal(err)
				}
				// Values away from 1 and from each other, so that no
				// error hides behind a symmetric point.
				for i, p := range k.Params() {
					for j := range p.Data {
						p.Data[j] = 0.3*rng.NormFloat64() - 0.2 + 0.05*float64(i)
					}
				}
				used := noiseParams(k)
				g := G.NewGraph()
				s := layers.NewScope(g)
				_, x := input(s, "X", 4, d, rng)
				_, z := input(s, "Z", 3, d, rng)
				jit, _ := s.Node(Jitter("jitter", 1e-6))
				K, err := KZZ(k, s, z, jit)
				if err != nil {
					t.Fatal(err)
				}
				Kx, err := k.K(s, x, z)
				if err != nil {
					t.Fatal(err)
				}
				Kd, err := KDiag(k, s, x, jit)
				if err != nil {
					t.Fatal(err)
				}
				cost := sumTanh(t, K, Kx, Kd)
				var params G.Nodes
				for _, p := range k.Params() {
					if strings.HasSuffix(p.Name, "/white") && !used[p] {
						t.Fatalf("parameter %s is a white noise that K_ZZ and k(x,x) do not use", p.Name)
					}
					n, _ := s.Raw(p)
					params = append(params, n)
				}
				params = append(params, x, z)
				check := graph.CheckGrad
				if order == 2 {
					check = graph.CheckGrad2
				}
				rep, err := check(cost, params, graph.CheckOptions{Seed: 5})
				if err != nil {
					t.Fatal(err)
				}
				if !(rep.MaxRelErr <= 1e-6) {
					t.Errorf("order %d: %s", order, rep.Worst())
				}
			}
		})
	}
}

// Whatever the input, Parse either fails with an *ExprError whose position
// lies within the expression (or just past it), or gives an expression
// whose canonical form parses to itself and builds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"se", "matern52+linear", "(se+linear)*poly(3)", "se*(", "poly(1e3)", "se-iso * (linear + poly(2,3))", ")(", "ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("Parse(%q): %v is not an *ExprError", s, err)
			}
			if n := len([]rune(s)); ee.Pos < 1 || ee.Pos > n+1 {
				t.Fatalf("Parse(%q): position %d outside 1..%d", s, ee.Pos, n+1)
			}
			return
		}
		c := e.String()
		e2, err := Parse(c)
		if err != nil || e2.String() != c {
			t.Fatalf("canonical %q of %q reparses as %v, %v", c, s, e2, err)
		}
		if !slices.Equal(e.Kernels(), e2.Kernels()) {
			t.Fatalf("%q and its canonical %q name %v and %v", s, c, e.Kernels(), e2.Kernels())
		}
		if len(e.Kernels()) <= 20 {
			e.Build(Config{Name: "k", D: 2}) // arguments may be refused, but nothing panics
		}
	})
}
