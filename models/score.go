package models

import "math"

// Scores are a prediction's test error and mean negative log-likelihood.
type Scores struct {
	Error float64 `json:"error"`
	NLL   float64 `json:"nll"`
}

// Score evaluates n×C probabilities against labels: the means of
// PointLosses.
func Score(probs []float64, labels []int, c int) Scores {
	nll, errs := PointLosses(probs, labels, c)
	var s Scores
	for i := range nll {
		s.NLL += nll[i]
		s.Error += errs[i]
	}
	n := float64(len(labels))
	s.Error /= n
	s.NLL /= n
	return s
}

// PointLosses returns each row's negative log predictive probability of its
// label (probabilities below 1e-300 count as 1e-300) and its 0/1 error
// (the first largest probability is the prediction).
func PointLosses(probs []float64, labels []int, c int) (nll, errs []float64) {
	nll, errs = make([]float64, len(labels)), make([]float64, len(labels))
	for i, y := range labels {
		row := probs[i*c : (i+1)*c]
		arg := 0
		for j := range row {
			if row[j] > row[arg] {
				arg = j
			}
		}
		if arg != y {
			errs[i] = 1
		}
		nll[i] = -math.Log(math.Max(row[y], 1e-300))
	}
	return nll, errs
}
