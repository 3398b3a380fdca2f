package graph

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph/internal/gemm"
)

// Gorgonia's elementwise ops and sums spend more on bookkeeping than on
// arithmetic at the sizes of a GP step: an add of two 50×3 matrices boxes
// its operands, builds option closures, borrows and returns shape slices
// and checks types, a dozen allocations for 150 additions, and unary ops
// and sums also allocate their output every run. They were half the
// allocations of a waveform-sized step. The flat executor therefore
// recognises the common ones when it schedules a graph, from the op's
// printed form and the argument shapes fixed at compile time, and runs
// them with the loops below into an output kept from run to run. Each loop
// does Gorgonia's floating-point operations in Gorgonia's order (for sums,
// the order of tensor's reductions), so results are bit-identical; the
// tests in fastops_test.go hold them to that.

// fastOpsOn lets the flat executor run recognised Gorgonia ops itself;
// GPC_FASTOPS=off runs every op through Gorgonia, to compare.
var fastOpsOn = os.Getenv("GPC_FASTOPS") != "off"

// A fastOp is a recognised Gorgonia op with its own output. do returns the
// op's value on args, or ok = false, having computed nothing, when an
// argument is not what the schedule expected (another type or shape, a
// view, a mask); the executor then runs Gorgonia's op.
type fastOp interface {
	do(args []G.Value) (v G.Value, ok bool)
}

// recognise returns the fast form of node n, whose arguments are kids, or
// nil when there is none.
func recognise(n *G.Node, kids G.Nodes) fastOp {
	if n.Dtype() != tensor.Float64 {
		return nil
	}
	for _, k := range kids {
		if k.Dtype() != tensor.Float64 {
			return nil
		}
	}
	op := n.Op()
	out := n.Shape()
	switch fmt.Sprintf("%T", op) {
	case "gorgonia.elemBinOp":
		return recogniseBinary(op, out, kids)
	case "gorgonia.elemUnaryOp":
		return recogniseUnary(op, out, kids)
	case "gorgonia.sumOp":
		return recogniseSum(op, out, kids)
	case "gorgonia.transposeOp":
		return recogniseTranspose(op, out, kids)
	}
	return nil
}

// field is an unexported field of a Gorgonia op (read-only).
func field(op G.Op, name string) reflect.Value {
	return reflect.ValueOf(op).FieldByName(name)
}

// isScalarType reports whether an elemBinOp argument type (arg0, arg1) is
// a scalar's dtype rather than a tensor type.
func isScalarType(t reflect.Value) bool {
	if !t.IsValid() || t.Kind() != reflect.Interface || t.IsNil() {
		return false
	}
	return t.Elem().Type() == reflect.TypeOf(tensor.Float64)
}

// ---- outputs and arguments --------------------------------------------------

// fastOut is a fast op's output: a scalar, or a tensor of a fixed shape
// allocated on first use.
type fastOut struct {
	shape tensor.Shape
	t     *tensor.Dense
	data  []float64
	s     *G.F64
}

// tensor returns the output's data for writing. The tensor is replaced if
// a consumer has changed its shape or made it a view in place.
func (o *fastOut) tensor() []float64 {
	if o.t == nil || o.t.IsMaterializable() || !sameShape(o.t.Shape(), o.shape) {
		o.data = make([]float64, o.shape.TotalSize())
		o.t = tensor.New(tensor.WithShape(o.shape...), tensor.WithBacking(o.data))
	}
	return o.data
}

func (o *fastOut) scalar(v float64) G.Value {
	if o.s == nil {
		o.s = new(G.F64)
	}
	*o.s = G.F64(v)
	return o.s
}

// denseArg returns the data of a float64 tensor of exactly shape s and n
// elements, stored plainly (not a view or masked).
func denseArg(v G.Value, s tensor.Shape, n int) ([]float64, bool) {
	d, ok := v.(*tensor.Dense)
	if !ok || d == nil || d.Dtype() != tensor.Float64 || d.IsMaterializable() || d.IsMasked() || !sameShape(d.Shape(), s) {
		return nil, false
	}
	x := d.Float64s()
	return x, len(x) == n
}

func scalarArg(v G.Value) (float64, bool) {
	x, ok := v.(*G.F64)
	if !ok || x == nil {
		return 0, false
	}
	return float64(*x), true
}

// ---- elementwise binary ops -------------------------------------------------

