package tests

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/models"
)

// RationalQuadratic is a kernel a user writes as graph code outside the
// kernels package: k(x,z) = σ² (1 + ‖x−z‖²/(2αℓ))^(−α), with α fixed and a
// single length-scale ℓ. It implements kernels.Kernel and kernels.Noiser.
type RationalQuadratic struct {
	Alpha    float64
	Scale    *layers.Param // ℓ, log-parameterised
	Variance *layers.Param // σ², log-parameterised
	White    *layers.Param // σ₀²
}

func newRQ(name string, init models.KernelInit) *RationalQuadratic {
	return &RationalQuadratic{
		Alpha:    2,
		Scale:    layers.NewParam(name+"/scale", tensor.ScalarShape(), init.Lengthscale, layers.Exp),
		Variance: layers.NewParam(name+"/variance", tensor.ScalarShape(), 1, layers.Exp),
		White:    layers.NewParam(name+"/white", tensor.ScalarShape(), 0.01, layers.Exp),
	}
}

func (k *RationalQuadratic) K(s *layers.Scope, x, z *G.Node) (*G.Node, error) {
	e := &graph.Chain{}
	d2 := e.Do(graph.SqDist(x, z))
	ell := e.Do(s.Node(k.Scale))
	base := e.Do(G.HadamardDiv(d2, e.Do(G.HadamardProd(ell, G.NewConstant(2*k.Alpha)))))
	base = e.Do(G.Add(base, G.NewConstant(1.0)))
	// (1+u)^(−α) = exp(−α log(1+u))
	kk := e.Do(G.Exp(e.Do(G.HadamardProd(e.Do(G.Log(base)), G.NewConstant(-k.Alpha)))))
	v := e.Do(s.Node(k.Variance))
	return e.Do(G.HadamardProd(v, kk)), e.Err
}

func (k *RationalQuadratic) Diag(s *layers.Scope, x *G.Node) (*G.Node, error) {
	v, err := s.Node(k.Variance)
	if err != nil {
		return nil, err
	}
	return graph.BroadcastTo(v, tensor.Shape{x.Shape()[0]}, []int{0})
}

func (k *RationalQuadratic) Noise(s *layers.Scope) (*G.Node, error) { return s.Node(k.White) }

func (k *RationalQuadratic) Params() []*layers.Param {
	return []*layers.Param{k.Scale, k.Variance, k.White}
}

var _ kernels.Kernel = (*RationalQuadratic)(nil)

func rqFactory(name string, d int, init models.KernelInit) kernels.Kernel { return newRQ(name, init) }

// The same kernel registered by name: the command line, specs and saved
// models can then name it ("rq", "rq+linear"), and Load rebuilds it in any
// program that registers it. It initialises itself from the data as the
// stationary built-in kernels do: ℓ the median pairwise distance of the
// sampled training rows (ℓ divides squared distances here too).
func init() {
	err := kernels.Register("rq", func(c kernels.Config) (kernels.Kernel, error) {
		if len(c.Args) > 0 {
			return nil, fmt.Errorf("rq takes no arguments")
		}
		init := models.KernelInit{Lengthscale: 1}
		if c.Data != nil {
			init.Lengthscale = c.Data.MedianDistance()
		}
		return newRQ(c.Name, init), nil
	})
	if err != nil {
		panic(err)
	}
}

