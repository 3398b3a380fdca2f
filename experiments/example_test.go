package experiments_test

import (
	"fmt"

	"github.com/gpc-dev/gpc/experiments"
)

const toySpec = `name: toy_demo
title: "Two models on the 1-D toy problem"
family: toy1d
seed: 9
datasets: [toy1d]
protocol:
  splits: 3
  n_train: 200
  n_test: 200
  uncertainty: bootstrap
training:
  epochs: 50
  batch: 100
  lr: 0.01
  inducing: 20
  kernel: se
settings:
  - {name: noise=0.1, noise: 0.1, learn_noise: false}
methods:
  - {name: MGP, kind: mgp}
  - {name: NIMGP, kind: nimgp}
tables:
  - id: T
    title: "Test error"
    metric: error
`

// A spec is parsed strictly, resolved against the command line's options
// (here --splits 2 and --methods nimgp) and expanded into its grid of runs,
// each with a key that hashes its budget, so that results of another budget
// are never mistaken for these.
func ExampleExpand() {
	spec, err := experiments.ParseSpec("toy_demo.yaml", []byte(toySpec))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("full grid:", len(experiments.Expand(spec)), "runs")
	spec, err = experiments.Resolve(spec, experiments.Options{Splits: 2, Methods: []string{"nimgp"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range experiments.Expand(spec) {
		fmt.Println(r.Dataset, r.Setting.Name, r.Method.Name, "split", r.Split, "epochs", r.Budget.Epochs)
	}
	// Output:
	// full grid: 6 runs
	// toy1d noise=0.1 NIMGP split 0 epochs 50
	// toy1d noise=0.1 NIMGP split 1 epochs 50
}

// A mistake in a spec is reported with its file and line, before anything
// runs.
func ExampleParseSpec() {
	_, err := experiments.ParseSpec("typo.yaml", []byte("name: typo\ndatasets: [toy1d]\nmethds:\n  - {name: MGP, kind: mgp}\n"))
	fmt.Println(err)
	// Output:
	// typo.yaml: yaml: unmarshal errors:
	//   line 3: field methds not found in type experiments.Spec
}
