package kernels_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// A kernel registered under a name can be named wherever a built-in one
// can: in expressions, on gpc's command line, in specs and in saved
// models, which Load rebuilds by name. Its factory owns its initialisation:
// here a linear kernel whose ℓ starts at the inputs' mean squared norm, so
// that k(x, x) is about 1 on the training data.
func ExampleRegister() {
	err := kernels.Register("scaled-linear", func(c kernels.Config) (kernels.Kernel, error) {
		ell := 1.0
		if c.Data != nil {
			ell = c.Data.MeanSquaredNorm() / float64(c.D)
		}
		return kernels.NewLinear(c.Name, c.D, ell), nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	x := []float64{1, 1, 3, 3} // two rows of two inputs
	data := kernels.NewData(x, 2, 2, rand.New(rand.NewPCG(1, 2)))
	k, err := kernels.Build("scaled-linear", kernels.Config{Name: "k0", D: 2, Data: data})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := k.Params()[0]
	fmt.Printf("%s = %.2f (mean squared norm %.2f over 2 inputs)\n", p.Name, p.Value(0), data.MeanSquaredNorm())
	fmt.Println("registered:", kernels.Names())
	// Output:
	// k0/lengthscales = 5.23 (mean squared norm 10.46 over 2 inputs)
	// registered: [linear matern32 matern32-iso matern52 matern52-iso poly scaled-linear se se-gamma se-iso]
}

// An expression combines registered kernels by + and *, with parentheses
// and arguments such as a polynomial's degree. Each part of a composite
// gets its own parameter-name prefix (its position and kernel name) and
// its own kernel's initialisation; the composite's default jitter is the
// largest of its parts'.
func ExampleParse() {
	e, err := kernels.Parse("(matern52 + linear) * poly(2)")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("canonical:", e, "parts:", e.Kernels())
	k, err := e.Build(kernels.Config{Name: "k0", D: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range k.Params() {
		fmt.Println(p.Name, p.Shape)
	}
	fmt.Println("jitter:", kernels.JitterOf(k))
	_, err = kernels.Parse("matern52 + + linear")
	fmt.Println(err)
	// Output:
	// canonical: (matern52+linear)*poly(2) parts: [matern52 linear poly]
	// k0/0:matern52/lengthscales (3)
	// k0/0:matern52/variance ()
	// k0/1:linear/lengthscales (3)
	// k0/2:poly/lengthscales (3)
	// k0/2:poly/variance ()
	// k0/white ()
	// jitter: 0.001
	// kernels: expression "matern52 + + linear", position 12: expected a kernel name or (, found "+"
}
