package datasets

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

// The blocked factorisation that checks ctx gives mat.Cholesky's factor
// bit for bit (several blocks, a last partial one, and a single-block
// size), so the data sets drawn before stay the same; and it reports a
// matrix that is not positive definite as mat.Cholesky does.
func TestCholeskyLMatchesGonum(t *testing.T) {
	for _, n := range []int{1, 50, 64, 200, 333} {
		x := make([]float64, 2*n)
		r := newRand(uint64(n), streamSynthX)
		for i := range x {
			x[i] = 3 * r.Float64()
		}
		a := mat.NewSymDense(n, nil)
		for i := range n {
			for j := 0; j <= i; j++ {
				a.SetSym(i, j, seKernel(x[2*i:2*i+2], x[2*j:2*j+2], 0.5, 2))
			}
			a.SetSym(i, i, a.At(i, i)+1e-6)
		}
		var chol mat.Cholesky
		if !chol.Factorize(a) {
			t.Fatalf("n=%d: gonum failed", n)
		}
		var want mat.TriDense
		chol.LTo(&want)
		b := mat.NewSymDense(n, nil)
		b.CopySym(a)
		got, ok, err := choleskyL(context.Background(), b)
		if err != nil || !ok {
			t.Fatalf("n=%d: ok %v, err %v", n, ok, err)
		}
		for i := range n {
			for j := 0; j <= i; j++ {
				if g, w := got.At(i, j), want.At(i, j); math.Float64bits(g) != math.Float64bits(w) {
					t.Fatalf("n=%d: L[%d,%d] = %v, gonum %v", n, i, j, g, w)
				}
			}
		}
	}
	bad := mat.NewSymDense(100, nil)
	for i := range 100 {
		bad.SetSym(i, i, 1)
	}
	bad.SetSym(70, 70, -1)
	if _, ok, err := choleskyL(context.Background(), bad); ok || err != nil {
		t.Errorf("indefinite matrix: ok %v, err %v", ok, err)
	}
}

// Round 2, interruptible work: a cancelled context stops the synthetic
// generators within a block of the factorisation, with ctx's error; the
// largest problem used to run its O(n³) factorisation to the end.
func TestGeneratorsStopOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	if _, _, err := SyntheticProblemContext(ctx, maxSyntheticN, 2, 3, 1, SyntheticOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("SyntheticProblemContext: %v, want context.Canceled", err)
	}
	if _, err := SyntheticSplitProblemContext(ctx, 3000, 3000, 2, 3, 0.1, 1, SyntheticOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("SyntheticSplitProblemContext: %v, want context.Canceled", err)
	}
	if _, err := LiuToyContext(ctx, maxLiuToyN, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("LiuToyContext: %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("cancelled generators took %v", d)
	}
	// Cancelled during the factorisation: it stops at the next block.
	n := 3000
	a := mat.NewSymDense(n, nil)
	for i := range n {
		a.SetSym(i, i, 1)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	t0 = time.Now()
	_, _, err := choleskyL(ctx, a)
	if d := time.Since(t0); !errors.Is(err, context.Canceled) || d > 2*time.Second {
		t.Errorf("factorisation cancelled after 20 ms: %v after %v", err, d)
	}
}
