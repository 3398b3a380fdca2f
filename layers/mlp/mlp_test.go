package mlp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
)

// refForward is a plain-Go forward pass over the row-major n×In input x. It
// also returns every hidden pre-activation, so tests can keep away from ReLU
// kinks, where finite differences are meaningless.
func refForward(m *MLP, x []float64, n int) (out []float64, pre []float64) {
	h, width := x, m.In
	for l, layer := range m.Layers {
		outW := layer.B.Shape[0]
		z := make([]float64, n*outW)
		for i := 0; i < n; i++ {
			for j := 0; j < outW; j++ {
				s := layer.B.Data[j]
				for k := 0; k < width; k++ {
					s += h[i*width+k] * layer.W.Data[k*outW+j]
				}
				z[i*outW+j] = s
			}
		}
		if l+1 < len(m.Layers) {
			pre = append(pre, z...)
			for k := range z {
				z[k] = math.Max(0, z[k])
			}
		}
		h, width = z, outW
	}
	return h, pre
}

// concatRows returns the row-wise concatenation [a b] of n×da and n×db.
func concatRows(a []float64, da int, b []float64, db int, n int) []float64 {
	out := make([]float64, 0, n*(da+db))
	for i := 0; i < n; i++ {
		out = append(out, a[i*da:(i+1)*da]...)
		out = append(out, b[i*db:(i+1)*db]...)
	}
	return out
}

func must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(err)
	}
	return n
}

// dataParam returns an n×c parameter holding data, bound into s, so that
// gradient checks can treat inputs like weights.
func dataParam(t *testing.T, s *layers.Scope, name string, n, c int, data []float64) (*layers.Param, *G.Node) {
	t.Helper()
	p := layers.NewParam(name, tensor.Shape{n, c}, 0, layers.Identity)
	copy(p.Data, data)
	node, err := s.Raw(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, node
}

// constNode is a non-trainable input node holding data.
func constNode(g *G.ExprGraph, name string, shape tensor.Shape, data []float64) *G.Node {
	return G.NewTensor(g, G.Float64, shape.Dims(), G.WithShape(shape...), G.WithName(name),
		G.WithValue(graph.NewValue(shape, data)))
}

// mixedWeights returns fixed, distinct, mixed-sign values; they break the
// symmetries that could hide a transposed or permuted gradient.
func mixedWeights(n int) []float64 {
	w := make([]float64, n)
	for k := range w {
		w[k] = 0.6 + 0.37*float64(k%5) - 0.21*float64(k%3)
		if k%4 == 3 {
			w[k] = -w[k]
		}
	}
	return w
}

// tanhCost returns Σ W ⊙ tanh(0.3·y) for fixed weights W; nonlinear in y so
// that the Hessian is non-trivial even though the network's output layer is
// linear.
func tanhCost(y *G.Node, name string) *G.Node {
	s := y.Shape()
	w := constNode(y.Graph(), "costW/"+name, s, mixedWeights(s.TotalSize()))
	z := must(G.Tanh(must(G.HadamardProd(y, G.NewConstant(0.3, G.WithName("k0.3"))))))
	return must(G.Sum(must(G.HadamardProd(z, w))))
}

func randn(rng *rand.Rand, n int, std float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = std * rng.NormFloat64()
	}
	return v
}

// randomise overwrites every parameter with N(0, std²) draws; the tiny
// initial weights would make the network nearly linear and hide mistakes.
func randomise(rng *rand.Rand, ps []*layers.Param, std float64) {
	for _, p := range ps {
		copy(p.Data, randn(rng, len(p.Data), std))
	}
}

// kinkFree reports whether every pre-activation keeps distance margin from
// the ReLU kink and each hidden unit set has both active and inactive units
// (so the ReLU mask actually matters to the check).
func kinkFree(pre []float64, margin float64) bool {
	pos, neg := false, false
	for _, z := range pre {
		if math.Abs(z) < margin {
			return false
		}
		pos, neg = pos || z > 0, neg || z < 0
	}
	return pos && neg
}