type binKind uint8

const (
	binAdd binKind = iota
	binSub
	binMul
	binDiv
	// Comparisons returning 1 or 0 in the arguments' type (retSame).
	binLt
	binGt
	binLte
	binGte
	binEq
	binNe
)

var binKinds = map[string]binKind{
	"+": binAdd, "-": binSub, "⊙": binMul, "÷": binDiv,
	"<": binLt, ">": binGt, "<=": binLte, ">=": binGte, "==": binEq, "!=": binNe,
}

// binForm says which arguments are tensors: both (of one shape), the left
// one (the right a scalar), the right one, or neither.
type binForm uint8

const (
	formVV binForm = iota
	formVS
	formSV
	formSS
)

type fastBinary struct {
	kind  binKind
	form  binForm
	shape tensor.Shape // of the tensor arguments and the output
	n     int
	// zeroInf: a division gives +Inf wherever the divisor is zero (see
	// divMode).
	zeroInf bool
	out     fastOut
}

// recogniseBinary accepts elemBinOp's arithmetic ops, and its comparisons
// returning numbers: elementwise on tensors of one shape, or between a
// tensor and a scalar, or two scalars. Pow and comparisons returning
// booleans are left to Gorgonia.
func recogniseBinary(op G.Op, out tensor.Shape, kids G.Nodes) fastOp {
	s := op.(fmt.Stringer).String() // "+ false": the operator and retSame
	sym, same, ok := strings.Cut(s, " ")
	kind, known := binKinds[sym]
	if !ok || !known || len(kids) != 2 || (kind >= binLt && same != "true") || (kind < binLt && same != "false") {
		return nil
	}
	sa, sb := isScalarType(field(op, "arg0")), isScalarType(field(op, "arg1"))
	a, b := kids[0].Shape(), kids[1].Shape()
	if sa != a.IsScalar() || sb != b.IsScalar() {
		return nil
	}
	f := &fastBinary{kind: kind}
	switch {
	case sa && sb:
		f.form = formSS
	case sb:
		f.form, f.shape = formVS, a
	case sa:
		f.form, f.shape = formSV, b
	default:
		if !sameShape(a, b) {
			return nil
		}
		f.form, f.shape = formVV, a
	}
	if f.form != formSS && !sameShape(out, f.shape) || f.form == formSS && !out.IsScalar() {
		return nil
	}
	f.n = f.shape.TotalSize()
	if kind == binDiv && (f.form == formVS || f.form == formSV) && f.n == 1 {
		// Into a preallocated output (the executor's form from the second
		// run on, and this one's) tensor divides element by element,
		// except a one-element tensor and a scalar, which it divides as
		// slices through vecf64.Div. (Without one, Gorgonia's Do divides
		// two tensors, or a tensor filled with the scalar on the left by a
		// tensor, through vecf64.Div.)
		if vvDiv == divUnknown {
			return nil
		}
		f.zeroInf = vvDiv == divZeroInf
	}
	f.out.shape = f.shape
	return f
}

// divMode is how vecf64.Div, which tensor calls to divide one slice by
// another of one length, treats a zero divisor: its portable form gives
// +Inf whatever the dividend (not −Inf or NaN); its assembly, with the sse
// or avx build tag, divides.
type divMode uint8

const (
	divUnknown divMode = iota
	divIEEE
	divZeroInf
)

var vvDiv = probeDiv()

// probeDiv asks tensor to divide two tensors without a preallocated
// output, which it does through vecf64.Div.
func probeDiv() divMode {
	a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{-1, 0, 6}))
	b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0, 0, 3}))
	r, err := tensor.Div(a, b)
	if err != nil {
		return divUnknown
	}
	d, ok := r.Data().([]float64)
	switch {
	case !ok || len(d) != 3 || d[2] != 2:
		return divUnknown
	case math.IsInf(d[0], 1) && math.IsInf(d[1], 1):
		return divZeroInf
	case math.IsInf(d[0], -1) && math.IsNaN(d[1]):
		return divIEEE
	}
	return divUnknown
}