// The user's kernel passes the model-level gradient check, including the
// first-order model, which differentiates through ∂μ/∂x of this kernel.
func TestUserKernelGradients(t *testing.T) {
	for _, k := range noisyPresets {
		t.Run(k, func(t *testing.T) {
			rep, err := models.CheckGradients(models.Options{Model: k, Kernel: models.KernelOptions{Factory: rqFactory}}, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !(rep.MaxRelErr <= 1e-6) {
				t.Errorf("%s", rep.Worst())
			}
		})
	}
}

// The registered kernel, alone and in a sum, through the model-level
// gradient check (NIMGP_FO differentiates ∂μ/∂x through it).
func TestRegisteredUserKernelGradients(t *testing.T) {
	for _, expr := range []string{"rq", "rq+linear"} {
		t.Run(expr, func(t *testing.T) {
			rep, err := models.CheckGradients(models.Options{Model: "nimgp-fo", Kernel: models.KernelOptions{Name: expr}}, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !(rep.MaxRelErr <= 1e-6) {
				t.Errorf("%s", rep.Worst())
			}
		})
	}
}

// A model with the registered user kernel (alone, and in an expression)
// is saved with the kernel's name and reloaded by Load alone, predicting
// bit for bit as before; the factory route reloads when Load is given the
// factory.
func TestUserKernelReload(t *testing.T) {
	prob, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), 0.1, 7)
	if err != nil {
		t.Fatal(err)
	}
	_, train := prob.Sample(200, 1)
	_, test := prob.Sample(50, 2)
	for _, c := range []struct {
		label string
		k     models.KernelOptions
	}{
		{"registered", models.KernelOptions{Name: "rq"}},
		{"expression", models.KernelOptions{Name: "rq*linear+se-iso"}},
		{"factory", models.KernelOptions{Factory: rqFactory}},
	} {
		t.Run(c.label, func(t *testing.T) {
			o := models.Options{Model: "mgp", Kernel: c.k, Posterior: models.PosteriorOptions{Inducing: 10}, Train: models.TrainOptions{Epochs: 3, Batch: 50, Seed: 1}}
			m, err := models.New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "rq.json")
			if err := m.Save(path); err != nil {
				t.Fatal(err)
			}
			var custom *models.Options
			if c.k.Factory != nil {
				custom = &models.Options{Kernel: c.k}
			}
			l, err := models.Load(path, custom)
			if err != nil {
				t.Fatal(err)
			}
			p1, err := m.Predict(test.X, test.N, nil)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := l.Predict(test.X, test.N, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range p1 {
				if math.Float64bits(p1[i]) != math.Float64bits(p2[i]) {
					t.Fatalf("prediction %d: %v before saving, %v after loading", i, p1[i], p2[i])
				}
			}
		})
	}
}

// A model trained with the user's kernel learns the toy problem.
func TestUserKernelTrains(t *testing.T) {
	prob, err := datasets.NewToy1DProblem(datasets.DefaultToy1DConfig(), 0.1, 7)
	if err != nil {
		t.Fatal(err)
	}
	_, train := prob.Sample(300, 1)
	_, test := prob.Sample(300, 2)
	o := models.Options{Model: "nimgp-fo", Kernel: models.KernelOptions{Factory: rqFactory}, Posterior: models.PosteriorOptions{Inducing: 20}, Train: models.TrainOptions{Epochs: 40, Batch: 50, Seed: 1}}
	o.Inputs.Noise.Var = 0.1
	m, err := models.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fit(context.Background(), train, models.FitConfig{}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Predict(test.X, test.N, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := models.Score(p, test.Y, test.C)
	bayes := models.Score(prob.BayesPredictive(test), test.Y, test.C)
	t.Logf("user kernel: %+v; Bayes-optimal: %+v", sc, bayes)
	// Chance error is 2/3; a trained model must come within 10 points of the Bayes error.
	if sc.Error > bayes.Error+0.10 {
		t.Errorf("test error %.3f with the user kernel, Bayes-optimal %.3f", sc.Error, bayes.Error)
	}
}

// A user kernel enters a model through Options.Kernel.Factory, which builds
// one kernel per latent function from the data-driven initial values, or
// by name once registered (see init above), as any built-in kernel.
func Example_userKernel() {
	k := rqFactory("k0", 2, models.KernelInit{Lengthscale: 1.5, Variance: 1, Noise: 0.01})
	for _, p := range k.Params() {
		fmt.Printf("%s = %.2f\n", p.Name, p.Value(0))
	}
	_, err := models.New(models.Options{Model: "nimgp-fo", Kernel: models.KernelOptions{Factory: rqFactory}})
	fmt.Println("model accepts the factory:", err == nil)
	_, err = models.New(models.Options{Model: "nimgp-fo", Kernel: models.KernelOptions{Name: "rq+linear"}})
	fmt.Println("model accepts the registered name in an expression:", err == nil)
	// Output:
	// k0/scale = 1.50
	// k0/variance = 1.00
	// k0/white = 0.01
	// model accepts the factory: true
	// model accepts the registered name in an expression: true
}

// kernelNamesForTest are the registered kernels, regexp-quoted.
func kernelNamesForTest() []string {
	var out []string
	for _, n := range kernels.Names() {
		out = append(out, regexp.QuoteMeta(n))
	}
	return out
}
