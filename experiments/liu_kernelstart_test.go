package experiments

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/models"
)

// The Table V start ablations build the same two-part kernel as
// models.AdditiveMaternRBF, with each part's length-scale where the
// setting says: swap puts √d on the Matérn part and 0.1·√d on the RBF part,
// short 0.1·√d on both.
func TestLiuKernelStartSettings(t *testing.T) {
	const d = 20
	x := make([]float64, 5*d)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	build := func(expr string) kernels.Kernel {
		t.Helper()
		k, err := kernels.Build(expr, kernels.Config{Name: "k", D: d, Data: kernels.NewData(x, 5, d, rand.New(rand.NewPCG(1, 1)))})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	parts := func(k kernels.Kernel) (m *kernels.Matern, r *kernels.SE) {
		t.Helper()
		sum, ok := k.(kernels.Sum)
		if !ok || len(sum) != 2 {
			t.Fatalf("kernel %T, want a two-part kernels.Sum", k)
		}
		if m, ok = sum[0].(*kernels.Matern); !ok {
			t.Fatalf("first part %T, want *kernels.Matern", sum[0])
		}
		if r, ok = sum[1].(*kernels.SE); !ok {
			t.Fatalf("second part %T, want *kernels.SE", sum[1])
		}
		return m, r
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	bm, br := parts(build(models.AdditiveMaternRBF))
	for _, tc := range []struct {
		setting string
		m, r    float64 // GPflow length-scales over √d
	}{{"matern52+rbf", 0.1, 1}, {"matern52+rbf-swap", 1, 0.1}, {"matern52+rbf-short", 0.1, 0.1}} {
		st, ok := liuSettings[tc.setting]
		if !ok {
			t.Fatalf("setting %q missing", tc.setting)
		}
		o := liuOptions(Run{}, 100, 1, st)
		if o.Kernel.Factory != nil {
			t.Fatalf("%s: a kernel factory, which a saved model cannot name", tc.setting)
		}
		m, r := parts(build(o.Kernel.Name))
		for j := range d {
			if !close(m.Lengthscales.Value(j), tc.m*tc.m*d) || !close(r.Lengthscales.Value(j), tc.r*tc.r*d) {
				t.Fatalf("%s: ℓ_%d = %v (Matérn), %v (RBF), want %v and %v", tc.setting, j,
					m.Lengthscales.Value(j), r.Lengthscales.Value(j), tc.m*tc.m*d, tc.r*tc.r*d)
			}
		}
		if m.Variance.Value(0) != bm.Variance.Value(0) || r.Variance.Value(0) != br.Variance.Value(0) ||
			m.WhiteNoise != nil || r.WhiteNoise == nil || r.WhiteNoise.Value(0) != br.WhiteNoise.Value(0) {
			t.Errorf("%s: variances or white noise differ from Table V's kernel", tc.setting)
		}
	}
}