func (f *fastBinary) do(args []G.Value) (G.Value, bool) {
	switch f.form {
	case formSS:
		a, ok := scalarArg(args[0])
		b, ok2 := scalarArg(args[1])
		if !ok || !ok2 {
			return nil, false
		}
		var r [1]float64
		binVS(f.kind, []float64{a}, b, r[:])
		return f.out.scalar(r[0]), true
	case formVS:
		a, ok := denseArg(args[0], f.shape, f.n)
		b, ok2 := scalarArg(args[1])
		if !ok || !ok2 {
			return nil, false
		}
		out := f.out.tensor()
		if f.zeroInf {
			divSlices(a, []float64{b}, out)
			break
		}
		binVS(f.kind, a, b, out)
	case formSV:
		a, ok := scalarArg(args[0])
		b, ok2 := denseArg(args[1], f.shape, f.n)
		if !ok || !ok2 {
			return nil, false
		}
		out := f.out.tensor()
		if f.zeroInf {
			divSlices([]float64{a}, b, out)
			break
		}
		binSV(f.kind, a, b, out)
	default:
		a, ok := denseArg(args[0], f.shape, f.n)
		b, ok2 := denseArg(args[1], f.shape, f.n)
		if !ok || !ok2 {
			return nil, false
		}
		binVV(f.kind, a, b, f.out.tensor())
	}
	return f.out.t, true
}

// divSlices is vecf64's portable Div into out: a[i]/b[i], but +Inf
// wherever b[i] is zero (a and b of one length).
func divSlices(a, b, out []float64) {
	b, out = b[:len(a)], out[:len(a)]
	for i, v := range a {
		if b[i] == 0 {
			out[i] = math.Inf(1)
			continue
		}
		out[i] = v / b[i]
	}
}

// one is a comparison's result as a number.
func one(c bool) float64 {
	if c {
		return 1
	}
	return 0
}

// cmpResult is a comparison op's result on x, y as a number.
func cmpResult(k binKind, x, y float64) float64 {
	switch k {
	case binLt:
		return one(x < y)
	case binGt:
		return one(x > y)
	case binLte:
		return one(x <= y)
	case binGte:
		return one(x >= y)
	case binEq:
		return one(x == y)
	}
	return one(x != y)
}

// binVV sets out[i] = a[i] op b[i].
func binVV(k binKind, a, b, out []float64) {
	b, out = b[:len(a)], out[:len(a)]
	switch k {
	case binAdd:
		for i, v := range a {
			out[i] = v + b[i]
		}
	case binSub:
		for i, v := range a {
			out[i] = v - b[i]
		}
	case binMul:
		gemm.Mul(out, a, b)
	case binDiv:
		for i, v := range a {
			out[i] = v / b[i]
		}
	default:
		cmpVV(k, a, b, out)
	}
}

// cmpVV sets out[i] = 1 where a[i] op b[i] holds, else 0, one loop per
// comparison: a call of cmpResult per element was 1.4% of a Tables 2/3 fit.
func cmpVV(k binKind, a, b, out []float64) {
	switch k {
	case binLt:
		for i, v := range a {
			out[i] = one(v < b[i])
		}
	case binGt:
		for i, v := range a {
			out[i] = one(v > b[i])
		}
	case binLte:
		for i, v := range a {
			out[i] = one(v <= b[i])
		}
	case binGte:
		for i, v := range a {
			out[i] = one(v >= b[i])
		}
	default:
		for i, v := range a {
			out[i] = cmpResult(k, v, b[i])
		}
	}
}

// cmpVS is cmpVV with b the same number for every element (and binSV's
// comparisons, mirrored).
func cmpVS(k binKind, a []float64, b float64, out []float64) {
	switch k {
	case binLt:
		for i, v := range a {
			out[i] = one(v < b)
		}
	case binGt:
		for i, v := range a {
			out[i] = one(v > b)
		}
	case binLte:
		for i, v := range a {
			out[i] = one(v <= b)
		}
	case binGte:
		for i, v := range a {
			out[i] = one(v >= b)
		}
	default:
		for i, v := range a {
			out[i] = cmpResult(k, v, b)
		}
	}
}

// binVS sets out[i] = a[i] op b.
func binVS(k binKind, a []float64, b float64, out []float64) {
	out = out[:len(a)]
	switch k {
	case binAdd:
		for i, v := range a {
			out[i] = v + b
		}
	case binSub:
		for i, v := range a {
			out[i] = v - b
		}
	case binMul:
		for i, v := range a {
			out[i] = v * b
		}
	case binDiv:
		for i, v := range a {
			out[i] = v / b
		}
	default:
		cmpVS(k, a, b, out)
	}
}

