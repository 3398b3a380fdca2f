package svi_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/layers/variational"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// The engine under models.Model, driven by hand: a binary probit SVGP put
// together from its parts, its negative ELBO stepped by Adam on minibatches
// of 20 rows. What models.Model adds on top (initialisation from the data,
// the jitter schedule, checkpoints, prediction) is left out; the loop here
// is the bare one, and the ELBO still rises.
func ExampleNew() {
	ds := &datasets.Dataset{Name: "blobs", N: 80, D: 1, C: 2, X: make([]float64, 80), Y: make([]int, 80)}
	for i := range ds.Y {
		ds.Y[i] = i % 2
		ds.X[i] = float64(i%2)*3 - 1.5 + float64(i%9)/9
	}
	lik := likelihoods.NewProbit()
	k := kernels.NewSE("se", 1, 1, 1, 1e-6)
	post, err := variational.New("q", variational.Config{Latent: lik.Latent(ds.C), M: 4, D: 1, Whitened: true, Jitter: 1e-6},
		[]kernels.Kernel{k}, [][]float64{{-1.5, -0.5, 0.5, 1.5}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := post.InitPrior(); err != nil {
		fmt.Println(err)
		return
	}
	in := &inputs.Observed{}
	if err := in.Init(ds.D, ds.C, ds, 1); err != nil {
		fmt.Println(err)
		return
	}
	params := slices.Concat(k.Params(), post.Params(), lik.Params())
	params = slices.DeleteFunc(params, func(p *layers.Param) bool { return p.Fixed })

	obj, err := svi.New(svi.Parts{C: ds.C, Likelihood: lik, Posterior: post, Inputs: in, Params: params}, ds, 20, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer obj.Close()
	adam := solvers.NewAdam(0.05)
	var first, last float64
	for epoch := 0; epoch < 40; epoch++ {
		batches, err := solvers.EpochBatches(ds.N, 20, 1, epoch)
		if err != nil {
			fmt.Println(err)
			return
		}
		var sum float64
		for _, b := range batches {
			loss, grads, err := obj.Step(b)
			if err != nil {
				fmt.Println(err)
				return
			}
			if err := adam.Step(obj.SolverParams(), grads); err != nil {
				fmt.Println(err)
				return
			}
			sum += loss / float64(len(batches))
		}
		if epoch == 0 {
			first = sum
		}
		last = sum
	}
	var names []string
	for _, p := range obj.SolverParams() {
		names = append(names, p.Name)
	}
	fmt.Println("trained:", strings.Join(names, ", "))
	fmt.Println("the negative ELBO fell:", last < first)
	// Output:
	// trained: q/Z0, se/lengthscales, se/variance, se/white, q/L0, q/m0
	// the negative ELBO fell: true
}
