package graph

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// children returns a node's inputs in argument order. Gorgonia keeps them in an
// unexported field; the graph's edge set cannot be used instead because it
// loses order and multiplicity (Mul(x, x) has one edge). Read-only access.
func children(n *G.Node) G.Nodes {
	v := reflect.ValueOf(n).Elem().FieldByName("children")
	return *(*G.Nodes)(unsafe.Pointer(v.UnsafeAddr()))
}

// Inputs returns the argument nodes of n in order (nil for leaves).
func Inputs(n *G.Node) G.Nodes { return append(G.Nodes(nil), children(n)...) }

// vjpRule computes the vector-Jacobian products of one node: for each child,
// the gradient contribution (nil where the child is not differentiable).
type vjpRule func(n *G.Node, ch G.Nodes, grad *G.Node) (G.Nodes, error)

// overrides replaces the SymDiff of Gorgonia ops whose gradients are wrong
// (OuterProd at first order; Slice, Sum and scalar Reshape at second order).
// Keyed by the op's dynamic type name because the types are unexported.
var overrides = map[string]vjpRule{
	"gorgonia.linAlgBinOp": linAlgVJP, // OuterProd has no op type of its own
	"gorgonia.sumOp":       sumVJP,
	"gorgonia.reshapeOp":   reshapeVJP,
	"*gorgonia.sliceOp":    sliceVJP,
	"gorgonia.sliceOp":     sliceVJP,
}

// Grad returns the gradients of the scalar cost with respect to each node in
// wrt, as new nodes of cost's graph. Unlike gorgonia.Grad it calls every op's
// SymDiff afresh (it never reads Gorgonia's derivative cache), so it may be
// applied again to a cost built from its own results: gradients of gradients
// are correct. It fails if the cost does not depend on some node of wrt.
func Grad(cost *G.Node, wrt ...*G.Node) (G.Nodes, error) {
	if !cost.IsScalar() {
		return nil, fmt.Errorf("graph.Grad: cost %v has shape %v, want a scalar", cost.Name(), cost.Shape())
	}
	one := Input(cost.Graph(), "gradseed", tensor.ScalarShape(), []float64{1})
	return Backprop(G.Nodes{cost}, G.Nodes{one}, wrt)
}

// Backprop pulls the seeds (one per output, of the output's shape) back to
// the nodes in wrt: it returns Σ_k J_kᵀ seed_k for each wrt node.
func Backprop(outputs, seeds, wrt G.Nodes) (G.Nodes, error) {
	return backprop(outputs, seeds, wrt, false)
}

// partials pulls seeds back to wrt treating the wrt nodes as independent
// leaves (paths between them are not followed: the partial, not the total,
// derivatives), with a nil gradient for a wrt node the outputs do not
// depend on. Adjoints of fused ops are built from it.
func partials(outputs, seeds, wrt G.Nodes) (G.Nodes, error) {
	return backprop(outputs, seeds, wrt, true)
}

// backprop is Backprop; with asLeaves the wrt nodes are leaves and missing
// ones get nil (see partials).
func backprop(outputs, seeds, wrt G.Nodes, asLeaves bool) (G.Nodes, error) {
	if len(outputs) != len(seeds) {
		return nil, fmt.Errorf("graph.Backprop: %d outputs but %d seeds", len(outputs), len(seeds))
	}
	// Topological order of everything the outputs depend on (children first).
	var order G.Nodes
	seen := map[*G.Node]bool{}
	leaf := map[*G.Node]bool{}
	if asLeaves {
		for _, w := range wrt {
			leaf[w] = true
		}
	}
	var visit func(n *G.Node)
	visit = func(n *G.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if leaf[n] {
			order = append(order, n)
			return
		}
		for _, c := range children(n) {
			visit(c)
		}
		order = append(order, n)
	}
	for _, o := range outputs {
		visit(o)
	}
	// A node is active if some wrt node reaches it through differentiable edges.
	active := map[*G.Node]bool{}
	for _, w := range wrt {
		active[w] = true
	}
	for _, n := range order {
		if active[n] || n.Op() == nil {
			continue
		}
		diff := diffWRT(n)
		for i, c := range children(n) {
			if active[c] && (diff == nil || diff[i]) {
				active[n] = true
				break
			}
		}
	}
	adj := map[*G.Node]G.Nodes{}
	for i, o := range outputs {
		adj[o] = append(adj[o], seeds[i])
	}
	summed := map[*G.Node]*G.Node{}
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if !active[n] || len(adj[n]) == 0 {
			continue
		}
		g, err := addAll(adj[n])
		if err != nil {
			return nil, fmt.Errorf("graph.Backprop: summing gradients of %v: %w", n.Name(), err)
		}
		summed[n] = g
		if n.Op() == nil || leaf[n] {
			continue
		}
		ch := children(n)
		grads, err := vjp(n, ch, g)
		if err != nil {
			return nil, fmt.Errorf("graph.Backprop: differentiating %v (%v): %w", n.Name(), n.Op(), err)
		}
		diff := diffWRT(n)
		for j, c := range ch {
			if !active[c] || (diff != nil && !diff[j]) || grads[j] == nil {
				continue
			}
			adj[c] = append(adj[c], grads[j])
		}
	}
	out := make(G.Nodes, len(wrt))
	for i, w := range wrt {
		g, ok := summed[w]
		if !ok && asLeaves {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("graph.Backprop: the outputs do not depend on %v", w.Name())
		}
		out[i] = g
	}
	return out, nil
}