// binSV sets out[i] = a op b[i].
func binSV(k binKind, a float64, b, out []float64) {
	out = out[:len(b)]
	switch k {
	case binAdd:
		for i, v := range b {
			out[i] = a + v
		}
	case binSub:
		for i, v := range b {
			out[i] = a - v
		}
	case binMul:
		for i, v := range b {
			out[i] = a * v
		}
	case binDiv:
		for i, v := range b {
			out[i] = a / v
		}
	default: // a < v is v > a, and so on
		cmpVS(mirror(k), b, a, out)
	}
}

// mirror is the comparison with its operands swapped.
func mirror(k binKind) binKind {
	switch k {
	case binLt:
		return binGt
	case binGt:
		return binLt
	case binLte:
		return binGte
	case binGte:
		return binLte
	}
	return k // == and != are symmetric
}

// ---- elementwise unary ops --------------------------------------------------

type unaryKind uint8

const (
	unExp unaryKind = iota
	unLn
	unNeg
	unSquare
	unSqrt
	unInv
	unInvSqrt
	unCube
	unTanh
	unAbs
)

// unaryKinds are the unary ops whose tensor form (tensor's engine) and
// scalar form (Gorgonia's sf64UnaryOperator) compute the same expression,
// the one in unaryRange. Ops the engine lacks go through Apply with the
// scalar function and are left to Gorgonia.
var unaryKinds = map[string]unaryKind{
	"exp": unExp, "ln": unLn, "neg": unNeg, "square": unSquare, "sqrt": unSqrt,
	"inv": unInv, "invSqrt": unInvSqrt, "cube": unCube, "tanh": unTanh, "abs": unAbs,
}

type fastUnary struct {
	kind   unaryKind
	scalar bool
	shape  tensor.Shape
	n      int
	out    fastOut
}

func recogniseUnary(op G.Op, out tensor.Shape, kids G.Nodes) fastOp {
	kind, ok := unaryKinds[op.(fmt.Stringer).String()]
	if !ok || len(kids) != 1 {
		return nil
	}
	in := kids[0].Shape()
	argTensor := field(op, "argTensor")
	if !argTensor.IsValid() || argTensor.Kind() != reflect.Bool || argTensor.Bool() == in.IsScalar() || !sameShape(in, out) {
		return nil
	}
	f := &fastUnary{kind: kind, scalar: in.IsScalar(), shape: in, n: in.TotalSize()}
	f.out.shape = in
	return f
}

func (f *fastUnary) do(args []G.Value) (G.Value, bool) {
	if f.scalar {
		x, ok := scalarArg(args[0])
		if !ok {
			return nil, false
		}
		var r [1]float64
		unaryRange(f.kind, []float64{x}, r[:])
		return f.out.scalar(r[0]), true
	}
	x, ok := denseArg(args[0], f.shape, f.n)
	if !ok {
		return nil, false
	}
	unaryRange(f.kind, x, f.out.tensor())
	return f.out.t, true
}

// unaryRange sets out[i] = f(x[i]).
func unaryRange(k unaryKind, x, out []float64) {
	out = out[:len(x)]
	switch k {
	case unExp:
		for i, v := range x {
			out[i] = math.Exp(v)
		}
	case unLn:
		for i, v := range x {
			out[i] = math.Log(v)
		}
	case unNeg:
		for i, v := range x {
			out[i] = -v
		}
	case unSquare:
		for i, v := range x {
			out[i] = v * v
		}
	case unSqrt:
		for i, v := range x {
			out[i] = math.Sqrt(v)
		}
	case unInv:
		for i, v := range x {
			out[i] = 1 / v
		}
	case unInvSqrt:
		for i, v := range x {
			out[i] = 1 / math.Sqrt(v)
		}
	case unCube:
		for i, v := range x {
			out[i] = v * v * v
		}
	case unTanh:
		for i, v := range x {
			out[i] = math.Tanh(v)
		}
	case unAbs:
		for i, v := range x {
			out[i] = math.Abs(v)
		}
	}
}

// ---- sums -------------------------------------------------------------------

// fastSum is Gorgonia's Sum over all axes (a scalar) or one axis of a
// tensor of up to three dimensions, adding in the order of tensor's
// reductions: left to right from zero for a whole sum and along the last
// axis; along the first, row after row onto a copy of the first row; along
// the middle of three, from the first element of each run.
type fastSum struct {
	in   tensor.Shape
	n    int
	axis int // −1: every axis
	out  fastOut
}

