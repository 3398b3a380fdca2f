package datasets

import (
	"context"
	"fmt"
)

// The three-class toy of the additive-noise GPC paper's Figure 2 (Liu, Ong,
// Yu, Cai & Shen 2019; the authors' demo_multiclass notebook, after
// GPflow's multi-class demo): inputs uniform on [0, 1]², three latent
// functions drawn independently from GP(0, k) with the RBF kernel
// k(x, x') = exp(−½‖x − x'‖² / 0.2²) plus a jitter of 1e-6 on the
// diagonal, and y = argmax_c f_c(x). The authors drew it with numpy's
// global generator at seed 3; numpy's Mersenne Twister and Box–Muller
// streams are not reproduced here, so the points and labels are a draw of
// the same distribution, not the paper's draw.
const (
	// LiuToyN is the paper's number of points.
	LiuToyN = 400
	// LiuToyClasses is the number of latent functions and classes.
	LiuToyClasses = 3
	// LiuToyLengthscale is the RBF length-scale (GPflow's ℓ: distances are
	// divided by it before squaring).
	LiuToyLengthscale = 0.2
	// LiuToyJitter is the authors' diagonal jitter on the n×n covariance.
	LiuToyJitter = 1e-6
)

// Streams of the toy, apart from every other generator's, so that a seed
// shared with a split or a noise draw does not correlate them.
const (
	streamLiuToyX = 0x4c49_5558_0000_0009 // "LIUX"
	streamLiuToyF = 0x4c49_5546_0000_000a // "LIUF"
)

// maxLiuToyN bounds the exact sampler (an n×n Cholesky), as for SyntheticGP.
const maxLiuToyN = maxSyntheticN

// LiuToy draws the paper's three-class toy with n points (LiuToyN in the
// paper): inputs uniform on [0, 1]², LiuToyClasses functions from the RBF
// GP prior above, labels by argmax. It is deterministic in seed; inputs and
// functions use separate streams. The covariance gets LiuToyJitter on its
// diagonal; the shared sampler's own jitter (1e-10, raised only if the
// factorisation fails, which at this jitter it does not for n ≤ 6000 on
// the unit square) adds to it.
func LiuToy(n int, seed uint64) (*Dataset, error) {
	return LiuToyContext(context.Background(), n, seed)
}

// LiuToyContext is LiuToy, stopped with ctx's error once ctx is done (the
// sampler's O(n³) factorisation checks it between blocks of columns).
func LiuToyContext(ctx context.Context, n int, seed uint64) (*Dataset, error) {
	if n < LiuToyClasses || n > maxLiuToyN {
		return nil, fmt.Errorf("datasets: LiuToy: n = %d must be in %d..%d (exact GP sampling is O(n³))", n, LiuToyClasses, maxLiuToyN)
	}
	const d = 2
	rx := newRand(seed, streamLiuToyX)
	x := make([]float64, n*d)
	for k := range x {
		x[k] = rx.Float64()
	}
	f, _, _, err := sampleGP(ctx, x, n, d, 1, LiuToyLengthscale*LiuToyLengthscale, LiuToyJitter, LiuToyClasses, newRand(seed, streamLiuToyF))
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Name: "liu-toy-3class", X: x, N: n, D: d, Y: make([]int, n), C: LiuToyClasses}
	for i := range n {
		ds.Y[i] = argmax(f, i)
	}
	return ds, ds.Validate()
}