func diffWRT(n *G.Node) []bool {
	if sd, ok := n.Op().(G.SDOp); ok {
		return sd.DiffWRT(len(children(n)))
	}
	return nil
}

func vjp(n *G.Node, ch G.Nodes, g *G.Node) (G.Nodes, error) {
	if rule, ok := overrides[fmt.Sprintf("%T", n.Op())]; ok {
		return rule(n, ch, g)
	}
	sd, ok := n.Op().(G.SDOp)
	if !ok {
		return nil, fmt.Errorf("op %v (%T) has no symbolic derivative", n.Op(), n.Op())
	}
	grads, err := sd.SymDiff(ch, n, g)
	if err != nil {
		return nil, err
	}
	if len(grads) != len(ch) {
		return nil, fmt.Errorf("op %v returned %d gradients for %d inputs", n.Op(), len(grads), len(ch))
	}
	return grads, nil
}

// addAll sums gradient contributions: when they have one shape, matrix
// products among them accumulate into one Gemm output (sumOfProducts) and
// the rest join it in one AddN op (one allocation and one pass instead of
// a pairwise tree of Adds, which cost NIMGP_FO 10 ms a step on MNIST),
// otherwise pairwise with
// Gorgonia's broadcasting Add (a balanced tree keeps the graph shallow when
// a node has many consumers).
func addAll(ns G.Nodes) (*G.Node, error) {
	if len(ns) > 1 && !ns[0].Shape().IsScalar() {
		same := true
		for _, n := range ns[1:] {
			same = same && sameShape(n.Shape(), ns[0].Shape())
		}
		if same {
			ns, err := sumOfProducts(ns)
			if err != nil {
				return nil, err
			}
			if ns, err = sumOfTriangles(ns); err != nil {
				return nil, err
			}
			if ns, err = sumOfPowers(ns); err != nil {
				return nil, err
			}
			if p, rest := oneOuter(ns); p != nil {
				return addOuter(rest, p)
			}
			return sumWithAddend(ns)
		}
	}
	for len(ns) > 1 {
		var next G.Nodes
		for i := 0; i+1 < len(ns); i += 2 {
			s, err := G.Add(ns[i], ns[i+1])
			if err != nil {
				return nil, err
			}
			next = append(next, s)
		}
		if len(ns)%2 == 1 {
			next = append(next, ns[len(ns)-1])
		}
		ns = next
	}
	return ns[0], nil
}

// oneOuter returns the one outer product among ns and the others, when
// there is exactly one, there are others, and none of them would take the
// rest as an addend itself (sumWithAddend); otherwise nil.
func oneOuter(ns G.Nodes) (*G.Node, G.Nodes) {
	var p *G.Node
	var rest G.Nodes
	for _, n := range ns {
		if _, ok := outerProduct(n); ok {
			if p != nil {
				return nil, nil
			}
			p = n
			continue
		}
		if takesAddend(n) {
			return nil, nil
		}
		rest = append(rest, n)
	}
	if p == nil || len(rest) == 0 {
		return nil, nil
	}
	return p, rest
}

// sumWithAddend adds same-shaped contributions: when one is the adjoint of
// a fused function's argument, it adds the others itself (withAddend),
// saving the AddN's pass over memory; otherwise one AddN.
func sumWithAddend(ns G.Nodes) (*G.Node, error) {
	if len(ns) == 1 {
		return ns[0], nil
	}
	if s, rest, err := sumScaledColumns(ns); err != nil || s != nil {
		if err != nil || len(rest) == 0 {
			return s, err
		}
		return withAddend(s, rest...)
	}
	for i, n := range ns {
		if !takesAddend(n) {
			continue
		}
		rest := append(append(G.Nodes(nil), ns[:i]...), ns[i+1:]...)
		return withAddend(n, rest...)
	}
	return AddN(ns...)
}