func recogniseSum(op G.Op, out tensor.Shape, kids G.Nodes) fastOp {
	if len(kids) != 1 {
		return nil
	}
	in := kids[0].Shape()
	along := sumAxes(op)
	full := len(along) == 0 || len(along) == len(in)
	for i, a := range along {
		full = full && a == i
	}
	f := &fastSum{in: in, n: in.TotalSize(), axis: -1}
	switch {
	case in.IsScalar():
		return nil
	case full:
		if !out.IsScalar() {
			return nil
		}
		return f
	case len(along) != 1 || len(in) > 3 || along[0] < 0 || along[0] >= len(in):
		return nil
	}
	f.axis = along[0]
	if want := removeAxes(in, along); !sameShape(want, out) || out.IsScalar() {
		return nil
	}
	f.out.shape = out
	return f
}

func (f *fastSum) do(args []G.Value) (G.Value, bool) {
	x, ok := denseArg(args[0], f.in, f.n)
	if !ok {
		return nil, false
	}
	if f.axis < 0 {
		var s float64
		for _, v := range x {
			s += v
		}
		return f.out.scalar(s), true
	}
	out := f.out.tensor()
	last := len(f.in) - 1
	switch f.axis {
	case last: // runs of in[last] contiguous elements
		d := f.in[last]
		for at := range out {
			var s float64
			for _, v := range x[at*d : (at+1)*d] {
				s += v
			}
			out[at] = s
		}
	case 0: // rows of split elements, added onto the first
		split := f.n / f.in[0]
		copy(out, x[:split])
		for r := 1; r < f.in[0]; r++ {
			// Eight lanes at a time, each rounding as out[j] += v does.
			gemm.Add(out, x[r*split:(r+1)*split])
		}
	default: // the middle axis of three
		mid, inner := f.in[1], f.in[2]
		for i := 0; i < f.in[0]; i++ {
			blk := x[i*mid*inner : (i+1)*mid*inner]
			o := out[i*inner : (i+1)*inner]
			copy(o, blk[:inner])
			for k := 1; k < mid; k++ {
				gemm.Add(o, blk[k*inner:(k+1)*inner])
			}
		}
	}
	return f.out.t, true
}

// ---- transpose --------------------------------------------------------------

// fastTranspose is the transpose of a matrix into new memory.
type fastTranspose struct {
	r, c int
	in   tensor.Shape
	out  fastOut
}

func recogniseTranspose(op G.Op, out tensor.Shape, kids G.Nodes) fastOp {
	p := field(op, "pattern")
	if len(kids) != 1 || !p.IsValid() || p.Kind() != reflect.Slice || p.Len() != 2 || p.Index(0).Int() != 1 || p.Index(1).Int() != 0 {
		return nil
	}
	in := kids[0].Shape()
	if len(in) != 2 || !sameShape(out, tensor.Shape{in[1], in[0]}) {
		return nil
	}
	f := &fastTranspose{r: in[0], c: in[1], in: in}
	f.out.shape = out
	return f
}

func (f *fastTranspose) do(args []G.Value) (G.Value, bool) {
	x, ok := denseArg(args[0], f.in, f.r*f.c)
	if !ok {
		return nil, false
	}
	out := f.out.tensor()
	transpose(out, x, f.r, f.c)
	return f.out.t, true
}

// transposeTile is the side of the square tiles transpose copies: both
// the rows read and the rows written stay in cache while a tile is done.
// Element by element, every write of a 300×300 transpose went to another
// cache line (0.69 ms, 7.6 ns an element, in the Cholesky factor's
// gradient; tiled, a tenth of that).
const transposeTile = 16

// transpose sets out (c×r) to the transpose of x (r×c).
func transpose(out, x []float64, r, c int) {
	for i0 := 0; i0 < r; i0 += transposeTile {
		i1 := min(i0+transposeTile, r)
		for j0 := 0; j0 < c; j0 += transposeTile {
			j1 := min(j0+transposeTile, c)
			for i := i0; i < i1; i++ {
				row := x[i*c+j0 : i*c+j1]
				for j, v := range row {
					out[(j0+j)*r+i] = v
				}
			}
		}
	}
}
