package solvers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// ---------------------------------------------------------------- helpers

// quadratic is f(x) = ½ (x-c)ᵀ A (x-c) with A = R diag(1, 100) Rᵀ rotated by
// 30°, i.e. condition number 100 and not axis-aligned, so Adam's diagonal
// scaling cannot trivially undo the ill-conditioning.
type quadratic struct {
	a [2][2]float64
	c [2]float64
}

func newQuadratic() quadratic {
	th := math.Pi / 6
	co, si := math.Cos(th), math.Sin(th)
	l1, l2 := 1.0, 100.0
	return quadratic{
		a: [2][2]float64{
			{l1*co*co + l2*si*si, (l1 - l2) * co * si},
			{(l1 - l2) * co * si, l1*si*si + l2*co*co},
		},
		c: [2]float64{1.5, -0.5},
	}
}

func (q quadratic) grad(x []float64) []float64 {
	d0, d1 := x[0]-q.c[0], x[1]-q.c[1]
	return []float64{q.a[0][0]*d0 + q.a[0][1]*d1, q.a[1][0]*d0 + q.a[1][1]*d1}
}

func rosenbrock(x, grad []float64) (float64, error) {
	f := 0.0
	clear(grad)
	for i := 0; i+1 < len(x); i++ {
		a := 1 - x[i]
		b := x[i+1] - x[i]*x[i]
		f += a*a + 100*b*b
		grad[i] += -2*a - 400*x[i]*b
		grad[i+1] += 200 * b
	}
	return f, nil
}

// linReg is a least-squares objective ½ Σ_n w_n (x_nᵀβ - y_n)² over a fixed
// data set, with a closed-form solution to compare against.
type linReg struct {
	x    [][]float64
	y    []float64
	beta []float64 // aliased by the Param
	grad []float64
	// Hooks for failure injection.
	calls  int
	onCall func(call int, loss *float64, grad []float64) error
}

func newLinReg(n int, seed uint64) *linReg {
	rng := rand.New(rand.NewPCG(seed, 7))
	trueBeta := []float64{1.5, -2.0, 0.5}
	lr := &linReg{beta: make([]float64, 3), grad: make([]float64, 3)}
	for range n {
		row := []float64{1, rng.NormFloat64(), rng.NormFloat64()}
		y := dot(row, trueBeta) + 0.1*rng.NormFloat64()
		lr.x = append(lr.x, row)
		lr.y = append(lr.y, y)
	}
	return lr
}

func (l *linReg) params() []Param { return []Param{{Name: "beta", Data: l.beta}} }

func (l *linReg) Step(b Batch) (float64, [][]float64, error) {
	l.calls++
	clear(l.grad)
	loss := 0.0
	for i, idx := range b.Index {
		w := b.Weight[i]
		r := dot(l.x[idx], l.beta) - l.y[idx]
		loss += 0.5 * w * r * r
		axpy(w*r, l.x[idx], l.grad)
	}
	if l.onCall != nil {
		if err := l.onCall(l.calls, &loss, l.grad); err != nil {
			return 0, nil, err
		}
	}
	return loss, [][]float64{l.grad}, nil
}

// leastSquares solves the normal equations XᵀX β = Xᵀy for three columns by
// Gaussian elimination, giving the exact target for the training tests.
func (l *linReg) leastSquares() []float64 {
	var a [3][4]float64
	for n, row := range l.x {
		for i := range 3 {
			for j := range 3 {
				a[i][j] += row[i] * row[j]
			}
			a[i][3] += row[i] * l.y[n]
		}
	}
	for p := range 3 {
		for r := p + 1; r < 3; r++ {
			f := a[r][p] / a[p][p]
			for c := p; c < 4; c++ {
				a[r][c] -= f * a[p][c]
			}
		}
	}
	beta := make([]float64, 3)
	for i := 2; i >= 0; i-- {
		s := a[i][3]
		for j := i + 1; j < 3; j++ {
			s -= a[i][j] * beta[j]
		}
		beta[i] = s / a[i][i]
	}
	return beta
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

// ---------------------------------------------------------------- Adam

func TestAdamMinimisesIllConditionedQuadratic(t *testing.T) {
	q := newQuadratic()
	x := []float64{-2, 3}
	params := []Param{{Name: "x", Data: x}}
	opt := NewAdam(0.05)
	for k := 0; k < 20000; k++ {
		// Decay so Adam's sign-like steps shrink to the tolerance; with a
		// fixed rate it would oscillate at a scale set by lr.
		if k%500 == 499 {
			opt.SetLearningRate(opt.LearningRate() * 0.5)
		}
		if err := opt.Step(params, [][]float64{q.grad(x)}); err != nil {
			t.Fatal(err)
		}
	}
	if d := maxAbsDiff(x, q.c[:]); d > 1e-6 {
		t.Fatalf("Adam ended at %v, want %v (error %.3g > 1e-6)", x, q.c, d)
	}
}

func TestAdamFirstStepIsLRTimesSign(t *testing.T) {
	const lr = 0.1
	g := []float64{0.5, -3, 0, 1e-3, 250}
	x := []float64{1, 2, 3, 4, 5}
	x0 := slices.Clone(x)
	opt := NewAdam(lr)
	if err := opt.Step([]Param{{Name: "x", Data: x}}, [][]float64{g}); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		step := x0[i] - x[i]
		sign := 0.0
		if g[i] > 0 {
			sign = 1
		} else if g[i] < 0 {
			sign = -1
		}
		// Bias-corrected: m̂ = g, v̂ = g², so step = lr·g/(|g|+eps).
		want := lr * g[i] / (math.Abs(g[i]) + 1e-8)
		if math.Abs(step-want) > 1e-15 {
			t.Errorf("element %d: step %.17g, want %.17g", i, step, want)
		}
		if math.Abs(step-lr*sign) > lr*1e-4 {
			t.Errorf("element %d: step %g is not lr·sign(g) = %g", i, step, lr*sign)
		}
	}

	// Second step with a different gradient, checked against the formula
	// written out by hand (state must persist between steps).
	g2 := []float64{1, 1, 1, 1, 1}
	before := slices.Clone(x)
	if err := opt.Step([]Param{{Name: "x", Data: x}}, [][]float64{g2}); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		m := 0.9*(0.1*g[i]) + 0.1*g2[i]
		v := 0.999*(0.001*g[i]*g[i]) + 0.001*g2[i]*g2[i]
		want := lr * (m / (1 - 0.81)) / (math.Sqrt(v/(1-0.999*0.999)) + 1e-8)
		if got := before[i] - x[i]; math.Abs(got-want) > 1e-14 {
			t.Errorf("second step element %d: %.17g, want %.17g", i, got, want)
		}
	}
}

