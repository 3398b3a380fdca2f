package htpc_test

import (
	"fmt"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models/htpc"
)

// Fit the heavy-tailed process classifier by Laplace on three 1-D clusters,
// its hyper-parameters by evidence maximisation (which must end above the
// evidence at the initial values, FixHyper's), and predict at each cluster's
// centre; every row of probabilities sums to one.
func ExampleFit() {
	ds := &datasets.Dataset{Name: "clusters", N: 30, D: 1, C: 3, X: make([]float64, 30), Y: make([]int, 30)}
	for i := range ds.Y {
		ds.Y[i] = i % 3
		ds.X[i] = 3*float64(i%3) + float64(i/3)/10 - 0.45
	}
	m, err := htpc.Fit(ds, htpc.Config{Seed: 1, PredictSamples: 2000})
	if err != nil {
		fmt.Println(err)
		return
	}
	m0, err := htpc.Fit(ds, htpc.Config{FixHyper: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("evidence raised:", m.LogEvidence > m0.LogEvidence)
	probs, err := m.Predict([]float64{0, 3, 6}, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 3; i++ {
		row := probs[3*i : 3*i+3]
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		fmt.Printf("x = %d: class %d, probabilities sum to %.6f\n", 3*i, best, row[0]+row[1]+row[2])
	}
	// Output:
	// evidence raised: true
	// x = 0: class 0, probabilities sum to 1.000000
	// x = 3: class 1, probabilities sum to 1.000000
	// x = 6: class 2, probabilities sum to 1.000000
}
