package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gpc-dev/gpc/layers"
)

// Default is the kernel a model gets when none is named.
const Default = "se"

// DefaultJitter is the jitter on K_ZZ and k(x,x) of a kernel that does
// not choose its own (JitterDefaulter): the original code's 1e-3 for
// stationary kernels.
const DefaultJitter = 1e-3

// SampleRows is the number of rows, drawn with replacement, that Data
// summarises (the original code's 1000).
const SampleRows = 1000

// Data is what a kernel's default initialisation sees of the training
// inputs: SampleRows row indices drawn once, and summaries of those rows
// computed on first use and shared by every part of a composite kernel, so
// that the random stream a model draws its inducing inputs from afterwards
// does not depend on which kernel it has.
type Data struct {
	// X holds N rows of D inputs, row-major.
	X    []float64
	N, D int

	idx      []int
	mu       sync.Mutex
	med, msn float64
}

// NewData draws the sample's SampleRows indices with rng (SampleRows calls
// of rng.IntN(n), whatever is later asked of it).
func NewData(x []float64, n, d int, rng *rand.Rand) *Data {
	dt := &Data{X: x, N: n, D: d}
	if n < 1 {
		return dt
	}
	dt.idx = make([]int, SampleRows)
	for i := range dt.idx {
		dt.idx[i] = rng.IntN(n)
	}
	return dt
}

func (dt *Data) row(i int) []float64 { return dt.X[i*dt.D : (i+1)*dt.D] }

// Sample returns the indices of the sampled rows (SampleRows of them, or
// none without rows), for a kernel that summarises them otherwise.
func (dt *Data) Sample() []int { return slices.Clone(dt.idx) }

// MedianDistance is √(median squared distance) between the pairs of sampled
// rows, or 1 when that is not positive: the stationary kernels' initial ℓ
// (ℓ divides squared distances, as in the original code).
func (dt *Data) MedianDistance() float64 {
	dt.mu.Lock()
	defer dt.mu.Unlock()
	if dt.med != 0 {
		return dt.med
	}
	dt.med = 1
	n := len(dt.idx)
	if n < 2 {
		return dt.med
	}
	d2 := make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		a := dt.row(dt.idx[i])
		for j := i + 1; j < n; j++ {
			b := dt.row(dt.idx[j])
			var s float64
			for t := range a {
				s += (a[t] - b[t]) * (a[t] - b[t])
			}
			d2 = append(d2, s)
		}
	}
	slices.Sort(d2)
	med := d2[len(d2)/2]
	if len(d2)%2 == 0 {
		med = 0.5 * (d2[len(d2)/2-1] + d2[len(d2)/2])
	}
	if med > 0 {
		dt.med = math.Sqrt(med)
	}
	return dt.med
}

// MeanSquaredNorm is the mean ‖x‖² of the sampled rows, or 1 when that is
// not positive: the polynomial kernel's initial ℓ in the original MNIST
// code.
func (dt *Data) MeanSquaredNorm() float64 {
	dt.mu.Lock()
	defer dt.mu.Unlock()
	if dt.msn != 0 {
		return dt.msn
	}
	dt.msn = 1
	if len(dt.idx) == 0 {
		return dt.msn
	}
	var s float64
	for _, i := range dt.idx {
		for _, v := range dt.row(i) {
			s += v * v
		}
	}
	if s > 0 {
		dt.msn = s / float64(len(dt.idx))
	}
	return dt.msn
}

// Config is what a registered kernel's Factory receives.
type Config struct {
	// Name prefixes the kernel's parameter names; it is unique in a model
	// (and within a composite, each part gets its own).
	Name string
	// D is the input width.
	D int
	// Args are the numbers given in the expression, as 9 in poly(9); nil
	// when none were.
	Args []float64
	// Degree is the degree of kernels that have one when the expression
	// gives none (zero: 9, the original MNIST code's).
	Degree int
	// Data summarises the training inputs for the default initialisation;
	// nil when the values do not matter (Load overwrites them, or only the
	// kernel's structure is wanted), in which case every hyper-parameter
	// starts at 1.
	Data *Data
}

// Factory builds a kernel from its configuration. It owns the kernel's
// default initialisation: from c.Data when given.
type Factory func(c Config) (Kernel, error)

// Init is the initial ℓ (dividing squared distances), σ² and σ₀² of a
// kernel of the ARD family.
type Init struct {
	Lengthscale, Variance, Noise float64
}

// InitReporter is implemented by kernels that report the initial values
// they were built with (the ARD family: SE, Matérn, polynomial), so that a
// user's factory can start where the kernel it replaces would
// (models.KernelInit).
type InitReporter interface {
	Initial() Init
}

// JitterDefaulter is implemented by kernels that need a jitter on K_ZZ and
// k(x,x) other than DefaultJitter (the polynomial kernel's 1e-10).
type JitterDefaulter interface {
	DefaultJitter() float64
}

// JitterOf is k's default jitter: its own, or DefaultJitter.
func JitterOf(k Kernel) float64 {
	if j, ok := k.(JitterDefaulter); ok {
		return j.DefaultJitter()
	}
	return DefaultJitter
}

var registry = layers.Registry[Factory]{Kind: "kernel"}

// Register adds a kernel under name, as expressions, the command line,
// specs and saved models name it; it fails if the name is taken or is not
// a name an expression can hold (a letter, then letters, digits, '_', '-'
// or '.').
func Register(name string, f Factory) error {
	if !validName(name) {
		return fmt.Errorf("kernels: %q is not a kernel name (want a letter, then letters, digits, _, - or .)", name)
	}
	if f == nil {
		return fmt.Errorf("kernels: nil factory for %q", name)
	}
	if err := registry.Register(name, f); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	return nil
}

