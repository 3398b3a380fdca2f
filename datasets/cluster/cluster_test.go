package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func blobs(n int, means [][2]float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, 0, 2*n)
	for i := 0; i < n; i++ {
		m := means[i%len(means)]
		x = append(x, m[0]+0.3*rng.NormFloat64(), m[1]+0.3*rng.NormFloat64())
	}
	return x
}

var three = [][2]float64{{-4, 0}, {4, 0}, {0, 5}}

// Three separated blobs: every true mean has a centre within 0.1.
func TestFindsBlobs(t *testing.T) {
	for _, sample := range []int{0, 2000} {
		n := 600
		if sample > 0 {
			n = 20000
		}
		c, err := KMeans(blobs(n, three, 1), n, 2, 3, Config{Seed: 2, Sample: sample})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range three {
			best := math.Inf(1)
			for j := 0; j < 3; j++ {
				best = math.Min(best, math.Hypot(c[2*j]-m[0], c[2*j+1]-m[1]))
			}
			if best > 0.1 {
				t.Errorf("sample %d: no centre within 0.1 of %v (centres %v)", sample, m, c)
			}
		}
	}
}

// k = n gives the rows; duplicates give finite centres; same seed, same result.
func TestEdgeCases(t *testing.T) {
	x := blobs(5, three, 3)
	c, err := KMeans(x, 5, 2, 5, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		found := false
		for j := 0; j < 5; j++ {
			found = found || slices.Equal(c[2*j:2*j+2], x[2*i:2*i+2])
		}
		if !found {
			t.Errorf("row %d is not a centre with k = n", i)
		}
	}
	same := []float64{1, 2, 1, 2, 1, 2, 1, 2}
	c, err = KMeans(same, 4, 2, 3, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range c {
		if v != 1 && v != 2 {
			t.Fatalf("duplicate rows gave centres %v", c)
		}
	}
	big := blobs(300, three, 4)
	a, _ := KMeans(big, 300, 2, 4, Config{Seed: 7})
	b, _ := KMeans(big, 300, 2, 4, Config{Seed: 7})
	if !slices.Equal(a, b) {
		t.Error("same seed, different centres")
	}
}

// Lloyd's within-cluster sum of squares never increases.
func TestLloydMonotone(t *testing.T) {
	x := blobs(500, [][2]float64{{0, 0}, {1, 1}, {2, 0}, {3, 3}}, 5)
	rng := rand.New(rand.NewPCG(1, 1))
	c := seed(x, 500, 2, 6, rng)
	prev := math.Inf(1)
	if _, err := lloyd(context.Background(), x, 500, 2, 6, c, 100, func(ss float64) {
		if ss > prev+1e-9 {
			t.Errorf("sum of squares rose from %v to %v", prev, ss)
		}
		prev = ss
	}); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	x := []float64{0, 1, 2, math.NaN()}
	for _, c := range []struct {
		x       []float64
		n, d, k int
		want    string
	}{
		{x[:2], 2, 1, 3, "3 centres for 2 rows"},
		{x[:3], 2, 1, 1, "3 values for 2 rows"},
		{x, 2, 2, 1, "NaN at row 1, column 1"},
		{x[:2], 2, 1, 0, "0 centres"},
	} {
		if _, err := KMeans(c.x, c.n, c.d, c.k, Config{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := KMeans(blobs(50, three, 1), 50, 2, 3, Config{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Two clear blobs: the rounded centres, sorted.
func ExampleKMeans() {
	x := []float64{0, 0, 0.2, 0, 0, 0.2, 10, 10, 10.2, 10, 10, 10.2}
	c, _ := KMeans(x, 6, 2, 2, Config{Seed: 1})
	if c[0] > c[2] {
		c[0], c[1], c[2], c[3] = c[2], c[3], c[0], c[1]
	}
	fmt.Printf("%.2f %.2f\n%.2f %.2f\n", c[0], c[1], c[2], c[3])
	// Output:
	// 0.07 0.07
	// 10.07 10.07
}

func BenchmarkKMeans(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, 10000*20)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := 0; i < b.N; i++ {
		if _, err := KMeans(x, 10000, 20, 100, Config{MaxIter: 10}); err != nil {
			b.Fatal(err)
		}
	}
}
