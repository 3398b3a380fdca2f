package datasets

import (
	"errors"
	"fmt"
	"math"
)

// Dataset is a labelled design matrix. X is row-major N×D. Labels are 0..C−1.
//
// A flat row-major slice (rather than [][]float64) is used because the
// models copy it into gonum matrices or iterate it in mini-batches, and one
// allocation keeps both cheap.
type Dataset struct {
	// Name identifies the data in logs and result files (e.g. "glass").
	Name string
	// X holds the inputs, row i at X[i*D:(i+1)*D].
	X []float64
	// N is the number of rows and D the number of input columns.
	N, D int
	// Y holds one class label per row, each in 0..C−1.
	Y []int
	// C is the number of classes. It may exceed max(Y)+1 when a subset
	// misses a class, so that a model trained on a subset still has one
	// latent function per class of the full problem.
	C int
	// Noise holds optional N×D input-noise variances aligned with the rows
	// of X (variance, not standard deviation); nil if the inputs carry no
	// known noise. It is what the noisy-input models receive as V_i.
	Noise []float64
	// FeatureNames optionally names the D columns (nil if unknown).
	FeatureNames []string
	// ClassNames optionally names the C classes (nil if unknown), e.g.
	// bll/fsrq/psr for the astrophysics table.
	ClassNames []string
	// LabelValues optionally records, for readers that remap labels, the
	// original label value of each class index: class c was written as
	// LabelValues[c] in the file. nil when labels were already 0..C−1.
	LabelValues []float64
}

// Row returns row i of X. The slice aliases the dataset's storage (no copy)
// so that per-row loops do not allocate; copy it before modifying it.
func (d *Dataset) Row(i int) []float64 {
	return d.X[i*d.D : (i+1)*d.D : (i+1)*d.D]
}

// NoiseRow returns the input-noise variances of row i, aliasing Noise, or
// nil when the dataset has no Noise.
func (d *Dataset) NoiseRow(i int) []float64 {
	if d.Noise == nil {
		return nil
	}
	return d.Noise[i*d.D : (i+1)*d.D : (i+1)*d.D]
}

// Subset returns a new dataset holding the rows idx, in that order (indices
// may repeat, which bootstrap resampling needs). X, Y and Noise are copied
// together so the per-point noise variances stay aligned with their rows —
// the misalignment bug of the original implementation (noise indexed by
// position after shuffling) cannot happen here. It panics if an index is out
// of range, like slice indexing.
func (d *Dataset) Subset(idx []int) *Dataset {
	out := d.shallowMeta()
	out.N = len(idx)
	out.X = make([]float64, len(idx)*d.D)
	out.Y = make([]int, len(idx))
	if d.Noise != nil {
		out.Noise = make([]float64, len(idx)*d.D)
	}
	for k, i := range idx {
		if i < 0 || i >= d.N {
			panic(fmt.Sprintf("datasets: Subset index %d out of range [0,%d)", i, d.N))
		}
		copy(out.X[k*d.D:(k+1)*d.D], d.Row(i))
		out.Y[k] = d.Y[i]
		if d.Noise != nil {
			copy(out.Noise[k*d.D:(k+1)*d.D], d.NoiseRow(i))
		}
	}
	return out
}

// Clone returns a deep copy, so protocol operations can return modified
// datasets without touching their input.
func (d *Dataset) Clone() *Dataset {
	out := d.shallowMeta()
	out.N = d.N
	out.X = append([]float64(nil), d.X...)
	out.Y = append([]int(nil), d.Y...)
	if d.Noise != nil {
		out.Noise = append([]float64(nil), d.Noise...)
	}
	return out
}

// shallowMeta copies the descriptive fields (names, D, C) into a new
// dataset; slices of names are copied so the result is independent.
func (d *Dataset) shallowMeta() *Dataset {
	out := &Dataset{Name: d.Name, D: d.D, C: d.C}
	if d.FeatureNames != nil {
		out.FeatureNames = append([]string(nil), d.FeatureNames...)
	}
	if d.ClassNames != nil {
		out.ClassNames = append([]string(nil), d.ClassNames...)
	}
	if d.LabelValues != nil {
		out.LabelValues = append([]float64(nil), d.LabelValues...)
	}
	return out
}

// ClassCounts returns how many rows carry each label 0..C−1.
func (d *Dataset) ClassCounts() []int {
	counts := make([]int, d.C)
	for _, y := range d.Y {
		if y >= 0 && y < d.C {
			counts[y]++
		}
	}
	return counts
}

// Validate checks the invariants every consumer relies on: shapes agree,
// labels are in 0..C−1, inputs are finite and noise variances are finite and
// non-negative. Readers call it before returning, and code that builds a
// Dataset by hand should too, because a NaN that slips into a kernel matrix
// surfaces much later as an unexplained Cholesky failure.
func (d *Dataset) Validate() error {
	if d == nil {
		return errors.New("datasets: nil dataset")
	}
	name := d.Name
	if name == "" {
		name = "dataset"
	}
	if d.N < 0 || d.D < 0 {
		return fmt.Errorf("%s: negative shape %d×%d", name, d.N, d.D)
	}
	if len(d.X) != d.N*d.D {
		return fmt.Errorf("%s: len(X) = %d, want N×D = %d×%d = %d", name, len(d.X), d.N, d.D, d.N*d.D)
	}
	if len(d.Y) != d.N {
		return fmt.Errorf("%s: len(Y) = %d, want N = %d", name, len(d.Y), d.N)
	}
	if d.C < 1 {
		return fmt.Errorf("%s: C = %d, want at least 1 class", name, d.C)
	}
	for i, y := range d.Y {
		if y < 0 || y >= d.C {
			return fmt.Errorf("%s: row %d: label %d out of range 0..%d", name, i, y, d.C-1)
		}
	}
	for k, v := range d.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: row %d column %d: input %v is not finite", name, k/max(d.D, 1), k%max(d.D, 1), v)
		}
	}
	if d.Noise != nil {
		if len(d.Noise) != d.N*d.D {
			return fmt.Errorf("%s: len(Noise) = %d, want N×D = %d", name, len(d.Noise), d.N*d.D)
		}
		for k, v := range d.Noise {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("%s: row %d column %d: noise variance %v is not finite and non-negative", name, k/max(d.D, 1), k%max(d.D, 1), v)
			}
		}
	}
	if d.FeatureNames != nil && len(d.FeatureNames) != d.D {
		return fmt.Errorf("%s: %d feature names for D = %d columns", name, len(d.FeatureNames), d.D)
	}
	if d.ClassNames != nil && len(d.ClassNames) != d.C {
		return fmt.Errorf("%s: %d class names for C = %d classes", name, len(d.ClassNames), d.C)
	}
	if d.LabelValues != nil && len(d.LabelValues) != d.C {
		return fmt.Errorf("%s: %d label values for C = %d classes", name, len(d.LabelValues), d.C)
	}
	return nil
}
