package experiments

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/datasets"
)

// writeTinyFlights writes n flights in vega's flights-3m.csv format
// (date MMDDHHMM, delay, distance, origin, destination) to
// dir/airline/flights-3m.csv, delayed (delay > 0) iff the departure hour
// is after 15:00, with 3% of the labels flipped: the majority-class error
// is about 0.33 (8 of 24 hours), the Bayes error 0.03.
func writeTinyFlights(t *testing.T, dir string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	var b strings.Builder
	b.WriteString("date,delay,distance,origin,destination\n")
	for range n {
		month, day, hh, mm := 1+rng.IntN(3), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60)
		delayed := hh > 15
		if rng.Float64() < 0.03 {
			delayed = !delayed
		}
		delay := -rng.IntN(20)
		if delayed {
			delay = 1 + rng.IntN(90)
		}
		fmt.Fprintf(&b, "%02d%02d%02d%02d,%d,%d,AAA,BBB\n", month, day, hh, mm, delay, 100+rng.IntN(2400))
	}
	p := filepath.Join(dir, "airline", datasets.AirlineFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runQuick runs a shipped spec's quick profile on dataDir and returns its
// results.
func runQuick(t *testing.T, spec, dataDir string) []Result {
	t.Helper()
	s, err := LoadSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Resolve(s, Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	sum, err := Execute(context.Background(), rs, out, RunConfig{Workers: 1, DataDir: dataDir})
	if err != nil || sum.Failed > 0 {
		t.Fatalf("%s quick: %+v, %v", spec, sum, err)
	}
	if err := Report(out, dataDir); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(out)
	if err != nil {
		t.Fatal(err)
	}
	res := st.results()
	if len(res) != len(Expand(rs)) || len(res) == 0 {
		t.Fatalf("%s quick: %d results for %d runs", spec, len(res), len(Expand(rs)))
	}
	return res
}

// The airline spec's quick profile runs end to end — row store built from
// the CSV, FitStream from its training rows, chunked scoring of its test
// rows — on a tiny synthetic flights file, and learns its rule.
func TestAirlineQuickEndToEnd(t *testing.T) {
	dir := t.TempDir()
	writeTinyFlights(t, dir, 3000)
	res := runQuick(t, "svgp_airline.yaml", dir)
	r := res[0]
	t.Logf("airline quick on 3000 synthetic flights: error %.4f NLL %.4f, %d train / %d test, %d epochs, %.1f s; notes %q",
		r.Error, r.NLL, r.NTrain, r.NTest, r.Epochs, r.Seconds, r.Notes)
	if r.NTrain+r.NTest != 3000 || r.NTest < 200 || r.NTest > 400 {
		t.Errorf("split %d train / %d test of 3000 rows, want about 10%% test", r.NTrain, r.NTest)
	}
	if r.D != 4 || r.C != 2 || r.Inducing != 100 {
		t.Errorf("D %d, C %d, M %d; want 4, 2 and the quick profile's 100", r.D, r.C, r.Inducing)
	}
	if r.Error > 0.12 || r.NLL > 0.4 {
		t.Errorf("error %.4f, NLL %.4f; want well below the majority-class error 0.33", r.Error, r.NLL)
	}
	if len(r.Confusion) != 2 || r.Confusion[0][0]+r.Confusion[0][1]+r.Confusion[1][0]+r.Confusion[1][1] != float64(r.NTest) {
		t.Errorf("confusion %v does not count %d test rows", r.Confusion, r.NTest)
	}
	if steps := r.Epochs * ((r.NTrain + 199) / 200); steps < 1500 {
		t.Errorf("%d epochs of %d rows at batch 200 are %d steps, fewer than the quick min_steps 1500", r.Epochs, r.NTrain, steps)
	}
	if len(r.Notes) < 3 || !strings.Contains(r.Notes[2], "hold-out curve") {
		t.Errorf("notes lack the learning curve: %q", r.Notes)
	}
}

// spreadRows keeps exactly k evenly spaced rows, and the spread source maps
// its indices into the whole range.
func TestLargeSpread(t *testing.T) {
	seq := func(yield func(int) bool) {
		for i := range 1000 {
			if !yield(10 * i) {
				return
			}
		}
	}
	var got []int
	for i := range spreadRows(seq, 1000, 7) {
		got = append(got, i)
	}
	if len(got) != 7 || got[0] != 1420 || got[6] != 9990 {
		t.Errorf("spreadRows kept %v", got)
	}
	n := 0
	for range spreadRows(seq, 1000, 0) {
		n++
	}
	if n != 1000 {
		t.Errorf("spreadRows with k = 0 kept %d of 1000", n)
	}
}

// writeIDX writes an idx ubyte file with the given dimensions.
func writeIDX(t *testing.T, p string, dims []int, data []byte) {
	t.Helper()
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	if err := os.WriteFile(p, append(b, data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The MNIST odd/even quick profile runs on a tiny idx fixture whose odd
// digits light the top half of the image and even digits the bottom half
// (with random speckle), so a correct parity labelling is learnable and a
// wrong one (say, digit ≥ 5) is not.
func TestOddEvenQuickOnFixture(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "mnist"), 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	make := func(n int, img, lab string) {
		px, labels := make([]byte, n*784), make([]byte, n)
		for i := range n {
			d := rng.IntN(10)
			labels[i] = byte(d)
			row0 := 16
			if d%2 == 1 {
				row0 = 4
			}
			for r := row0; r < row0+8; r++ {
				for c := 8; c < 20; c++ {
					px[i*784+r*28+c] = byte(150 + rng.IntN(100))
				}
			}
			for k := 0; k < 40; k++ {
				px[i*784+rng.IntN(784)] = byte(rng.IntN(256))
			}
		}
		writeIDX(t, filepath.Join(dir, "mnist", img), []int{n, 28, 28}, px)
		writeIDX(t, filepath.Join(dir, "mnist", lab), []int{n}, labels)
	}
	make(400, "train-images-idx3-ubyte", "train-labels-idx1-ubyte")
	make(200, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
	res := runQuick(t, "svgp_mnist_oddeven.yaml", dir)
	r := res[0]
	t.Logf("odd/even quick on the fixture: error %.4f NLL %.4f, %d train / %d test; notes %q", r.Error, r.NLL, r.NTrain, r.NTest, r.Notes)
	if r.NTrain != 400 || r.NTest != 200 || r.C != 2 || r.D != 784 {
		t.Errorf("N %d/%d, C %d, D %d; want 400/200, 2, 784", r.NTrain, r.NTest, r.C, r.D)
	}
	if r.Error > 0.05 {
		t.Errorf("error %.4f on a separable parity fixture", r.Error)
	}
}

// The large-data families reject unknown data sets (at the spec's line),
// a missing airline test fraction, and methods the airline family cannot
// stream.
func TestLargeValidation(t *testing.T) {
	const base = `name: x
title: x
source: x
family: FAMILY
datasets: [DATA]
protocol: {splits: 1, test_fraction: TF}
training: {epochs: 1, batch: 10, lr: 0.1, inducing: 5, optimizer: OPT}
settings:
  - {name: default}
methods:
  - {name: KLSp, model: MODEL}
`
	spec := func(family, data, tf, opt, model string) string {
		return strings.NewReplacer("FAMILY", family, "DATA", data, "TF", tf, "OPT", opt, "MODEL", model).Replace(base)
	}
	cases := []struct{ src, want string }{
		{spec("mnist_oddeven", "cifar", "0", "adadelta", "svgp"), `x.yaml:5:12: unknown data set "cifar" for family mnist_oddeven (known: mnist)`},
		{spec("airline", "flights", "0.1", "adadelta", "svgp"), `x.yaml:5:12: unknown data set "flights" for family airline (known: airline)`},
		{spec("airline", "airline", "0", "adadelta", "svgp"), "airline needs protocol.test_fraction > 0"},
		{spec("airline", "airline", "0.1", "lbfgs", "svgp"), "cannot use lbfgs"},
		{spec("airline", "airline", "0.1", "adam", "svgp-kl"), "sparse svi models only"},
		{spec("airline", "airline", "0.1", "adam", "ep-fitc"), "sparse svi models only"},
		{spec("airline", "airline", "0.1", "adadelta", "svgp"), ""},
		{spec("mnist_oddeven", "mnist", "0", "adadelta", "svgp"), ""},
	}
	for _, c := range cases {
		_, err := ParseSpec("x.yaml", []byte(c.src))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("valid spec rejected: %v\n%s", err, c.src)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
