package ep_test

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-dev/gpc/models/ep"
)

// gaussian is a likelihood a user supplies to EP: p(y | f) = N(y | f, s2).
// Its tilted distribution is Gaussian, so its moments are exact.
type gaussian struct{ s2 float64 }

func (l gaussian) TiltedMoments(y, m, v float64) (logZ, mean, variance float64) {
	t := v + l.s2
	logZ = -0.5*math.Log(2*math.Pi*t) - 0.5*(y-m)*(y-m)/t
	return logZ, m + v*(y-m)/t, v - v*v/t
}

// EP with a Gaussian likelihood is exact: its sites equal the likelihood
// terms after one sweep, so the posterior mean is K(K + σ²I)⁻¹y and the
// evidence log N(y | 0, K + σ²I), which this example computes beside it.
func ExampleRun() {
	const s2 = 0.5
	K := mat.NewSymDense(3, []float64{
		1, 0.6, 0.2,
		0.6, 1, 0.6,
		0.2, 0.6, 1,
	})
	y := []float64{1, -0.5, 2}
	res, err := ep.Run(K, y, gaussian{s2}, ep.NewSites(len(y)), ep.Config{Damping: 1})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The closed forms, by a Cholesky factorisation of K + σ²I.
	var ky mat.SymDense
	ky.AddSym(K, mat.NewDiagDense(3, []float64{s2, s2, s2}))
	var ch mat.Cholesky
	if !ch.Factorize(&ky) {
		fmt.Println("K + σ²I is not positive definite")
		return
	}
	alpha := mat.NewVecDense(3, nil)
	if err := ch.SolveVecTo(alpha, mat.NewVecDense(3, y)); err != nil {
		fmt.Println(err)
		return
	}
	var mean mat.VecDense
	mean.MulVec(K, alpha)
	logZ := -0.5*mat.Dot(mat.NewVecDense(3, y), alpha) - 0.5*ch.LogDet() - 1.5*math.Log(2*math.Pi)

	fmt.Printf("EP:     mean [%.6f %.6f %.6f], log Z %.6f\n", res.Mean[0], res.Mean[1], res.Mean[2], res.LogZ)
	fmt.Printf("closed: mean [%.6f %.6f %.6f], log Z %.6f\n", mean.AtVec(0), mean.AtVec(1), mean.AtVec(2), logZ)
	fmt.Println("converged:", res.Converged)
	// Output:
	// EP:     mean [0.495586 0.224044 1.110971], log Z -5.834649
	// closed: mean [0.495586 0.224044 1.110971], log Z -5.834649
	// converged: true
}