func TestAdamOptionsAndReset(t *testing.T) {
	x := []float64{0}
	opt := NewAdam(1, WithBetas(0, 0), WithEpsilon(1))
	// beta1=beta2=0: m=g, v=g², so step = g/(|g|+1) = 3/4 for g=3.
	if err := opt.Step([]Param{{Data: x}}, [][]float64{{3}}); err != nil {
		t.Fatal(err)
	}
	if x[0] != -0.75 {
		t.Fatalf("x = %v, want -0.75", x[0])
	}
	// A differently shaped problem is refused until Reset.
	y := []float64{0, 0}
	if err := opt.Step([]Param{{Name: "y", Data: y}}, [][]float64{{1, 1}}); err == nil || !strings.Contains(err.Error(), "Reset") {
		t.Fatalf("want state-shape error mentioning Reset, got %v", err)
	}
	opt.Reset()
	if err := opt.Step([]Param{{Name: "y", Data: y}}, [][]float64{{1, 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestAdamRejectsMismatchedInputsWithoutSideEffects(t *testing.T) {
	a := []float64{1, 2}
	b := []float64{3}
	params := []Param{{Name: "a", Data: a}, {Name: "b", Data: b}}
	opt := NewAdam(0.1)
	cases := []struct {
		grads [][]float64
		want  string
	}{
		{[][]float64{{1, 1}}, "got 1 gradients for 2 params"},
		{[][]float64{{1, 1}, {1, 1}}, `param "b" has 2 elements, param has 1`},
	}
	for _, c := range cases {
		err := opt.Step(params, c.grads)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v", c.want, err)
		}
	}
	if a[0] != 1 || a[1] != 2 || b[0] != 3 {
		t.Fatalf("params modified by failed steps: %v %v", a, b)
	}
	if err := NewAdam(0).Step(params, [][]float64{{1, 1}, {1}}); err == nil {
		t.Fatal("zero learning rate accepted")
	}
}

// ---------------------------------------------------------------- L-BFGS

func TestLBFGSRosenbrock(t *testing.T) {
	for _, dim := range []int{2, 10} {
		x0 := make([]float64, dim)
		for i := range x0 {
			x0[i] = -1.2
			if i%2 == 1 {
				x0[i] = 1
			}
		}
		res, err := MinimizeLBFGS(context.Background(), rosenbrock, x0, LBFGSSettings{GradTol: 1e-10})
		if err != nil {
			t.Fatalf("dim %d: %v", dim, err)
		}
		ones := make([]float64, dim)
		for i := range ones {
			ones[i] = 1
		}
		if d := maxAbsDiff(res.X, ones); d > 1e-8 || res.F > 1e-16 {
			t.Fatalf("dim %d: x = %v, f = %g (error %.3g)", dim, res.X, res.F, d)
		}
		if !res.Converged || res.Status != GradientConverged {
			t.Fatalf("dim %d: status %s converged %v", dim, res.Status, res.Converged)
		}
		if res.Iterations == 0 || res.Evaluations < res.Iterations || res.Evaluations > 400 {
			t.Fatalf("dim %d: implausible counts: %d iterations, %d evaluations", dim, res.Iterations, res.Evaluations)
		}
		if x0[0] != -1.2 {
			t.Fatal("x0 was modified")
		}
	}
}

func TestLBFGSReturnsObjectiveError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	f := func(x, g []float64) (float64, error) {
		calls++
		if calls == 4 {
			return 0, boom
		}
		return rosenbrock(x, g)
	}
	res, err := MinimizeLBFGS(context.Background(), f, []float64{-1.2, 1}, LBFGSSettings{})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	if !strings.Contains(err.Error(), "evaluation 4") {
		t.Errorf("error does not say where: %v", err)
	}
	if calls != 4 || res.Evaluations != 4 {
		t.Errorf("f called %d times (result says %d) after failing at call 4", calls, res.Evaluations)
	}
	if res.Converged || res.Status != Failed || len(res.X) != 2 || math.IsNaN(res.F) {
		t.Errorf("bad result on error: %+v", res)
	}
}

func TestLBFGSReportsNaN(t *testing.T) {
	calls := 0
	f := func(x, g []float64) (float64, error) {
		calls++
		v, _ := rosenbrock(x, g)
		if calls == 3 {
			return math.NaN(), nil
		}
		return v, nil
	}
	_, err := MinimizeLBFGS(context.Background(), f, []float64{-1.2, 1}, LBFGSSettings{})
	var nf *NonFiniteError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNonFinite) {
		t.Fatalf("want NonFiniteError, got %v", err)
	}
	if want := "solvers: objective became NaN at L-BFGS evaluation 3"; err.Error() != want {
		t.Fatalf("got %q, want %q", err, want)
	}
	if calls != 3 {
		t.Fatalf("f called %d times after NaN at call 3", calls)
	}

	// Infinite gradient at the start is named by element.
	g := func(x, grad []float64) (float64, error) {
		grad[0], grad[1] = 1, math.Inf(-1)
		return 0, nil
	}
	_, err = MinimizeLBFGS(context.Background(), g, []float64{0, 0}, LBFGSSettings{})
	if err == nil || err.Error() != "solvers: gradient element 1 became -Inf at L-BFGS evaluation 1" {
		t.Fatalf("got %v", err)
	}
}

func TestLBFGSLimitsAndStatuses(t *testing.T) {
	res, err := MinimizeLBFGS(context.Background(), rosenbrock, []float64{-1.2, 1}, LBFGSSettings{MaxIterations: 3})
	if err != nil || res.Iterations != 3 || res.Status != IterationLimit || res.Converged {
		t.Fatalf("MaxIterations: %+v, %v", res, err)
	}
	res, err = MinimizeLBFGS(context.Background(), rosenbrock, []float64{-1.2, 1}, LBFGSSettings{MaxEvaluations: 5})
	if err != nil || res.Evaluations != 5 || res.Status != EvaluationLimit || res.Converged {
		t.Fatalf("MaxEvaluations: %+v, %v", res, err)
	}
	// Best point so far is reported, and it is no worse than the start.
	if start, _ := rosenbrock([]float64{-1.2, 1}, make([]float64, 2)); !(res.F <= start) {
		t.Fatalf("F = %g worse than start %g", res.F, start)
	}
	// A loose relative function tolerance stops early with a convergence status.
	res, err = MinimizeLBFGS(context.Background(), rosenbrock, []float64{-1.2, 1}, LBFGSSettings{FuncTol: 0.5, GradTol: 1e-12})
	if err != nil || res.Status != FunctionConverged || !res.Converged {
		t.Fatalf("FuncTol: %+v, %v", res, err)
	}
}

func TestLBFGSWrongGradientIsLineSearchError(t *testing.T) {
	f := func(x, g []float64) (float64, error) {
		v, _ := rosenbrock(x, g)
		for i := range g {
			g[i] = -g[i] // ascent direction claimed as descent
		}
		return v, nil
	}
	res, err := MinimizeLBFGS(context.Background(), f, []float64{-1.2, 1}, LBFGSSettings{})
	if !errors.Is(err, ErrLineSearch) {
		t.Fatalf("want ErrLineSearch, got %v (%+v)", err, res)
	}
	if res.X[0] != -1.2 || res.X[1] != 1 {
		t.Fatalf("best point should still be the start, got %v", res.X)
	}
}

func TestLBFGSCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	f := func(x, g []float64) (float64, error) {
		calls++
		if calls == 5 {
			cancel()
		}
		return rosenbrock(x, g)
	}
	_, err := MinimizeLBFGS(ctx, f, []float64{-1.2, 1}, LBFGSSettings{})
	if !errors.Is(err, context.Canceled) || calls != 5 {
		t.Fatalf("want context.Canceled after 5 calls, got %v after %d", err, calls)
	}
	// Already cancelled: f is never called.
	calls = 0
	if _, err := MinimizeLBFGS(ctx, f, []float64{0, 0}, LBFGSSettings{}); !errors.Is(err, context.Canceled) || calls != 0 {
		t.Fatalf("pre-cancelled: %v, %d calls", err, calls)
	}
}

