package inputs

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/graph"
)

// The slice forms the ops run (FB, DFB) agree with the per-element forms
// (F, DF) of the NIMGP input terms and the reparameterised sample.
func TestElemFuncForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, f := range []*graph.ElemFunc{inputTermsFunc(1000), reparam} {
		k := map[string]int{"reparam": 3}[f.Name]
		if k == 0 {
			k = 6
		}
		const n = 50
		args := make([][]float64, k)
		for a := range args {
			args[a] = make([]float64, n)
			for e := range args[a] {
				args[a][e] = rng.NormFloat64()
			}
		}
		// q and V (and √q's argument) must be positive; log V matches V.
		pos := map[int]bool{1: true}
		if k == 6 {
			pos = map[int]bool{3: true, 4: true}
		}
		for a := range pos {
			for e := range args[a] {
				args[a][e] = 0.1 + math.Abs(args[a][e])
			}
		}
		if k == 6 {
			for e := range args[5] {
				args[5][e] = math.Log(args[4][e])
			}
		}
		out := make([]float64, n)
		f.FB(args, out)
		x, d := make([]float64, k), make([]float64, k)
		for e := 0; e < n; e++ {
			for a := range x {
				x[a] = args[a][e]
			}
			if want := f.F(x); math.Abs(out[e]-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("%s: FB[%d] = %v, F = %v", f.Name, e, out[e], want)
			}
		}
		for a := 0; a < k; a++ {
			f.DFB(args, a, out)
			for e := 0; e < n; e++ {
				for b := range x {
					x[b] = args[b][e]
				}
				f.DF(x, d)
				if math.Abs(out[e]-d[a]) > 1e-12*(1+math.Abs(d[a])) {
					t.Fatalf("%s: DFB_%d[%d] = %v, DF = %v", f.Name, a, e, out[e], d[a])
				}
			}
		}
	}
}
