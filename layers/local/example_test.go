package local_test

import (
	"bytes"
	"fmt"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers/local"
)

// A table with one value per training row (here each row starts at its
// input), trained by two batches that each touch one row. Lazily a row moves
// only when it is in a batch, with its own step count; densely, as the
// TensorFlow Adam of the noisy-input paper's code, row 0 keeps moving on its
// momentum in the step where it is absent (by 0.1·m̂/√v̂ = 0.067), row 1's
// first step is shorter than lazily's lr = 0.1 (its bias corrections use the
// global step count, 2), and row 2, never in a batch, does not move because
// its moments are zero.
func ExampleParam_Step() {
	ds := &datasets.Dataset{Name: "three", N: 3, D: 1, C: 2, X: []float64{1, 2, 3}, Y: []int{0, 1, 0}}
	for _, dense := range []bool{false, true} {
		p := local.New("qx/mean", 1, func(ds *datasets.Dataset, i int, dst []float64) { dst[0] = ds.X[i] })
		p.Reset(ds)
		p.SetOptimizer(0.1, dense)
		if err := p.Step([]int{0}, []float64{1}); err != nil {
			fmt.Println(err)
			return
		}
		if err := p.Step([]int{1}, []float64{-1}); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("dense %-5v rows %.4f, steps of row 0: %d\n", dense, p.Values(), p.Steps(0))
	}
	// Output:
	// dense false rows [0.9000 2.1000 3.0000], steps of row 0: 1
	// dense true  rows [0.8330 2.0744 3.0000], steps of row 0: 2
}

// A table's state saved with WriteStates and read back into a fresh table
// of the same data set by ReadStates: the restored table takes its next
// step exactly as the original does. A table of another shape is refused,
// naming it, before any value changes.
func ExampleWriteStates() {
	ds := &datasets.Dataset{Name: "three", N: 3, D: 1, C: 2, X: []float64{1, 2, 3}, Y: []int{0, 1, 0}}
	table := func() *local.Param {
		p := local.New("qx/mean", 1, func(ds *datasets.Dataset, i int, dst []float64) { dst[0] = ds.X[i] })
		p.Reset(ds)
		p.SetOptimizer(0.1, true)
		return p
	}
	a := table()
	if err := a.Step([]int{0}, []float64{1}); err != nil {
		fmt.Println(err)
		return
	}
	var saved bytes.Buffer
	if err := local.WriteStates(&saved, []*local.Param{a}); err != nil {
		fmt.Println(err)
		return
	}
	b := table()
	if err := local.ReadStates(bytes.NewReader(saved.Bytes()), []*local.Param{b}); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range []*local.Param{a, b} {
		if err := p.Step([]int{1}, []float64{-1}); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%.4f\n", p.Values())
	}
	other := local.New("qx/mean", 2, func(*datasets.Dataset, int, []float64) {})
	other.Reset(ds)
	fmt.Println(local.ReadStates(bytes.NewReader(saved.Bytes()), []*local.Param{other}))
	// Output:
	// [0.8330 2.0744 3.0000]
	// [0.8330 2.0744 3.0000]
	// local: qx/mean has 3 rows of 1 in the stream, 3 of 2 here
}