func run(t *testing.T, g *G.ExprGraph, outs ...*G.Node) *graph.Program {
	t.Helper()
	p, err := graph.Compile(g, outs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	return p
}

func closeTo(got, want []float64, tol float64) (int, bool) {
	if len(got) != len(want) {
		return -1, false
	}
	for k := range got {
		if !(math.Abs(got[k]-want[k]) <= tol*math.Max(1, math.Abs(want[k]))) {
			return k, false
		}
	}
	return 0, true
}

func TestForwardMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, in, out = 7, 4, 3
	m, err := New("net", Config{In: in, Out: out, Hidden: []int{6, 5}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	randomise(rng, m.Params(), 0.7)
	xd := randn(rng, n*in, 1)
	want, pre := refForward(m, xd, n)
	if !kinkFree(pre, 0) {
		t.Fatal("reference net has no active or no inactive hidden unit; the test would not exercise ReLU")
	}

	g := G.NewGraph()
	s := layers.NewScope(g)
	_, x := dataParam(t, s, "x", n, in, xd)
	y, err := m.Apply(s, x)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape{n, out}) {
		t.Fatalf("output shape %v, want (%d, %d)", y.Shape(), n, out)
	}
	p := run(t, g, y)
	got, _ := p.Float64s(y)
	if k, ok := closeTo(got, want, 1e-12); !ok {
		t.Fatalf("output[%d] = %v, reference %v", k, got[k], want[k])
	}
	// A second run must give the same values: parameters share storage with
	// the graph and must not be overwritten by in-place ops.
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	again, _ := p.Float64s(y)
	if k, ok := closeTo(again, want, 1e-12); !ok {
		t.Fatalf("second run: output[%d] = %v, reference %v", k, again[k], want[k])
	}
}

func TestNoHiddenLayerIsAffine(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	m, err := New("lin", Config{In: 3, Out: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(m.Layers))
	}
	randomise(rng, m.Params(), 1)
	xd := randn(rng, 4*3, 1)
	want, _ := refForward(m, xd, 4)
	g := G.NewGraph()
	s := layers.NewScope(g)
	_, x := dataParam(t, s, "x", 4, 3, xd)
	y := must(m.Apply(s, x))
	got, _ := run(t, g, y).Float64s(y)
	if k, ok := closeTo(got, want, 1e-12); !ok {
		t.Fatalf("output[%d] = %v, reference %v", k, got[k], want[k])
	}
}

// checkBoth runs the first- and second-order finite-difference checks on a
// freshly built graph each time (a check adds gradient nodes to its graph).
func checkBoth(t *testing.T, build func(t *testing.T) (*G.Node, G.Nodes)) {
	t.Helper()
	for order := 1; order <= 2; order++ {
		cost, params := build(t)
		check := graph.CheckGrad
		if order == 2 {
			check = graph.CheckGrad2
		}
		rep, err := check(cost, params, graph.CheckOptions{Seed: 9})
		if err != nil {
			t.Fatalf("order %d: %v", order, err)
		}
		if len(rep.Params) != len(params) {
			t.Fatalf("order %d: %d parameters checked, want %d", order, len(rep.Params), len(params))
		}
		if !(rep.MaxRelErr <= 1e-6) {
			t.Errorf("order %d: worst %s", order, rep.Worst())
		}
		t.Logf("order %d: max relative error %.2e over %d parameters", order, rep.MaxRelErr, len(params))
	}
}

// drawKinkFree redraws parameters and inputs until no hidden pre-activation
// is near zero. The margin exceeds the finite-difference steps' effect on a
// pre-activation (step 1e-3·max(1,|θ|) times an input of order 1).
func drawKinkFree(t *testing.T, rng *rand.Rand, draw func() []float64) {
	t.Helper()
	for try := 0; try < 10000; try++ {
		if kinkFree(draw(), 0.02) {
			return
		}
	}
	t.Fatal("could not draw parameters away from the ReLU kinks")
}

func TestGradients(t *testing.T) {
	const n, in, out = 5, 4, 3
	m, err := New("net", Config{In: in, Out: out, Hidden: []int{6, 5}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var xd []float64
	drawKinkFree(t, rng, func() []float64 {
		randomise(rng, m.Params(), 0.6)
		xd = randn(rng, n*in, 1)
		_, pre := refForward(m, xd, n)
		return pre
	})
	checkBoth(t, func(t *testing.T) (*G.Node, G.Nodes) {
		g := G.NewGraph()
		s := layers.NewScope(g)
		_, x := dataParam(t, s, "x", n, in, xd)
		y := must(m.Apply(s, x))
		_, params := s.Trainable()
		if len(params) != 1+len(m.Params()) {
			t.Fatalf("%d trainable nodes, want x and %d parameters", len(params), len(m.Params()))
		}
		return tanhCost(y, "y"), params
	})
}

func TestEncoderGradients(t *testing.T) {
	const n, d, c = 5, 3, 2
	for _, residual := range []bool{false, true} {
		t.Run(fmt.Sprintf("residual=%v", residual), func(t *testing.T) {
			e, err := NewEncoder("enc", EncoderConfig{D: d, C: c, Hidden: []int{4}, Residual: residual, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(21, 22))
			yd := make([]float64, n*c)
			for i := 0; i < n; i++ {
				yd[i*c+i%c] = 1
			}
			var xd []float64
			drawKinkFree(t, rng, func() []float64 {
				randomise(rng, e.Params(), 0.6)
				xd = randn(rng, n*d, 1)
				in := concatRows(xd, d, yd, c, n)
				_, p1 := refForward(e.Mean, in, n)
				_, p2 := refForward(e.LogVar, in, n)
				return append(p1, p2...)
			})
			checkBoth(t, func(t *testing.T) (*G.Node, G.Nodes) {
				g := G.NewGraph()
				s := layers.NewScope(g)
				_, x := dataParam(t, s, "xtilde", n, d, xd)
				y := constNode(g, "onehot", tensor.Shape{n, c}, yd)
				mean, logVar, err := e.Apply(s, x, y)
				if err != nil {
					t.Fatal(err)
				}
				cost := must(G.Add(tanhCost(mean, "mean"), tanhCost(logVar, "logvar")))
				_, params := s.Trainable()
				return cost, params
			})
		})
	}
}

func TestEncoderForwardMatchesConcatenation(t *testing.T) {
	const n, d, c = 6, 3, 4
	rng := rand.New(rand.NewPCG(31, 32))
	for _, residual := range []bool{false, true} {
		e, err := NewEncoder("enc", EncoderConfig{D: d, C: c, Hidden: []int{5, 4}, Residual: residual, Seed: 8})
		if err != nil {
			t.Fatal(err)
		}
		randomise(rng, e.Params(), 0.8)
		xd := randn(rng, n*d, 1)
		yd := make([]float64, n*c)
		for i := 0; i < n; i++ {
			yd[i*c+(3*i+1)%c] = 1
		}
		in := concatRows(xd, d, yd, c, n)
		wantMean, _ := refForward(e.Mean, in, n)
		wantLV, _ := refForward(e.LogVar, in, n)
		if residual {
			for k := range wantMean {
				wantMean[k] += xd[k]
			}
		}
		g := G.NewGraph()
		s := layers.NewScope(g)
		_, x := dataParam(t, s, "xtilde", n, d, xd)
		y := constNode(g, "onehot", tensor.Shape{n, c}, yd)
		mean, logVar, err := e.Apply(s, x, y)
		if err != nil {
			t.Fatal(err)
		}
		p := run(t, g, mean, logVar)
		gm, _ := p.Float64s(mean)
		gl, _ := p.Float64s(logVar)
		if k, ok := closeTo(gm, wantMean, 1e-12); !ok {
			t.Errorf("residual=%v: mean[%d] = %v, reference %v", residual, k, gm[k], wantMean[k])
		}
		if k, ok := closeTo(gl, wantLV, 1e-12); !ok {
			t.Errorf("residual=%v: logVar[%d] = %v, reference %v", residual, k, gl[k], wantLV[k])
		}
	}
}

// truncStd is the standard deviation of a standard normal truncated to [−2, 2].
func truncStd() float64 {
	phi := math.Exp(-2) / math.Sqrt(2*math.Pi)
	z := math.Erf(2 / math.Sqrt2)
	return math.Sqrt(1 - 2*2*phi/z)
}

func TestInitDistribution(t *testing.T) {
	if r := truncStd(); math.Abs(r-0.88) > 0.005 {
		t.Fatalf("truncated std ratio %v, want ≈0.88", r)
	}
	for _, std := range []float64{0, 0.1} {
		m, err := New("big", Config{In: 100, Out: 50, Hidden: []int{200}, InitStd: std, OutputBias: 3, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		want := std
		if want == 0 {
			want = DefaultInitStd
		}
		var vals []float64
		for l, layer := range m.Layers {
			vals = append(vals, layer.W.Data...)
			off := 0.0
			if l == len(m.Layers)-1 {
				off = 3
			}
			for _, b := range layer.B.Data {
				vals = append(vals, b-off)
			}
		}
		var sum, sq, maxAbs float64
		for _, v := range vals {
			sum += v
			sq += v * v
			maxAbs = math.Max(maxAbs, math.Abs(v))
		}
		mean := sum / float64(len(vals))
		sd := math.Sqrt(sq/float64(len(vals)) - mean*mean)
		if maxAbs > 2*want {
			t.Errorf("std %v: |value| up to %v, beyond the truncation at %v", want, maxAbs, 2*want)
		}
		if r := sd / (want * truncStd()); math.Abs(r-1) > 0.1 {
			t.Errorf("std %v: sample std %v is %.3f× the truncated normal's %v", want, sd, r, want*truncStd())
		}
		if math.Abs(mean) > 0.05*want {
			t.Errorf("std %v: sample mean %v, want ≈0", want, mean)
		}
		if maxAbs < 1.9*want {
			t.Errorf("std %v: |value| at most %v; the distribution looks narrower than a normal truncated at 2 std", want, maxAbs)
		}
	}
}

func TestInitDeterministic(t *testing.T) {
	cfg := Config{In: 3, Out: 2, Hidden: []int{4}, Seed: 7}
	a, _ := New("a", cfg)
	b, _ := New("b", cfg)
	cfg.Seed = 8
	c, _ := New("c", cfg)
	same, differ := true, false
	for i, p := range a.Params() {
		for k := range p.Data {
			same = same && p.Data[k] == b.Params()[i].Data[k]
			differ = differ || p.Data[k] != c.Params()[i].Data[k]
		}
	}
	if !same {
		t.Error("equal seeds gave different weights")
	}
	if !differ {
		t.Error("different seeds gave identical weights")
	}
	e, _ := NewEncoder("e", EncoderConfig{D: 3, C: 2, Hidden: []int{4}, Seed: 7})
	if e.Mean.Layers[0].W.Data[0] == e.LogVar.Layers[0].W.Data[0] {
		t.Error("the encoder's two networks share their initial weights")
	}
}

// encoderInit runs a fresh encoder on standardised inputs.
func encoderInit(t *testing.T, cfg EncoderConfig, n int) (xd, mean, logVar []float64) {
	t.Helper()
	e, err := NewEncoder("enc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(41, 42))
	xd = randn(rng, n*cfg.D, 1)
	yd := make([]float64, n*cfg.C)
	for i := 0; i < n; i++ {
		yd[i*cfg.C+rng.IntN(cfg.C)] = 1
	}
	g := G.NewGraph()
	s := layers.NewScope(g)
	_, x := dataParam(t, s, "xtilde", n, cfg.D, xd)
	y := constNode(g, "onehot", tensor.Shape{n, cfg.C}, yd)
	m, lv, err := e.Apply(s, x, y)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, g, m, lv)
	mean, _ = p.Float64s(m)
	logVar, _ = p.Float64s(lv)
	return xd, mean, logVar
}

func TestEncoderInit(t *testing.T) {
	for _, hidden := range [][]int{{50}, {250, 250}} {
		cfg := EncoderConfig{D: 10, C: 3, Hidden: hidden, Residual: true, Seed: 1}
		xd, mean, logVar := encoderInit(t, cfg, 40)
		for k := range mean {
			if math.Abs(mean[k]-xd[k]) >= 1e-2 {
				t.Fatalf("residual %v: mean[%d] = %v, x̃ = %v", hidden, k, mean[k], xd[k])
			}
			if math.Abs(logVar[k]+10) >= 0.05 {
				t.Fatalf("residual %v: logVar[%d] = %v, want ≈−10", hidden, k, logVar[k])
			}
		}

		cfg.Residual = false
		_, mean, logVar = encoderInit(t, cfg, 40)
		for k := range mean {
			if math.Abs(mean[k]) >= 1e-2 {
				t.Fatalf("plain %v: mean[%d] = %v, want ≈0", hidden, k, mean[k])
			}
			if math.Abs(logVar[k]) >= 0.05 {
				t.Fatalf("plain %v: logVar[%d] = %v, want ≈0", hidden, k, logVar[k])
			}
		}
	}
	// An explicit bias overrides the default.
	_, _, logVar := encoderInit(t, EncoderConfig{D: 2, C: 2, Hidden: []int{5}, Residual: true, LogVarBias: -4, Seed: 3}, 8)
	for k := range logVar {
		if math.Abs(logVar[k]+4) >= 0.05 {
			t.Fatalf("LogVarBias −4: logVar[%d] = %v", k, logVar[k])
		}
	}
}

func TestParamNames(t *testing.T) {
	cfg := Config{In: 3, Out: 2, Hidden: []int{4, 4}, Seed: 1}
	a, _ := New("a", cfg)
	b, _ := New("b", cfg)
	e, _ := NewEncoder("enc", EncoderConfig{D: 3, C: 2, Hidden: []int{4}})
	seen := map[string]bool{}
	all := append(append(a.Params(), b.Params()...), e.Params()...)
	if len(all) != 6+6+4+4 {
		t.Fatalf("%d parameters, want 20", len(all))
	}
	for _, p := range all {
		if seen[p.Name] {
			t.Errorf("parameter name %q used twice", p.Name)
		}
		seen[p.Name] = true
	}
	for _, want := range []string{"a/W0", "a/b0", "a/W2", "b/b2", "enc/mean/W0", "enc/logvar/b1"} {
		if !seen[want] {
			t.Errorf("no parameter named %q", want)
		}
	}
	if s := a.Layers[0].W.Shape; !s.Eq(tensor.Shape{3, 4}) {
		t.Errorf("W0 has shape %v, want (3, 4)", s)
	}

	// Both networks bind into one graph; a second network with a clashing
	// name is refused rather than silently merged with the first.
	g := G.NewGraph()
	s := layers.NewScope(g)
	x := constNode(g, "x", tensor.Shape{2, 3}, make([]float64, 6))
	if _, err := a.Apply(s, x); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Apply(s, x); err != nil {
		t.Fatal(err)
	}
	a2, _ := New("a", cfg)
	if _, err := a2.Apply(s, x); err == nil || !strings.Contains(err.Error(), "a/W0") {
		t.Errorf("two networks named a in one scope: err = %v", err)
	}
}

func TestInvalidConfigs(t *testing.T) {
	ok := Config{In: 3, Out: 2, Hidden: []int{4}}
	cases := []struct {
		name string
		cfg  func(c *Config)
		net  string
		want string
	}{
		{"In=0", func(c *Config) { c.In = 0 }, "n", "In = 0"},
		{"In<0", func(c *Config) { c.In = -2 }, "n", "In = -2"},
		{"Out=0", func(c *Config) { c.Out = 0 }, "n", "Out = 0"},
		{"negative hidden", func(c *Config) { c.Hidden = []int{4, -3} }, "n", "hidden layer 1 has width -3"},
		{"zero hidden", func(c *Config) { c.Hidden = []int{0} }, "n", "hidden layer 0 has width 0"},
		{"negative std", func(c *Config) { c.InitStd = -1 }, "n", "InitStd"},
		{"NaN std", func(c *Config) { c.InitStd = math.NaN() }, "n", "InitStd"},
		{"infinite bias", func(c *Config) { c.OutputBias = math.Inf(-1) }, "n", "OutputBias"},
		{"empty name", func(c *Config) {}, "", "empty network name"},
	}
	for _, tc := range cases {
		cfg := ok
		cfg.Hidden = append([]int(nil), ok.Hidden...)
		tc.cfg(&cfg)
		m, err := New(tc.net, cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, %v; want an error mentioning %q", tc.name, m, err, tc.want)
		}
	}
	if _, err := New("n", ok); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	for _, ec := range []EncoderConfig{{D: 0, C: 2}, {D: 2, C: 0}, {D: 2, C: 2, Hidden: []int{-1}}} {
		if _, err := NewEncoder("e", ec); err == nil {
			t.Errorf("NewEncoder(%+v) accepted an invalid config", ec)
		}
	}
}

func TestApplyShapeErrors(t *testing.T) {
	m, _ := New("n", Config{In: 3, Out: 2, Hidden: []int{4}})
	e, _ := NewEncoder("e", EncoderConfig{D: 3, C: 2, Hidden: []int{4}})
	g := G.NewGraph()
	s := layers.NewScope(g)
	x4 := constNode(g, "x4", tensor.Shape{5, 4}, make([]float64, 20))
	x3 := constNode(g, "x3", tensor.Shape{5, 3}, make([]float64, 15))
	y2 := constNode(g, "y2", tensor.Shape{5, 2}, make([]float64, 10))
	y6 := constNode(g, "y6", tensor.Shape{6, 2}, make([]float64, 12))
	if _, err := m.Apply(s, x4); err == nil || !strings.Contains(err.Error(), "expects 3") {
		t.Errorf("4-column input: err = %v", err)
	}
	if _, _, err := e.Apply(s, x4, y2); err == nil {
		t.Error("encoder accepted x̃ of the wrong width")
	}
	if _, _, err := e.Apply(s, x3, y6); err == nil {
		t.Error("encoder accepted labels with a different number of rows")
	}
	if _, _, err := e.Apply(s, x3, x3); err == nil {
		t.Error("encoder accepted labels of the wrong width")
	}
}
