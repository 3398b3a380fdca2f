package models_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

// Three classes along a line, one row deliberately mislabelled: RMGPC
// flags it as an outlier (models.OutlierReporter), predicts through it,
// and a saved model gives the same answers.
func Example_rmgpcOutliers() {
	var x []float64
	var y []int
	for i := 0; i < 30; i++ {
		v := -3 + 0.2*float64(i)
		c := 0
		if v > -1 {
			c = 1
		}
		if v > 1 {
			c = 2
		}
		x, y = append(x, v), append(y, c)
	}
	y[16] = 2 // x = 0.2 lies among class 1
	ds := &datasets.Dataset{Name: "line", X: x, N: 30, D: 1, Y: y, C: 3}

	m, err := models.New(models.Options{Model: "rmgpc", Inputs: models.InputOptions{Standardize: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Fit(context.Background(), ds, models.FitConfig{Warnings: io.Discard}); err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Outliers()
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, p := range out {
		if p > 0.5 {
			fmt.Printf("row %d (x = %.1f, label %d) is an outlier\n", i, x[i], y[i])
		}
	}

	path := filepath.Join(os.TempDir(), "rmgpc-example.json")
	defer os.Remove(path)
	if err := m.Save(path); err != nil {
		fmt.Println(err)
		return
	}
	loaded, err := models.Load(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	test := []float64{-2, 0.2, 2}
	probs, err := loaded.Predict(test, len(test), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for r, v := range test {
		row := probs[r*3 : r*3+3]
		best := 0
		for k := range row {
			if row[k] > row[best] {
				best = k
			}
		}
		fmt.Printf("x = %4.1f: class %d\n", v, best)
	}
	// Output:
	// row 16 (x = 0.2, label 2) is an outlier
	// x = -2.0: class 0
	// x =  0.2: class 1
	// x =  2.0: class 2
}
