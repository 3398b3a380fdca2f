package cluster

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// blobs returns n 2-D rows cycling through the given means with standard
// deviation 0.3.
func blobs(n int, means [][2]float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, 0, 2*n)
	for i := range n {
		m := means[i%len(means)]
		x = append(x, m[0]+0.3*rng.NormFloat64(), m[1]+0.3*rng.NormFloat64())
	}
	return x
}

var three = [][2]float64{{-4, 0}, {4, 0}, {0, 5}}

// nearBlobs fails unless every true mean has a centre within tol.
func nearBlobs(t *testing.T, c []float64, means [][2]float64, tol float64) {
	t.Helper()
	for _, m := range means {
		best := math.Inf(1)
		for j := 0; j < len(c)/2; j++ {
			best = math.Min(best, math.Hypot(c[2*j]-m[0], c[2*j+1]-m[1]))
		}
		if best > tol {
			t.Errorf("no centre within %v of %v (centres %v)", tol, m, c)
		}
	}
}

// wcss is the within-cluster sum of squares of x about its nearest centres.
func wcss(x []float64, n, d int, c []float64) float64 {
	var ss float64
	for i := range n {
		best := math.Inf(1)
		for j := 0; j < len(c)/d; j++ {
			best = math.Min(best, sq(x[i*d:(i+1)*d], c[j*d:(j+1)*d]))
		}
		ss += best
	}
	return ss
}