// Names lists the registered kernels, sorted.
func Names() []string { return registry.Names() }

// New returns the kernel registered under name (a single name; Build takes
// expressions).
func New(name string, c Config) (Kernel, error) {
	f, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	return f(c)
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(r >= '0' && r <= '9') && r != '_' && r != '-' && r != '.' {
			return false
		}
	}
	return true
}

// stationary returns the data-driven initial ℓ, σ² and σ₀² of the
// stationary kernels (and of the linear one's ℓ): ℓ the median pairwise
// distance, σ² = e, σ₀² = e⁻²⁰, as in the noisy-input paper's code.
func stationary(c Config) (ell, variance, noise float64) {
	if c.Data == nil {
		return 1, 1, 1
	}
	return c.Data.MedianDistance(), math.E, math.Exp(-20)
}

// noArgs refuses arguments for a kernel that takes none.
func noArgs(name string, c Config) error {
	if len(c.Args) > 0 {
		return fmt.Errorf("kernels: %s takes no arguments, got %d", name, len(c.Args))
	}
	return nil
}

func init() {
	matern := func(name string, nu float64, iso bool) Factory {
		return func(c Config) (Kernel, error) {
			if err := noArgs(name, c); err != nil {
				return nil, err
			}
			ell, v, n := stationary(c)
			if iso {
				return NewMaternIso(c.Name, nu, c.D, ell, v, n)
			}
			return NewMatern(c.Name, nu, c.D, ell, v, n)
		}
	}
	builtin := map[string]Factory{
		"se": func(c Config) (Kernel, error) {
			if err := noArgs("se", c); err != nil {
				return nil, err
			}
			ell, v, n := stationary(c)
			return NewSE(c.Name, c.D, ell, v, n), nil
		},
		"se-iso": func(c Config) (Kernel, error) {
			if err := noArgs("se-iso", c); err != nil {
				return nil, err
			}
			ell, v, n := stationary(c)
			return NewSEIso(c.Name, c.D, ell, v, n), nil
		},
		"matern32":     matern("matern32", 1.5, false),
		"matern32-iso": matern("matern32-iso", 1.5, true),
		"matern52":     matern("matern52", 2.5, false),
		"matern52-iso": matern("matern52-iso", 2.5, true),
		"linear": func(c Config) (Kernel, error) {
			if err := noArgs("linear", c); err != nil {
				return nil, err
			}
			ell, _, _ := stationary(c)
			return NewLinear(c.Name, c.D, ell), nil
		},
		"poly": newPolyFromConfig,
	}
	for name, f := range builtin {
		if err := Register(name, f); err != nil {
			panic(err)
		}
	}
}

// newPolyFromConfig is the registered polynomial kernel: poly(p) or the
// configured degree; ℓ the mean squared norm of the sampled rows, σ² =
// 1/512 and σ₀² = 1 (the original MNIST code's), jitter 1e-10.
func newPolyFromConfig(c Config) (Kernel, error) {
	deg := c.Degree
	if deg == 0 {
		deg = 9
	}
	switch len(c.Args) {
	case 0:
	case 1:
		a := c.Args[0]
		if a != math.Trunc(a) || a < 1 || a > 1000 {
			return nil, fmt.Errorf("kernels: poly(%g): the degree must be an integer from 1 to 1000", a)
		}
		deg = int(a)
	default:
		return nil, fmt.Errorf("kernels: poly takes one argument (the degree), got %d", len(c.Args))
	}
	if deg < 1 {
		return nil, fmt.Errorf("kernels: polynomial degree %d", deg)
	}
	if c.Data == nil {
		return NewPolynomial(c.Name, deg, c.D, 1, 1, 1), nil
	}
	return NewPolynomial(c.Name, deg, c.D, c.Data.MeanSquaredNorm(), 1.0/512, 1), nil
}

// DefaultJitter implements JitterDefaulter: the original MNIST code's 1e-10.
func (k *Polynomial) DefaultJitter() float64 { return 1e-10 }

// DefaultJitter implements JitterDefaulter: the largest of the parts'.
func (ks Sum) DefaultJitter() float64 { return maxJitter(ks) }

// DefaultJitter implements JitterDefaulter: the largest of the factors'.
func (ks Product) DefaultJitter() float64 { return maxJitter(ks) }

func maxJitter(ks []Kernel) float64 {
	j := 0.0
	for _, k := range ks {
		j = max(j, JitterOf(k))
	}
	if j == 0 {
		return DefaultJitter
	}
	return j
}

// Describe lists the registered kernels and the expression syntax, for
// help texts.
func Describe() string {
	names := Names()
	sort.Strings(names)
	return strings.Join(names, ", ") + "; or sums and products of them, e.g. 'matern52+linear', 'se*linear', '(se+linear)*poly(3)'"
}

// DegreeReader is implemented by kernels that read Config.Degree when an
// expression gives them none (the polynomial), so that a caller can tell
// whether a degree setting would be ignored.
type DegreeReader interface {
	ReadsDegree() bool
}

// ReadsDegree implements DegreeReader.
func (*Polynomial) ReadsDegree() bool { return true }

// ReadsDegree reports whether any kernel of the expression reads
// Config.Degree; false for an expression that does not build.
func ReadsDegree(expr string) bool {
	k, err := Build(expr, Config{Name: "probe", D: 1})
	if err != nil {
		return false
	}
	var walk func(Kernel) bool
	walk = func(k Kernel) bool {
		switch k := k.(type) {
		case *Composite:
			return walk(k.Kernel)
		case Sum:
			for _, p := range k {
				if walk(p) {
					return true
				}
			}
		case Product:
			for _, p := range k {
				if walk(p) {
					return true
				}
			}
		case DegreeReader:
			return k.ReadsDegree()
		}
		return false
	}
	return walk(k)
}
