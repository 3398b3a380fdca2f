package solvers_test

import (
	"context"
	"fmt"

	"github.com/gpc-dev/gpc/solvers"
)

// meanObjective is ½ Σ_n (θ - y_n)², minimised by the sample mean. Its Step
// shows the weighting contract: each row's data term is multiplied by
// Batch.Weight, which makes every minibatch loss an unbiased estimate of the
// full-data loss (padding rows have weight 0).
type meanObjective struct {
	y     []float64
	theta []float64 // aliased by the Param below
	grad  []float64
}

func (m *meanObjective) Step(b solvers.Batch) (float64, [][]float64, error) {
	loss, g := 0.0, 0.0
	for i, idx := range b.Index {
		r := m.theta[0] - m.y[idx]
		loss += 0.5 * b.Weight[i] * r * r
		g += b.Weight[i] * r
	}
	m.grad[0] = g
	return loss, [][]float64{m.grad}, nil
}

func ExampleTrain() {
	obj := &meanObjective{
		y:     []float64{2, 4, 4, 5, 7, 9, 3, 6, 8, 7},
		theta: []float64{0},
		grad:  make([]float64, 1),
	}
	params := []solvers.Param{{Name: "theta", Data: obj.theta}}
	adam := solvers.NewAdam(0.5)
	hist, err := solvers.Train(context.Background(), obj, params, solvers.TrainConfig{
		N: len(obj.y), BatchSize: 4, Epochs: 500, Seed: 1,
		Optimizer: adam,
		// Decay the learning rate so the stochastic iterates settle.
		Callback: func(solvers.Epoch) error {
			adam.SetLearningRate(adam.LearningRate() * 0.98)
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	last, _ := hist.Last()
	fmt.Printf("epochs %d, iterations %d\n", len(hist), last.Iterations)
	fmt.Printf("theta %.1f (sample mean 5.5)\n", obj.theta[0])
	// Output:
	// epochs 500, iterations 1500
	// theta 5.5 (sample mean 5.5)
}