func TestTrainLBFGSLinearRegression(t *testing.T) {
	lr := newLinReg(103, 1)
	want := lr.leastSquares()
	res, err := TrainLBFGS(context.Background(), lr, lr.params(), 103, LBFGSSettings{GradTol: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(lr.beta, want); d > 1e-8 || !res.Converged {
		t.Fatalf("beta = %v, want %v (%.3g), %+v", lr.beta, want, d, res)
	}
	// A NaN gradient is blamed on the named parameter.
	lr2 := newLinReg(20, 2)
	lr2.onCall = func(call int, _ *float64, g []float64) error {
		if call == 2 {
			g[2] = math.NaN()
		}
		return nil
	}
	_, err = TrainLBFGS(context.Background(), lr2, lr2.params(), 20, LBFGSSettings{})
	if err == nil || err.Error() != `solvers: gradient of "beta" (element 2) became NaN at L-BFGS evaluation 2` {
		t.Fatalf("got %v", err)
	}
}

// ---------------------------------------------------------------- batching

func TestEpochBatchesN10B4(t *testing.T) {
	const n, b = 10, 4
	for epoch := 1; epoch <= 5; epoch++ {
		batches, err := EpochBatches(n, b, 42, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if len(batches) != 3 {
			t.Fatalf("epoch %d: %d batches, want 3", epoch, len(batches))
		}
		seen := make([]int, n)
		for k, bt := range batches {
			if len(bt.Index) != b || len(bt.Weight) != b {
				t.Fatalf("batch %d has length %d/%d, want %d", k, len(bt.Index), len(bt.Weight), b)
			}
			wantReal, wantW := 4, 10.0/4
			if k == 2 {
				wantReal, wantW = 2, 10.0/2
			}
			if bt.Real != wantReal {
				t.Fatalf("batch %d: Real = %d, want %d", k, bt.Real, wantReal)
			}
			for i, idx := range bt.Index {
				if idx < 0 || idx >= n {
					t.Fatalf("batch %d: index %d out of range", k, idx)
				}
				w := bt.Weight[i]
				if i < bt.Real {
					seen[idx]++
					if w != wantW {
						t.Fatalf("batch %d row %d: weight %g, want %g", k, i, w, wantW)
					}
				} else if w != 0 {
					t.Fatalf("batch %d padding row %d: weight %g, want 0", k, i, w)
				}
			}
			// Padding rows are distinct from the real rows of the batch.
			for i := bt.Real; i < b; i++ {
				if slices.Contains(bt.Index[:bt.Real], bt.Index[i]) || slices.Contains(bt.Index[bt.Real:i], bt.Index[i]) {
					t.Fatalf("batch %d: padding index %d repeats", k, bt.Index[i])
				}
			}
		}
		for idx, c := range seen {
			if c != 1 {
				t.Fatalf("epoch %d: row %d seen %d times among real rows", epoch, idx, c)
			}
		}
	}
}

// TestBatchWeightsUnbiasedExhaustive checks unbiasedness exactly: under a
// uniformly random permutation, the expected weighted sum of batch k must
// equal the full-data sum for every k, including the short last batch. We
// average over all 6! permutations instead of sampling, so there is no
// Monte-Carlo error. (Checking only Σ weights = N per batch would not catch
// e.g. weights that are correct on average but tied to positions.)
func TestBatchWeightsUnbiasedExhaustive(t *testing.T) {
	const n, b = 6, 4 // batches of 4 and 2(+2 padding)
	f := []float64{0.3, -1.7, 2.9, 11, -0.25, 4.5}
	full := 0.0
	for _, v := range f {
		full += v
	}
	sums := make([]float64, 2)
	count := 0
	perm := []int{0, 1, 2, 3, 4, 5}
	var visit func(k int)
	visit = func(k int) {
		if k == n {
			batches := makeBatches(perm, b)
			if len(batches) != 2 {
				t.Fatalf("%d batches", len(batches))
			}
			for j, bt := range batches {
				for i, idx := range bt.Index {
					sums[j] += bt.Weight[i] * f[idx]
				}
			}
			count++
			return
		}
		for i := k; i < n; i++ {
			perm[k], perm[i] = perm[i], perm[k]
			visit(k + 1)
			perm[k], perm[i] = perm[i], perm[k]
		}
	}
	visit(0)
	if count != 720 {
		t.Fatalf("visited %d permutations", count)
	}
	for j, s := range sums {
		if mean := s / float64(count); math.Abs(mean-full) > 1e-12*math.Abs(full) {
			t.Errorf("batch %d: E[weighted sum] = %.15g, full sum = %.15g", j, mean, full)
		}
	}
}

func TestEpochBatchesDeterminism(t *testing.T) {
	order := func(seed uint64, epoch int) []int {
		bs, err := EpochBatches(50, 8, seed, epoch)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, b := range bs {
			out = append(out, b.Index[:b.Real]...)
		}
		return out
	}
	if !slices.Equal(order(7, 1), order(7, 1)) {
		t.Fatal("same seed and epoch gave different orders")
	}
	if slices.Equal(order(7, 1), order(8, 1)) {
		t.Fatal("different seeds gave the same order")
	}
	if slices.Equal(order(7, 1), order(7, 2)) {
		t.Fatal("different epochs gave the same order")
	}
}

func TestEpochBatchesFullBatch(t *testing.T) {
	for _, b := range []int{10, 11, 0} {
		bs, err := EpochBatches(10, b, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 1 || bs[0].Real != 10 || len(bs[0].Index) != 10 {
			t.Fatalf("B=%d: %+v", b, bs)
		}
		for i := range 10 {
			if bs[0].Index[i] != i || bs[0].Weight[i] != 1 {
				t.Fatalf("B=%d: row %d = (%d, %g)", b, i, bs[0].Index[i], bs[0].Weight[i])
			}
		}
	}
	if _, err := EpochBatches(0, 4, 1, 1); err == nil {
		t.Fatal("n=0 accepted")
	}
}

func TestFlattenUnflatten(t *testing.T) {
	a, b := []float64{1, 2}, []float64{3}
	params := []Param{{Name: "a", Data: a}, {Name: "b", Data: b}}
	x := Flatten(params)
	if !slices.Equal(x, []float64{1, 2, 3}) || Size(params) != 3 {
		t.Fatalf("Flatten = %v", x)
	}
	x[0] = 9 // Flatten must copy
	if a[0] != 1 {
		t.Fatal("Flatten aliased the param")
	}
	if err := Unflatten(params, []float64{4, 5, 6}); err != nil || a[0] != 4 || a[1] != 5 || b[0] != 6 {
		t.Fatalf("Unflatten: %v %v %v", err, a, b)
	}
	if err := Unflatten(params, []float64{1}); err == nil {
		t.Fatal("short vector accepted")
	}
	dst := make([]float64, 3)
	if err := FlattenGrads(dst, params, [][]float64{{7, 8}, {9}}); err != nil || !slices.Equal(dst, []float64{7, 8, 9}) {
		t.Fatalf("FlattenGrads: %v %v", err, dst)
	}
	if err := FlattenGrads(dst, params, [][]float64{{7}, {9}}); err == nil {
		t.Fatal("mis-shaped gradient accepted")
	}
}

// ---------------------------------------------------------------- Train

func TestTrainLinearRegressionAdam(t *testing.T) {
	lr := newLinReg(103, 3)
	want := lr.leastSquares()
	opt := NewAdam(0.02)
	hist, err := Train(context.Background(), lr, lr.params(), TrainConfig{
		N: 103, BatchSize: 10, Epochs: 500, Seed: 1, Optimizer: opt,
		// A decaying rate shrinks Adam's stationary noise (std ≈ sqrt(lr·σ/2h)
		// for gradient noise σ and curvature h) until it is far below 1e-3.
		Callback: func(Epoch) error { opt.SetLearningRate(opt.LearningRate() * 0.98); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(lr.beta, want); d > 1e-3 {
		t.Fatalf("beta = %v, least squares %v, error %.3g > 1e-3", lr.beta, want, d)
	}
	if len(hist) != 500 || hist[0].Steps != 11 || hist[499].Iterations != 5500 || hist[0].Epoch != 1 {
		t.Fatalf("history: %d epochs, first %+v, last %+v", len(hist), hist[0], hist[len(hist)-1])
	}
	if !(hist[499].Loss < hist[0].Loss) {
		t.Fatalf("loss did not decrease: %v -> %v", hist[0].Loss, hist[499].Loss)
	}
}

// recorder checks that Train feeds exactly EpochBatches(N, B, Seed, e).
type recorder struct{ got []Batch }

func (r *recorder) Step(b Batch) (float64, [][]float64, error) {
	r.got = append(r.got, Batch{Index: slices.Clone(b.Index), Weight: slices.Clone(b.Weight), Real: b.Real})
	return 1, [][]float64{{0}}, nil
}

type nopOptimizer struct{}

func (nopOptimizer) Step([]Param, [][]float64) error { return nil }

func TestTrainUsesEpochBatches(t *testing.T) {
	r := &recorder{}
	_, err := Train(context.Background(), r, []Param{{Data: []float64{0}}}, TrainConfig{N: 10, BatchSize: 4, Epochs: 3, Seed: 99, Optimizer: nopOptimizer{}})
	if err != nil {
		t.Fatal(err)
	}
	var want []Batch
	for e := 1; e <= 3; e++ {
		bs, _ := EpochBatches(10, 4, 99, e)
		want = append(want, bs...)
	}
	if len(r.got) != len(want) {
		t.Fatalf("%d batches, want %d", len(r.got), len(want))
	}
	for i := range want {
		if !slices.Equal(r.got[i].Index, want[i].Index) || !slices.Equal(r.got[i].Weight, want[i].Weight) || r.got[i].Real != want[i].Real {
			t.Fatalf("batch %d: %+v, want %+v", i, r.got[i], want[i])
		}
	}
}

func TestTrainStopsOnNaN(t *testing.T) {
	lr := newLinReg(10, 4)
	var before []float64
	lr.onCall = func(call int, loss *float64, _ []float64) error {
		if call == 8 {
			before = slices.Clone(lr.beta)
			*loss = math.NaN()
		}
		return nil
	}
	hist, err := Train(context.Background(), lr, lr.params(), TrainConfig{N: 10, BatchSize: 4, Epochs: 10, Seed: 1, Optimizer: NewAdam(0.1)})
	if want := "solvers: objective became NaN at epoch 3, iteration 8"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if !errors.Is(err, ErrNonFinite) {
		t.Fatal("error does not match ErrNonFinite")
	}
	if lr.calls != 8 {
		t.Fatalf("Step called %d times; training continued past the NaN", lr.calls)
	}
	if !slices.Equal(lr.beta, before) {
		t.Fatal("params were updated with the NaN step")
	}
	// Two full epochs plus the partial third (iteration 7 completed).
	if len(hist) != 3 || hist[2].Steps != 1 || hist[2].Iterations != 7 {
		t.Fatalf("history %+v", hist)
	}

	// An infinite gradient is blamed on the parameter by name.
	lr2 := newLinReg(10, 4)
	lr2.onCall = func(call int, _ *float64, g []float64) error {
		if call == 2 {
			g[1] = math.Inf(1)
		}
		return nil
	}
	_, err = Train(context.Background(), lr2, lr2.params(), TrainConfig{N: 10, BatchSize: 4, Epochs: 10, Optimizer: NewAdam(0.1)})
	if want := `solvers: gradient of "beta" (element 1) became +Inf at epoch 1, iteration 2`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// fakeCholesky fails with ErrNotPositiveDefinite on chosen calls and keeps a
// jitter, like a GP model would.
type fakeCholesky struct {
	jitter   float64
	calls    int
	failWhen func(call int) bool
	jitters  []float64 // jitter seen at each call
}

func (f *fakeCholesky) Jitter() float64 { return f.jitter }
func (f *fakeCholesky) SetJitter(j float64) error {
	f.jitter = j
	return nil
}
func (f *fakeCholesky) Step(Batch) (float64, [][]float64, error) {
	f.calls++
	f.jitters = append(f.jitters, f.jitter)
	if f.failWhen(f.calls) {
		return 0, nil, fmt.Errorf("model: cholesky of Kuu: %w", ErrNotPositiveDefinite)
	}
	return 1, [][]float64{{0.1}}, nil
}

func TestTrainRaisesJitterAndRetries(t *testing.T) {
	// Calls 5 and 6 (the 5th iteration, in epoch 2 with 3 batches/epoch) fail.
	obj := &fakeCholesky{jitter: 1e-6, failWhen: func(c int) bool { return c == 5 || c == 6 }}
	var warn bytes.Buffer
	hist, err := Train(context.Background(), obj, []Param{{Name: "p", Data: []float64{0}}}, TrainConfig{
		N: 10, BatchSize: 4, Epochs: 2, Optimizer: NewAdam(0.01), Warnings: &warn,
	})
	if err != nil {
		t.Fatal(err)
	}
	if obj.calls != 8 || hist[len(hist)-1].Iterations != 6 {
		t.Fatalf("%d calls, history %+v", obj.calls, hist)
	}
	if math.Abs(obj.jitter-1e-4) > 1e-18 {
		t.Fatalf("jitter = %g, want 1e-4", obj.jitter)
	}
	// The retried calls saw the raised jitter.
	if got := obj.jitters[4:7]; math.Abs(got[0]-1e-6) > 1e-20 || math.Abs(got[1]-1e-5) > 1e-20 || math.Abs(got[2]-1e-4) > 1e-20 {
		t.Fatalf("jitters at calls 5-7: %v", got)
	}
	wantWarn := "solvers: warning: Cholesky failed at epoch 2, iteration 5; jitter raised to 1e-05\n" +
		"solvers: warning: Cholesky failed at epoch 2, iteration 5; jitter raised to 0.0001\n"
	if warn.String() != wantWarn {
		t.Fatalf("warnings:\n%s\nwant:\n%s", warn.String(), wantWarn)
	}
}

func TestTrainJitterBound(t *testing.T) {
	obj := &fakeCholesky{jitter: 1e-6, failWhen: func(c int) bool { return c >= 2 }}
	var warn bytes.Buffer
	_, err := Train(context.Background(), obj, []Param{{Data: []float64{0}}}, TrainConfig{
		N: 10, BatchSize: 4, Epochs: 5, Optimizer: NewAdam(0.01), Warnings: &warn,
	})
	if !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("want ErrNotPositiveDefinite, got %v", err)
	}
	want := "solvers: Cholesky failed at epoch 1, iteration 2 with jitter 0.1 after 5 jitter increases (limit 5)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %q, want prefix %q", err, want)
	}
	if n := strings.Count(warn.String(), "\n"); n != 5 || obj.calls != 7 {
		t.Fatalf("%d warnings, %d calls; want 5 and 7", n, obj.calls)
	}
	if math.Abs(obj.jitter-0.1) > 1e-12 {
		t.Fatalf("jitter = %g", obj.jitter)
	}

	// A lower MaxJitter stops earlier, before exceeding it.
	obj = &fakeCholesky{jitter: 1e-6, failWhen: func(int) bool { return true }}
	_, err = Train(context.Background(), obj, []Param{{Data: []float64{0}}}, TrainConfig{
		N: 10, BatchSize: 4, Epochs: 5, Optimizer: NewAdam(0.01), Warnings: &warn, MaxJitter: 1e-4,
	})
	if !errors.Is(err, ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "would exceed the limit 0.0001") || obj.jitter != 1e-4 {
		t.Fatalf("got %v, jitter %g", err, obj.jitter)
	}

	// An objective without Jitterer fails at once.
	lr := newLinReg(10, 1)
	lr.onCall = func(int, *float64, []float64) error { return ErrNotPositiveDefinite }
	_, err = Train(context.Background(), lr, lr.params(), TrainConfig{N: 10, BatchSize: 4, Epochs: 1, Optimizer: NewAdam(0.01)})
	if !errors.Is(err, ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "does not implement Jitterer") || lr.calls != 1 {
		t.Fatalf("got %v after %d calls", err, lr.calls)
	}
}

func TestTrainCancellation(t *testing.T) {
	// Deterministic: the objective cancels during iteration 5.
	ctx, cancel := context.WithCancel(context.Background())
	lr := newLinReg(10, 1)
	lr.onCall = func(call int, _ *float64, _ []float64) error {
		if call == 5 {
			cancel()
		}
		return nil
	}
	hist, err := Train(ctx, lr, lr.params(), TrainConfig{N: 10, BatchSize: 4, Epochs: 1 << 30, Optimizer: NewAdam(0.01)})
	if !errors.Is(err, context.Canceled) || lr.calls != 5 {
		t.Fatalf("got %v after %d calls", err, lr.calls)
	}
	if len(hist) != 2 || hist[1].Steps != 2 || hist[1].Iterations != 5 {
		t.Fatalf("history %+v", hist)
	}

	// Asynchronous: cancelled from another goroutine, returns promptly.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	slow := newLinReg(10, 1)
	slow.onCall = func(int, *float64, []float64) error { time.Sleep(100 * time.Microsecond); return nil }
	time.AfterFunc(20*time.Millisecond, cancel2)
	start := time.Now()
	_, err = Train(ctx2, slow, slow.params(), TrainConfig{N: 10, BatchSize: 4, Epochs: 1 << 30, Optimizer: NewAdam(1e-6)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %v to notice cancellation", el)
	}
}

func TestTrainProgressLines(t *testing.T) {
	var buf bytes.Buffer
	lr := newLinReg(30, 5)
	hist, err := Train(context.Background(), lr, lr.params(), TrainConfig{N: 30, BatchSize: 8, Epochs: 12, Optimizer: NewAdam(0.05), Progress: &buf})
	if err != nil {
		t.Fatal(err)
	}
	// The first and last epochs always have a line, the others at most
	// one a second (a fraction of a second here: none).
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	re := regexp.MustCompile(`^epoch +(\d+)/12  elbo (-?\d+\.\d{4})  \d+\.\ds  eta \S+$`)
	for i, line := range lines {
		m := re.FindStringSubmatch(line)
		if m == nil || !strings.Contains(line, "epoch") || !strings.Contains(line, "elbo") {
			t.Fatalf("line %d malformed: %q", i, line)
		}
		e := []int{1, 12}[i]
		if m[1] != fmt.Sprint(e) || m[2] != fmt.Sprintf("%.4f", -hist[e-1].Loss) {
			t.Fatalf("line %d = %q; want epoch %d, elbo %.4f", i, line, e, -hist[e-1].Loss)
		}
	}
	if strings.Contains(buf.String(), "\r") {
		t.Fatal("carriage returns written to a non-terminal")
	}
}

func TestTrainMaxIterationsAndCallback(t *testing.T) {
	lr := newLinReg(10, 1)
	var seen []Epoch
	hist, err := Train(context.Background(), lr, lr.params(), TrainConfig{
		N: 10, BatchSize: 4, Epochs: 100, MaxIterations: 7, Optimizer: NewAdam(0.01),
		Callback: func(e Epoch) error { seen = append(seen, e); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if lr.calls != 7 || len(hist) != 3 || hist[2].Steps != 1 || hist[2].Iterations != 7 || len(seen) != 3 {
		t.Fatalf("calls %d, history %+v, callbacks %d", lr.calls, hist, len(seen))
	}

	// ErrStopTraining ends successfully; other errors are reported.
	hist, err = Train(context.Background(), lr, lr.params(), TrainConfig{
		N: 10, BatchSize: 4, Epochs: 100, Optimizer: NewAdam(0.01),
		Callback: func(e Epoch) error {
			if e.Epoch == 2 {
				return fmt.Errorf("plateau: %w", ErrStopTraining)
			}
			return nil
		},
	})
	if err != nil || len(hist) != 2 {
		t.Fatalf("ErrStopTraining: %v, %d epochs", err, len(hist))
	}
	bad := errors.New("disk full")
	hist, err = Train(context.Background(), lr, lr.params(), TrainConfig{
		N: 10, BatchSize: 4, Epochs: 100, Optimizer: NewAdam(0.01),
		Callback: func(Epoch) error { return bad },
	})
	if !errors.Is(err, bad) || len(hist) != 1 || !strings.Contains(err.Error(), "after epoch 1") {
		t.Fatalf("callback error: %v, %d epochs", err, len(hist))
	}
}

func TestTrainValidation(t *testing.T) {
	lr := newLinReg(10, 1)
	good := TrainConfig{N: 10, BatchSize: 4, Epochs: 1, Optimizer: NewAdam(0.01)}
	bad := []func(*TrainConfig){
		func(c *TrainConfig) { c.Optimizer = nil },
		func(c *TrainConfig) { c.N = 0 },
		func(c *TrainConfig) { c.Epochs = 0 },
		func(c *TrainConfig) { c.MaxIterations = -1 },
	}
	for i, mod := range bad {
		cfg := good
		mod(&cfg)
		if _, err := Train(context.Background(), lr, lr.params(), cfg); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	if _, err := Train(context.Background(), nil, lr.params(), good); err == nil {
		t.Error("nil objective accepted")
	}
	// Wrong gradient count from the objective is reported with its location.
	r := &recorder{}
	_, err := Train(context.Background(), r, []Param{{Data: []float64{0}}, {Data: []float64{0}}}, good)
	if err == nil || !strings.Contains(err.Error(), "got 1 gradients for 2 params at epoch 1, iteration 1") {
		t.Errorf("got %v", err)
	}
}

func TestProgressInPlaceOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, 10, 5, 0)
	p.tty = true                 // pretend the buffer is a terminal
	p.lastDraw = time.Time{}     // make the refresh interval elapse
	p.batch(1, 2, 2, 123.456789) // mid-epoch: redrawn in place
	p.epoch(Epoch{Epoch: 1, Loss: 1, Duration: 1500 * time.Millisecond, Steps: 5, Iterations: 5})
	out := buf.String()
	if !strings.HasPrefix(out, "\repoch  1/10  batch 2/5  elbo -123.4568  eta ") {
		t.Fatalf("in-place line: %q", out)
	}
	parts := strings.Split(out, "\r")
	last := parts[len(parts)-1]
	// The epoch line overwrites the longer batch line, blanks its leftovers
	// and ends with a newline.
	if !strings.HasPrefix(last, "epoch  1/10  elbo -1.0000  1.5s  eta ") || !strings.HasSuffix(last, " \n") || len(last)-1 != len(parts[1]) {
		t.Fatalf("epoch line: %q (previous %q)", last, parts[1])
	}

	// Only character devices count as terminals.
	f, err := os.CreateTemp(t.TempDir(), "progress")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&buf) || isTerminal(nil) {
		t.Fatal("non-terminal detected as terminal")
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12300 * time.Millisecond:   "12.3s",
		90 * time.Second:           "1m30s",
		3723400 * time.Millisecond: "1h2m3s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func axpy(alpha float64, x, y []float64) {
	for i := range x {
		y[i] += alpha * x[i]
	}
}

// wallQuadratic is (x−3)², whose factorisation fails at every jitter for
// x > 1: L-BFGS's trial steps from 0 overshoot into the wall.
type wallQuadratic struct {
	x      []float64
	jitter float64
}

func (w *wallQuadratic) Jitter() float64 { return w.jitter }
func (w *wallQuadratic) SetJitter(j float64) error {
	w.jitter = j
	return nil
}
func (w *wallQuadratic) Step(Batch) (float64, [][]float64, error) {
	if w.x[0] > 1 {
		return 0, nil, fmt.Errorf("model: cholesky: %w", ErrNotPositiveDefinite)
	}
	d := w.x[0] - 3
	return d * d, [][]float64{{2 * d}}, nil
}

func TestTrainLBFGSTrialFailureKeepsBestPoint(t *testing.T) {
	w := &wallQuadratic{x: []float64{0}, jitter: 1e-6}
	var warn bytes.Buffer
	res, err := TrainLBFGS(context.Background(), w, []Param{{Name: "x", Data: w.x}}, 1, LBFGSSettings{MaxIterations: 50, Warnings: &warn})
	if !errors.Is(err, ErrTrialFailed) || !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("got %v, want ErrTrialFailed wrapping ErrNotPositiveDefinite", err)
	}
	if w.x[0] > 1 || res.X[0] != w.x[0] || res.F >= 9 {
		t.Fatalf("params %v, result %+v: want the best accepted point (x ≤ 1, f < 9)", w.x, res)
	}
	if w.jitter != 1e-6 {
		t.Fatalf("jitter %g, want it restored to 1e-6", w.jitter)
	}

	// At the starting point the same failure is the run's error, not a trial's.
	w = &wallQuadratic{x: []float64{2}, jitter: 1e-6}
	_, err = TrainLBFGS(context.Background(), w, []Param{{Name: "x", Data: w.x}}, 1, LBFGSSettings{MaxIterations: 50, Warnings: &warn})
	if err == nil || errors.Is(err, ErrTrialFailed) || !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("got %v, want a plain Cholesky failure", err)
	}
}

// A step large enough to split over the cores, with the split falling
// inside parameters, equals the same step taken a parameter at a time
// (each element's update is independent, so to the last bit).
func TestAdamSplitStepMatchesWhole(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rng := rand.New(rand.NewPCG(3, 9))
	sizes := []int{70001, 3, 80000, 1}
	var whole, split []Param
	var grads [][]float64
	for i, n := range sizes {
		x, g := make([]float64, n), make([]float64, n)
		for j := range x {
			x[j], g[j] = rng.NormFloat64(), rng.NormFloat64()
		}
		whole = append(whole, Param{Name: fmt.Sprint("p", i), Data: slices.Clone(x)})
		split = append(split, Param{Name: fmt.Sprint("p", i), Data: x})
		grads = append(grads, g)
	}
	big := NewAdam(0.01)
	for step := 0; step < 2; step++ {
		if err := big.Step(split, grads); err != nil {
			t.Fatal(err)
		}
	}
	for i := range whole { // each parameter alone is below the split size
		one := NewAdam(0.01)
		for step := 0; step < 2; step++ {
			if err := one.Step(whole[i:i+1], grads[i:i+1]); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(whole[i].Data, split[i].Data) {
			t.Errorf("parameter %d: the split step differs from the parameter's own", i)
		}
	}
}

// BenchmarkFiniteChecks times the checks Train makes at every step, of the
// gradient before the update and of the parameters after it, on NIMGP_NN's
// MNIST parameters (an encoder of 784+10 → 250 → 250 → 2×784 and q(u)).
func BenchmarkFiniteChecks(b *testing.B) {
	sizes := []int{794 * 250, 250, 250 * 250, 250, 250 * 784, 784, 250 * 784, 784, 10 * 100 * 101 / 2, 10 * 100, 100 * 784}
	params := make([]Param, len(sizes))
	grads := make([][]float64, len(sizes))
	for i, n := range sizes {
		params[i] = Param{Name: fmt.Sprint(i), Data: make([]float64, n)}
		grads[i] = make([]float64, n)
		for j := range grads[i] {
			grads[i][j] = float64(j) * 1e-3
			params[i].Data[j] = -float64(j)
		}
	}
	for b.Loop() {
		if err := checkFinite(1, params, grads, "step"); err != nil {
			b.Fatal(err)
		}
		if err := checkParamsFinite(params, "step"); err != nil {
			b.Fatal(err)
		}
	}
}