func TestFindsBlobs(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		x := blobs(600, three, seed)
		c, err := KMeans(x, 600, 2, 3, Config{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		nearBlobs(t, c, three, 0.1)
	}
}

// Sample: 20 000 rows clustered through 2 000 of them, quickly, and the
// blobs are still found.
func TestSample(t *testing.T) {
	const n = 20000
	x := blobs(n, three, 1)
	start := time.Now()
	c, err := KMeans(x, n, 2, 3, Config{Seed: 2, Sample: 2000, Restarts: 3})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	nearBlobs(t, c, three, 0.1)
	t.Logf("20 000 rows, Sample 2 000, 3 restarts: %v", elapsed)
	if elapsed > 2*time.Second {
		t.Errorf("Sample 2000 of 20000 rows took %v", elapsed)
	}
	// The subset is s distinct rows in their original order.
	idx := make([]float64, n)
	for i := range idx {
		idx[i] = float64(i)
	}
	sub := subsample(idx, n, 1, 2000, rand.New(rand.NewPCG(1, 2)))
	if len(sub) != 2000 {
		t.Fatalf("subsample gave %d rows", len(sub))
	}
	for i := 1; i < len(sub); i++ {
		if sub[i] <= sub[i-1] {
			t.Fatalf("subsample rows not distinct and ordered at %d: %v, %v", i, sub[i-1], sub[i])
		}
	}
	if sub[len(sub)-1]-sub[0] < n/2 {
		t.Errorf("subsample spans only rows %v…%v", sub[0], sub[len(sub)-1])
	}
	// Sample equal to k after subsampling returns the sampled rows.
	c, err = KMeans(x, n, 2, 5, Config{Seed: 3, Sample: 5})
	if err != nil || len(c) != 10 {
		t.Fatalf("Sample = k: %v, %v", c, err)
	}
}

// Same seed, same centres (with restarts and subsampling too).
func TestDeterministic(t *testing.T) {
	x := blobs(3000, three, 4)
	for _, cfg := range []Config{{Seed: 7}, {Seed: 7, Restarts: 4}, {Seed: 7, Sample: 500}} {
		a, err := KMeans(x, 3000, 2, 8, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := KMeans(x, 3000, 2, 8, cfg)
		if !slices.Equal(a, b) {
			t.Errorf("%+v: same seed, different centres", cfg)
		}
		cfg.Seed = 8
		if o, err := KMeans(x, 3000, 2, 8, cfg); err != nil || len(o) != 16 {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// Restarts keep the seeding with the lowest sum of squares, so they never
// do worse than the first seeding alone.
func TestRestarts(t *testing.T) {
	x := blobs(900, [][2]float64{{0, 0}, {1, 1}, {2, 0}, {3, 3}, {5, 1}}, 9)
	one, _ := KMeans(x, 900, 2, 7, Config{Seed: 3})
	many, _ := KMeans(x, 900, 2, 7, Config{Seed: 3, Restarts: 6})
	if a, b := wcss(x, 900, 2, one), wcss(x, 900, 2, many); b > a {
		t.Errorf("6 restarts: sum of squares %v > %v of one", b, a)
	}
}

// k == n gives the rows themselves, duplicates included.
func TestKEqualsN(t *testing.T) {
	x := blobs(5, three, 3)
	x = append(x, x[2:4]...) // row 5 duplicates row 1
	c, err := KMeans(x, 6, 2, 6, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rows := func(v []float64) [][]float64 {
		var r [][]float64
		for i := 0; i < len(v); i += 2 {
			r = append(r, v[i:i+2])
		}
		slices.SortFunc(r, slices.Compare)
		return r
	}
	if !slices.EqualFunc(rows(c), rows(x), slices.Equal) {
		t.Errorf("k = n: centres %v, rows %v", c, x)
	}
	c[0] = 99
	if x[0] == 99 {
		t.Error("k = n: centres alias x")
	}
}

// Identical rows must not give NaN: every centre is that row.
func TestDuplicateRows(t *testing.T) {
	row := []float64{1, -2, 3.5}
	var same []float64
	for range 10 {
		same = append(same, row...)
	}
	for _, cfg := range []Config{{Seed: 1}, {Seed: 2, Restarts: 3}, {Seed: 3, Sample: 4}} {
		c, err := KMeans(same, 10, 3, 3, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if !slices.Equal(c[3*j:3*j+3], row) {
				t.Fatalf("%+v: centres %v, want copies of %v", cfg, c, row)
			}
		}
	}
	// Two distinct rows, many copies, more centres than distinct rows.
	two := []float64{0, 0, 5, 5, 0, 0, 5, 5, 0, 0, 5, 5}
	c, err := KMeans(two, 6, 2, 4, Config{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for j := range 4 {
		if p := c[2*j : 2*j+2]; !slices.Equal(p, two[:2]) && !slices.Equal(p, two[2:4]) {
			t.Fatalf("centres %v are not rows of %v", c, two)
		}
	}
}

// Lloyd's within-cluster sum of squares never increases, and the value it
// returns is that of the centres it leaves.
func TestLloydMonotone(t *testing.T) {
	x := blobs(500, [][2]float64{{0, 0}, {1, 1}, {2, 0}, {3, 3}}, 5)
	for s := range uint64(10) {
		rng := rand.New(rand.NewPCG(s, 1))
		w := newWork(500, 2, 6)
		c, err := seed(context.Background(), x, 500, 2, 6, rng, w.dist)
		if err != nil {
			t.Fatal(err)
		}
		if s%2 == 1 {
			// Far-away centres start empty and must be re-seeded.
			copy(c[:4], []float64{100, 100, -100, 50})
		}
		prev, steps := math.Inf(1), 0
		ss, err := lloyd(context.Background(), x, 500, 2, 6, c, 100, true, w, func(ss float64) {
			if ss > prev {
				t.Errorf("seed %d step %d: sum of squares rose from %v to %v", s, steps, prev, ss)
			}
			prev = ss
			steps++
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := wcss(x, 500, 2, c); math.Abs(ss-want) > 1e-9*want {
			t.Errorf("seed %d: lloyd returned %v for centres with sum of squares %v", s, ss, want)
		}
		if s%2 == 1 && (c[0] > 10 || c[3] > 10) {
			t.Errorf("seed %d: empty centres not re-seeded: %v", s, c)
		}
		// Unscored, the value is the last assignment's: an upper bound.
		for _, it := range []int{1, 2, 3} {
			c := slices.Clone(x[:12])
			ss, _ := lloyd(context.Background(), x, 500, 2, 6, c, it, false, w, nil)
			if want := wcss(x, 500, 2, c); ss < want*(1-1e-12) {
				t.Errorf("seed %d, %d iterations: unscored %v below final %v", s, it, ss, want)
			}
		}
	}
}

// An empty cluster takes the row farthest from its centre, and that row
// leaves its old cluster.
func TestReseedFarthest(t *testing.T) {
	x := []float64{0, 1, 2, 10}
	c := []float64{0, 100}
	if _, err := lloyd(context.Background(), x, 4, 1, 2, c, 1, true, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c, []float64{1, 10}) {
		t.Errorf("centres %v, want [1 10]", c)
	}
	// MaxIter 1 is one full mean step, scored or not.
	c = []float64{0, 9}
	if _, err := lloyd(context.Background(), x, 4, 1, 2, c, 1, false, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c, []float64{1, 10}) {
		t.Errorf("one unscored iteration: centres %v, want [1 10]", c)
	}
}

// Equidistant rows go to the lowest-indexed centre, even from a higher one.
func TestTies(t *testing.T) {
	x := []float64{1, 1}
	c := []float64{0, 2, 0}
	assign, dist := []int{1, 2}, make([]float64, 2)
	ss, changed := assignStep(x, 2, 1, 3, c, assign, dist)
	if !slices.Equal(assign, []int{0, 0}) || !changed || ss != 2 {
		t.Errorf("assign %v, changed %v, ss %v; want [0 0] true 2", assign, changed, ss)
	}
}

func TestErrors(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, math.NaN()}
	inf := []float64{0, 1, 2, math.Inf(-1)}
	for _, c := range []struct {
		x       []float64
		n, d, k int
		cfg     Config
		want    string
	}{
		{x[:2], 2, 1, 3, Config{}, "k = 3 centres, but only n = 2 rows"},
		{x[:2], 2, 1, 0, Config{}, "k = 0 centres"},
		{x[:2], 2, 1, -1, Config{}, "k = -1 centres"},
		{x[:3], 2, 1, 1, Config{}, "len(x) = 3 values, but n×d = 2×1"},
		{x[:2], 2, 0, 1, Config{}, "d = 0 columns"},
		{nil, 0, 2, 1, Config{}, "n = 0 rows"},
		{x, 3, 2, 1, Config{}, "NaN at row 2, column 1"},
		{inf, 2, 2, 1, Config{}, "-Inf at row 1, column 1"},
		{x[:4], 4, 1, 2, Config{MaxIter: -1}, "MaxIter = -1"},
		{x[:4], 4, 1, 2, Config{Restarts: -2}, "Restarts = -2"},
		{x[:4], 4, 1, 2, Config{Sample: -3}, "Sample = -3"},
		{x[:4], 4, 1, 3, Config{Sample: 2}, "Sample = 2 rows cannot give k = 3"},
	} {
		if _, err := KMeans(c.x, c.n, c.d, c.k, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("n=%d d=%d k=%d %+v: got %v, want %q", c.n, c.d, c.k, c.cfg, err, c.want)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := KMeans(blobs(50, three, 1), 50, 2, 3, Config{Context: ctx})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "cluster: ") {
		t.Errorf("cancelled before seeding: %v", err)
	}
	// Cancelled between Lloyd iterations.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	x := blobs(500, three, 2)
	c := slices.Clone(x[:6])
	_, err = lloyd(ctx, x, 500, 2, 3, c, 100, true, nil, func(float64) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during Lloyd: %v", err)
	}
	// A deadline is reported as such.
	ctx, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	if _, err := KMeans(x, 500, 2, 3, Config{Context: ctx}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
}

func TestNoAllocPerIteration(t *testing.T) {
	x := blobs(2000, three, 6)
	w := newWork(2000, 2, 10)
	c := slices.Clone(x[:20])
	ctx := context.Background()
	short := testing.AllocsPerRun(3, func() { copy(c, x[:20]); lloyd(ctx, x, 2000, 2, 10, c, 1, true, w, nil) })
	long := testing.AllocsPerRun(3, func() { copy(c, x[:20]); lloyd(ctx, x, 2000, 2, 10, c, 30, true, w, nil) })
	if short != 0 || long != 0 {
		t.Errorf("lloyd allocates: %v (1 iteration), %v (30 iterations)", short, long)
	}
}

func BenchmarkKMeans(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, 10000*20)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := KMeans(x, 10000, 20, 100, Config{MaxIter: 10}); err != nil {
			b.Fatal(err)
		}
	}
}
