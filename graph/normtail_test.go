package graph

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gpc-dev/gpc/graph/internal/normtail"
)

// The committed table is what the generator writes.
func TestNormTailTableUpToDate(t *testing.T) {
	got, err := os.ReadFile("normtail_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, normtail.Source()) {
		t.Fatal("normtail_table.go is stale: run go run ./graph/internal/normtail/gen from the module root")
	}
}

// normPDF is within 3 ulp of φ. upperTail is within 2 ulp of Q(t) computed in 320-bit arithmetic, over
// the table's whole range and at its intervals' ends, and Φ built on it is
// within 2 ulp of the correctly rounded Φ from the tail cut to where Φ
// rounds to 1 (where math.Erfc's Φ, the previous implementation, errs by up
// to 1.5 ulp itself).
func TestUpperTailAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pts := []float64{0, 1e-300, normTailEnd - 1e-12}
	for i := 1; i < normtail.Intervals; i++ {
		e := float64(i) / normtail.Scale
		pts = append(pts, e, math.Nextafter(e, 0))
	}
	for range 3000 {
		pts = append(pts, rng.Float64()*normTailEnd)
	}
	var worstQ, worstPhi, worstErfc float64
	for _, x := range pts {
		if u := ulps(upperTail(x), normtail.Q(x)); u > worstQ {
			worstQ = u
		}
		for _, s := range []float64{x, -x} {
			if s <= tailCut {
				continue
			}
			want := normtail.Phi(s)
			if u := ulps(normCDF(s), want); u > worstPhi {
				worstPhi = u
			}
			worstErfc = max(worstErfc, ulps(0.5*math.Erfc(-s*invSqrt2), want))
		}
	}
	t.Logf("largest error: Q %.2f ulp, Φ %.2f ulp (math.Erfc's Φ %.2f ulp)", worstQ, worstPhi, worstErfc)
	if worstQ > 2 || worstPhi > 2 {
		t.Errorf("largest error: Q %.2f ulp, Φ %.2f ulp; want at most 2", worstQ, worstPhi)
	}
	worstPdf := 0.0
	for range 3000 {
		x := (rng.Float64()*2 - 1) * 37 // φ(37) ≈ 1e-298 is still normal
		worstPdf = max(worstPdf, ulps(normPDF(x), normtail.Pdf(x)))
	}
	t.Logf("largest error of φ: %.2f ulp", worstPdf)
	if worstPdf > 3 { // three rounded factors; the two-exponential form erred by 3 too
		t.Errorf("largest error of φ: %.2f ulp, want at most 3", worstPdf)
	}
	for _, x := range []float64{39, -39, 1e200, math.Inf(1), math.Inf(-1)} {
		if got := normPDF(x); got != 0 {
			t.Errorf("φ(%v) = %v, want 0", x, got)
		}
	}
	if got := normCDF(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Φ(NaN) = %v", got)
	}
	if got := logNormCDF(math.NaN()); !math.IsNaN(got) {
		t.Errorf("log Φ(NaN) = %v", got)
	}
}

func BenchmarkNormCDF(b *testing.B) {
	xs := make([]float64, 1024)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range xs {
		xs[i] = -5 + 13.3*rng.Float64()
	}
	b.Run("table", func(b *testing.B) {
		s := 0.0
		for range b.N {
			for _, x := range xs {
				s += normCDF(x)
			}
		}
		normSink = s
	})
	b.Run("erfc", func(b *testing.B) {
		s := 0.0
		for range b.N {
			for _, x := range xs {
				s += 0.5 * math.Erfc(-x*invSqrt2)
			}
		}
		normSink = s
	})
}

var normSink float64
