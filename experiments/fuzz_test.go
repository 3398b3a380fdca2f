package experiments

import (
	"strings"
	"testing"
)

// FuzzParseSpec checks the YAML spec reader on arbitrary bytes: no panic,
// and a spec that parses expands to runs with distinct keys (a repeated
// key would make the runner skip a run as done). The seeds are the mini
// spec, its variants and the corpus under testdata/fuzz/FuzzParseSpec; run
// `go test -fuzz FuzzParseSpec -fuzztime 30s ./experiments` to explore.
func FuzzParseSpec(f *testing.F) {
	f.Add(miniSpec)
	f.Add(strings.Replace(miniSpec, "n_train: 10", "n_train: 1", 1))
	f.Add(strings.Replace(miniSpec, "epochs: 1,", "epochs: 2.7,", 1))
	f.Add(strings.Replace(miniSpec, "lr: 0.01", "lr: .nan", 1))
	f.Add(strings.Replace(miniSpec, "datasets: [toy]", "datasets: [toy, toy]", 1))
	f.Add(strings.Replace(miniSpec, "{name: b, noise: 0.2}", "{name: a, noise: 0.2}", 1))
	f.Add("name: &a x\ntitle: *a\n")
	// The second round's hostile specs: a grid just under the run limit,
	// a data-set name a generated family would ignore, a very long value.
	f.Add(strings.Replace(miniSpec, "splits: 3,", "splits: 249999,", 1))
	f.Add(strings.Replace(miniSpec, "datasets: [toy]", "datasets: [glass]", 1))
	f.Add(strings.Replace(miniSpec, "family: toy1d", "family: synthetic", 1))
	f.Add(strings.Replace(miniSpec, "name: mini", "name: "+strings.Repeat("m", 1<<10), 1))
	f.Add("")
	f.Add("- 1\n- 2\n")
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseSpec("f.yaml", []byte(s))
		if err != nil {
			return
		}
		if len(spec.Datasets)*len(spec.Settings)*max(spec.Protocol.Splits, 0)*len(spec.Methods) > 10000 {
			return
		}
		seen := map[string]bool{}
		for _, r := range Expand(spec) {
			if seen[r.Key] {
				t.Fatalf("two runs with key %s", r.Key)
			}
			seen[r.Key] = true
		}
	})
}
