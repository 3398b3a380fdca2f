package solvers

import "fmt"

// Param is one trainable array; Data aliases the model's storage and is updated in place.
//
// Aliasing (rather than copying values in and out) is what lets solvers stay
// independent of the graph engine without paying a copy per step: the model
// hands out slices of its tensors' backing arrays once, and every optimiser
// update is seen by the next forward pass. Name is only used in diagnostics,
// so that a NaN can be blamed on "lengthscale" rather than on "param #3".
type Param struct {
	Name string
	Data []float64
}

// Size returns the total number of scalars in params, which is the dimension
// a vector-based optimiser such as L-BFGS works in.
func Size(params []Param) int {
	n := 0
	for _, p := range params {
		n += len(p.Data)
	}
	return n
}

// Flatten copies params into one new vector, in params' order, because
// full-batch optimisers (L-BFGS) want a single point in R^n rather than a
// list of arrays.
func Flatten(params []Param) []float64 {
	x := make([]float64, 0, Size(params))
	for _, p := range params {
		x = append(x, p.Data...)
	}
	return x
}

// Unflatten copies x back into params' Data in place (the inverse of
// Flatten), so that the model's aliased storage sees the optimiser's point.
// It refuses a length mismatch rather than silently leaving stale values.
func Unflatten(params []Param, x []float64) error {
	if n := Size(params); n != len(x) {
		return fmt.Errorf("solvers: Unflatten: params hold %d values, vector has %d", n, len(x))
	}
	off := 0
	for _, p := range params {
		off += copy(p.Data, x[off:off+len(p.Data)])
	}
	return nil
}

// FlattenGrads writes per-parameter gradients into dst in params' order, the
// layout Flatten uses, checking every shape against params because an
// objective that returns a wrongly sized gradient would otherwise corrupt the
// optimiser silently.
func FlattenGrads(dst []float64, params []Param, grads [][]float64) error {
	if err := checkGradShapes(params, grads); err != nil {
		return err
	}
	if n := Size(params); n != len(dst) {
		return fmt.Errorf("solvers: FlattenGrads: params hold %d values, destination has %d", n, len(dst))
	}
	off := 0
	for _, g := range grads {
		off += copy(dst[off:], g)
	}
	return nil
}

// checkGradShapes is shared by the optimisers and the training loop so that
// every entry point reports a shape mismatch the same way, naming the param.
func checkGradShapes(params []Param, grads [][]float64) error {
	if len(params) != len(grads) {
		return fmt.Errorf("solvers: got %d gradients for %d params", len(grads), len(params))
	}
	for i, p := range params {
		if len(grads[i]) != len(p.Data) {
			return fmt.Errorf("solvers: gradient for param %s has %d elements, param has %d",
				paramLabel(params, i), len(grads[i]), len(p.Data))
		}
	}
	return nil
}

// paramLabel names a param for messages, falling back to its position
// because Name is optional.
func paramLabel(params []Param, i int) string {
	if params[i].Name != "" {
		return fmt.Sprintf("%q", params[i].Name)
	}
	return fmt.Sprintf("#%d", i)
}
