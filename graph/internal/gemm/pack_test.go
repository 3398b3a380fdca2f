package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// gather6 and gather8 (scaled or not) interleave their rows exactly as the
// element-by-element definition, whatever the length's remainder by the
// assembly's eight columns, and write nothing past 6n or 8n values.
func TestGatherInterleaves(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for n := range 41 {
		var rows [8][]float64
		for r := range rows {
			rows[r] = make([]float64, n+3) // longer than n: only n are read
			for q := range rows[r] {
				rows[r][q] = rng.NormFloat64()
			}
			rows[r] = rows[r][:n]
		}
		w := make([]float64, n)
		for q := range w {
			w[q] = rng.NormFloat64()
		}
		const guard = 1234.5
		dst := make([]float64, 8*n+8)
		for i := range dst {
			dst[i] = guard
		}
		gather6(dst, rows[0], rows[1], rows[2], rows[3], rows[4], rows[5])
		for q := range n {
			for r := range 6 {
				if got := dst[q*6+r]; got != rows[r][q] {
					t.Fatalf("gather6, n = %d: dst[%d] = %v, want row %d element %d = %v", n, q*6+r, got, r, q, rows[r][q])
				}
			}
		}
		for i := 6 * n; i < len(dst); i++ {
			if dst[i] != guard {
				t.Fatalf("gather6, n = %d: wrote dst[%d] past 6n", n, i)
			}
		}
		for _, scale := range [][]float64{nil, w} {
			for i := range dst {
				dst[i] = guard
			}
			gather8(dst, &rows, scale)
			for q := range n {
				for r := range 8 {
					want := rows[r][q]
					if scale != nil {
						want *= scale[q]
					}
					if got := dst[q*8+r]; got != want {
						t.Fatalf("gather8 (scaled %v), n = %d: dst[%d] = %v, want %v", scale != nil, n, q*8+r, got, want)
					}
				}
			}
			for i := 8 * n; i < len(dst); i++ {
				if dst[i] != guard {
					t.Fatalf("gather8, n = %d: wrote dst[%d] past 8n", n, i)
				}
			}
		}
	}
}

// BenchmarkGather times packing a 784-long sliver of six and of eight rows
// (an MNIST product's operands).
func BenchmarkGather(b *testing.B) {
	const n = 784
	var rows [8][]float64
	for r := range rows {
		rows[r] = make([]float64, n)
	}
	dst := make([]float64, 8*n)
	b.Run("six", func(b *testing.B) {
		for b.Loop() {
			gather6(dst, rows[0], rows[1], rows[2], rows[3], rows[4], rows[5])
		}
	})
	b.Run("eight", func(b *testing.B) {
		for b.Loop() {
			gather8(dst, &rows, nil)
		}
	})
	b.Run("eight-scaled", func(b *testing.B) {
		for b.Loop() {
			gather8(dst, &rows, rows[0])
		}
	})
}

// strided6Kernel512 copies n groups of six from strided rows, the last
// group ending the source slice, and writes nothing past 6n values.
func TestStrided6(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512")
	}
	for _, stride := range []int{6, 7, 13} {
		for n := range 12 {
			src := make([]float64, max(0, (n-1)*stride+6))
			for i := range src {
				src[i] = float64(i) + 0.25
			}
			dst := make([]float64, 6*n+8)
			for i := range dst {
				dst[i] = -1
			}
			if n > 0 {
				strided6Kernel512(&dst[0], &src[0], stride, n)
			}
			for g := range n {
				for r := range 6 {
					if got, want := dst[g*6+r], src[g*stride+r]; got != want {
						t.Fatalf("stride %d, n %d: dst[%d] = %v, want %v", stride, n, g*6+r, got, want)
					}
				}
			}
			for i := 6 * n; i < len(dst); i++ {
				if dst[i] != -1 {
					t.Fatalf("stride %d, n %d: wrote dst[%d] past 6n", stride, n, i)
				}
			}
		}
	}
}

// BenchmarkPackATransposed packs a 256×192 block of a transposed A into
// six-row slivers, with the assembly and with the Go loop.
func BenchmarkPackATransposed(b *testing.B) {
	const kc, mc = 256, 192
	a := make([]float64, kc*mc)
	dst := make([]float64, (mc+mr)*kc)
	term := &Term{A: a, LDA: mc, TA: true}
	keep := avx512
	defer func() { avx512 = keep }()
	for _, on := range []bool{true, false} {
		if on && !keep {
			continue
		}
		b.Run(map[bool]string{true: "avx512", false: "go"}[on], func(b *testing.B) {
			avx512 = on
			for b.Loop() {
				packA(term, dst, 0, mc, 0, kc)
			}
		})
	}
}

// BenchmarkPackB packs blocks of B (not transposed) into eight-column
// slivers, a row of B at a time (each row's groups to every sliver, 8·kc
// values apart) and a sliver at a time (each sliver's groups from every
// row). Where 8·kc values are a multiple of 4 KiB (kc = 256, 64) the
// row-at-a-time stores share cache sets and take 2–5 times as long; at
// kc = 102 the two orders take the same time.
func BenchmarkPackB(b *testing.B) {
	for _, sh := range [][2]int{{256, 1000}, {256, 104}, {64, 32}, {102, 200}} {
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) { benchPackB(b, sh[0], sh[1]) })
	}
}

func benchPackB(b *testing.B, kc, nc int) {
	src := make([]float64, kc*nc)
	dst := make([]float64, (nc+nr)*kc)
	full := nc - nc%nr
	b.Run("by-row", func(b *testing.B) {
		for b.Loop() {
			for q := 0; q < kc; q++ {
				groups8(dst[q*nr:], nr*kc, src[q*nc:], nr, full/nr)
			}
		}
	})
	b.Run("by-sliver", func(b *testing.B) {
		for b.Loop() {
			for s := 0; s < full; s += nr {
				groups8(dst[s*kc:], nr, src[s:], nc, kc)
			}
		}
	})
}