// linAlgVJP handles gorgonia's linAlgBinOp, the one op type behind Mul (matrix
// and vector products) and OuterProd: the outer product gets outerVJP, the
// others keep Gorgonia's rules, which are correct. The operator field is
// unexported, so the outer product is recognised by its printed form "a ⊗ b".
func linAlgVJP(n *G.Node, ch G.Nodes, g *G.Node) (G.Nodes, error) {
	if strings.Contains(n.Op().String(), "⊗") {
		return outerVJP(n, ch, g)
	}
	grads, err := n.Op().(G.SDOp).SymDiff(ch, n, g)
	if err == nil && len(grads) != len(ch) {
		err = fmt.Errorf("op %v returned %d gradients for %d inputs", n.Op(), len(grads), len(ch))
	}
	return grads, err
}

// outerVJP: y = a bᵀ, so ā = Ȳ b and b̄ = Ȳᵀ a (Gorgonia's own rule forgets the transpose).
func outerVJP(n *G.Node, ch G.Nodes, g *G.Node) (G.Nodes, error) {
	a, b := ch[0], ch[1]
	ga, err := G.Mul(g, b)
	if err != nil {
		return nil, err
	}
	gt, err := G.Transpose(g)
	if err != nil {
		return nil, err
	}
	gb, err := G.Mul(gt, a)
	if err != nil {
		return nil, err
	}
	return G.Nodes{ga, gb}, nil
}

// sumVJP broadcasts the output gradient back over the summed axes with an op
// whose own gradient is a Sum, so the pair differentiates to any order.
func sumVJP(n *G.Node, ch G.Nodes, g *G.Node) (G.Nodes, error) {
	along := sumAxes(n.Op())
	b, err := BroadcastTo(g, ch[0].Shape(), along)
	if err != nil {
		return nil, err
	}
	return G.Nodes{b}, nil
}

func sumAxes(op G.Op) []int {
	v := reflect.ValueOf(op).FieldByName("along")
	ax := make([]int, v.Len())
	for i := range ax {
		ax[i] = int(v.Index(i).Int())
	}
	return ax
}

// reshapeVJP reshapes the gradient back; a reshape between equal shapes is the
// identity (Gorgonia's scalar-to-scalar reshape fails at run time).
func reshapeVJP(n *G.Node, ch G.Nodes, g *G.Node) (G.Nodes, error) {
	r, err := Reshape(g, ch[0].Shape())
	return G.Nodes{r}, err
}

// sameShape compares shapes exactly. tensor.Shape.Eq is not used because it
// treats (n), (1, n) and (n, 1) as equal, and nodes of those shapes are not
// interchangeable (a Reshape between them would be skipped).
func sameShape(a, b tensor.Shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sliceVJP scatters the gradient into zeros with Scatter, whose gradient is a
// Take of the same range; Gorgonia's sliceIncrOp sends second-order
// gradients to the wrong input.
func sliceVJP(n *G.Node, ch G.Nodes, g *G.Node) (G.Nodes, error) {
	op := reflect.ValueOf(n.Op())
	if op.Kind() == reflect.Pointer {
		op = op.Elem()
	}
	sl, _ := op.FieldByName("Slice").Interface().(tensor.Slice)
	axis := int(op.FieldByName("along").Int())
	in := ch[0].Shape()
	start, end := 0, in[axis]
	if sl != nil {
		if sl.Step() > 1 {
			return nil, fmt.Errorf("slices with step %d are not supported; use graph.Take", sl.Step())
		}
		start, end = sl.Start(), sl.End()
		if end <= start { // a single index: Gorgonia encodes it as [i, i+1) or with End 0
			end = start + 1
		}
	}
	// A single index drops the axis; restore it so Scatter sees a range.
	if g.Dims() < len(in) || g.IsScalar() {
		keep := in.Clone()
		keep[axis] = end - start
		var err error
		if g, err = reshapeTo(g, keep); err != nil {
			return nil, err
		}
	}
	s, err := Scatter(g, in, axis, start)
	if err != nil {
		return nil, err
	}
	return G.Nodes{s}, nil
}

func reshapeTo(g *G.Node, s tensor.Shape) (*G.Node, error) { return Reshape(g, s) }
