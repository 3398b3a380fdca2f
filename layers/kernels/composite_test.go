package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// A composite owns one white noise: its parameters are its parts' real
// ones (everything but their white noise) plus one σ₀² of its own, and
// every white-noise parameter it has is one K_ZZ and k(x,x) use. Before,
// each factor of se*linear kept its σ₀², which a product never read.
func TestCompositeOwnsOneNoise(t *testing.T) {
	const n, d = 50, 3
	rng := rand.New(rand.NewPCG(4, 4))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	real := func(name string) int { // the parameters of a kernel alone but its white noise
		k, err := New(name, Config{Name: "p", D: d})
		if err != nil {
			t.Fatal(err)
		}
		c := 0
		for _, p := range k.Params() {
			if !strings.HasSuffix(p.Name, "/white") {
				c++
			}
		}
		return c
	}
	for _, expr := range []string{"se*linear", "matern52+se", "(se+linear)*poly(2)", "se-iso*matern32+linear"} {
		for _, data := range []*Data{nil, NewData(x, n, d, rand.New(rand.NewPCG(1, 1)))} {
			k, err := Build(expr, Config{Name: "k", D: d, Data: data})
			if err != nil {
				t.Fatal(err)
			}
			e, _ := Parse(expr)
			want := 1
			for _, name := range e.Kernels() {
				want += real(name)
			}
			var whites []string
			for _, p := range k.Params() {
				if strings.HasSuffix(p.Name, "/white") {
					whites = append(whites, p.Name)
				}
			}
			if got := len(k.Params()); got != want || !slices.Equal(whites, []string{"k/white"}) {
				t.Errorf("%s (data %v): %d parameters with white noises %v, want %d with [k/white]", expr, data != nil, got, whites, want)
			}
			used := noiseParams(k)
			for _, p := range k.Params() {
				if strings.HasSuffix(p.Name, "/white") && !used[p] {
					t.Errorf("%s: %s is not used by K_ZZ or k(x,x)", expr, p.Name)
				}
			}
		}
	}
	// A sum starts where the sum of its parts' noises did (e⁻²⁰ + 1 for
	// se+poly), so its initial prior is unchanged; a sum of kernels
	// without noise has none.
	k, err := Build("se+poly", Config{Name: "k", D: d, Data: NewData(x, n, d, rand.New(rand.NewPCG(1, 1)))})
	if err != nil {
		t.Fatal(err)
	}
	if w := k.(*Composite).WhiteNoise; w == nil || math.Abs(w.Value(0)-(math.Exp(-20)+1)) > 1e-15 {
		t.Errorf("se+poly's σ₀² = %v, want e⁻²⁰ + 1", w)
	}
	if k, _ := Build("linear+linear", Config{Name: "k", D: d}); len(k.Params()) != 2 || k.(*Composite).WhiteNoise != nil {
		t.Errorf("linear+linear has parameters %v, want two length-scale vectors and no white noise", k.Params())
	}
	// A single kernel keeps its own, under its own name.
	if k, _ := Build("se", Config{Name: "k", D: d}); k.Params()[2].Name != "k/white" {
		t.Errorf("se's parameters %v", k.Params())
	}
}

// SumParts names the parts a composite reached through sums only: the ones
// whose white noise an older composite added up.
func TestSumParts(t *testing.T) {
	for expr, want := range map[string][]int{
		"se+linear":                  {0, 1},
		"se*linear":                  nil,
		"(se+linear)*se":             nil,
		"se+linear*poly(3)+matern52": {0, 3},
		"se":                         {0},
	} {
		e, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.SumParts(); !slices.Equal(got, want) {
			t.Errorf("%s: SumParts %v, want %v", expr, got, want)
		}
	}
}
