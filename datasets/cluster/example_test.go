package cluster_test

import (
	"fmt"
	"slices"

	"github.com/gpc-dev/gpc/datasets/cluster"
)

// Two clear blobs of three rows each give one centre per blob. The centres
// come back in no particular order, so they are sorted before printing.
func ExampleKMeans() {
	x := []float64{
		0, 0,
		0.3, 0,
		0, 0.3,
		10, 10,
		10.3, 10,
		10, 10.3,
	}
	c, err := cluster.KMeans(x, 6, 2, 2, cluster.Config{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	rows := [][]float64{c[0:2], c[2:4]}
	slices.SortFunc(rows, slices.Compare)
	for _, r := range rows {
		fmt.Printf("%.1f %.1f\n", r[0], r[1])
	}
	// Output:
	// 0.1 0.1
	// 10.1 10.1
}
