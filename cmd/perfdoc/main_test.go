package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/gpc-dev/gpc/models
cpu: AMD EPYC 9R14
BenchmarkStepWaveform/mgp-2         	       5	    432100 ns/op	     128 B/op	       0 allocs/op
BenchmarkStepMNIST/nimgp-fo-2       	       3	  17300000 ns/op	    2048 B/op	       3 allocs/op
BenchmarkDgemm/784x200x100-2        	      10	     51234 ns/op	  31.50 GMAC/s
PASS
ok  	github.com/gpc-dev/gpc/models	12.3s
`

// The block is made from go test -bench's own output: names without the
// GOMAXPROCS suffix, times in readable units, custom metrics as columns.
func TestParseRender(t *testing.T) {
	r := parse(strings.NewReader(sample))
	if r.cpu != "AMD EPYC 9R14" || len(r.results) != 3 {
		t.Fatalf("%+v", r)
	}
	if r.results[1].name != "StepMNIST/nimgp-fo" || r.results[1].iters != 3 || r.results[1].metrics[0].value != 17300000 {
		t.Fatalf("%+v", r.results[1])
	}
	r.group = group{Key: "steps", Title: "Steps", Package: "./models", Regex: "^BenchmarkStep"}
	out := render([]run{r}, "3x", "")
	for _, want := range []string{"`go run ./cmd/perfdoc -benchtime 3x`", "| StepWaveform/mgp | 432 µs | 128 | 0 | — | 5 |", "| StepMNIST/nimgp-fo | 17.3 ms |", "GMAC/s", "| 31.5 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("block lacks %q:\n%s", want, out)
		}
	}
	doc := "# P\n\nprose\n" + begin + "\nold\n" + end + "\nmore\n"
	got, err := splice(doc, "new\n")
	if err != nil || got != "# P\n\nprose\n"+begin+"\nnew\n"+end+"\nmore\n" {
		t.Fatalf("splice: %q %v", got, err)
	}
	if _, err := splice("no markers", "x"); err == nil {
		t.Fatal("a document without markers was accepted")
	}
}
