package kernels

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/layers"
)

// Expr is a parsed kernel expression: registered kernels combined by '+'
// (Sum) and '*' (Product), '*' binding tighter, with parentheses, and
// numeric arguments after a name, as poly(3):
//
//	expr   = term { "+" term }
//	term   = factor { "*" factor }
//	factor = name [ "(" number { "," number } ")" ] | "(" expr ")"
//
// A kernel name is a letter, then letters, digits, '_', '-' or '.'
// ("se-iso" is one name); spaces between tokens are ignored.
type Expr struct {
	root *exprNode
}

type exprNode struct {
	op    byte // 0 for a registered kernel, '+' or '*'
	name  string
	args  []float64
	parts []*exprNode
}

// ExprError is a kernel expression that does not parse, with the position
// (1-based, in characters) where it goes wrong.
type ExprError struct {
	Expr string
	Pos  int
	Msg  string
	// Unknown is the kernel name that is not registered, when that is the
	// error.
	Unknown string
}

// Error implements error: the expression, the position and what is wrong.
func (e *ExprError) Error() string {
	return fmt.Sprintf("kernels: expression %q, position %d: %s", e.Expr, e.Pos, e.Msg)
}

// Parse parses a kernel expression; every kernel it names must be
// registered.
func Parse(s string) (*Expr, error) {
	p := &parser{src: s}
	p.next()
	if p.err != nil {
		return nil, p.err
	}
	if p.tok == tokEOF {
		return nil, &ExprError{Expr: s, Pos: 1, Msg: "empty kernel expression (want a kernel name: " + strings.Join(Names(), ", ") + ")"}
	}
	root := p.sum()
	if p.err == nil && p.tok != tokEOF {
		p.fail("unexpected %s after a complete expression (combine kernels with + or *)", p.describe())
	}
	if p.err != nil {
		return nil, p.err
	}
	return &Expr{root: root}, nil
}

// String is the expression in canonical form: no spaces, parentheses only
// where needed, arguments in %g.
func (e *Expr) String() string { return e.root.String() }

func (n *exprNode) String() string {
	if n.op == 0 {
		if len(n.args) == 0 {
			return n.name
		}
		a := make([]string, len(n.args))
		for i, v := range n.args {
			a[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return n.name + "(" + strings.Join(a, ",") + ")"
	}
	s := make([]string, len(n.parts))
	for i, q := range n.parts {
		s[i] = q.String()
		if n.op == '*' && q.op == '+' {
			s[i] = "(" + s[i] + ")"
		}
	}
	return strings.Join(s, string(n.op))
}

// Kernels lists the registered kernels the expression names, in order of
// appearance (repeats included).
func (e *Expr) Kernels() []string {
	var out []string
	e.root.leaves(func(n *exprNode) { out = append(out, n.name) })
	return out
}

func (n *exprNode) leaves(f func(*exprNode)) {
	if n.op == 0 {
		f(n)
		return
	}
	for _, q := range n.parts {
		q.leaves(f)
	}
}

// Composite reports whether the expression combines several kernels.
func (e *Expr) Composite() bool { return e.root.op != 0 }

// PartName is the parameter-name prefix of the i-th kernel (counted from 0
// left to right) named kernel in a composite whose prefix is prefix: for
// "matern52+linear" under "k0", "k0/0:matern52" and "k0/1:linear".
func PartName(prefix string, i int, kernel string) string {
	return prefix + "/" + strconv.Itoa(i) + ":" + kernel
}

// Build builds the expression: a single kernel under c.Name itself (its
// parameters named as the kernel alone always was), a composite as a
// *Composite, each part named by PartName and initialised by its own
// factory from c.Data, the composite owning the one white noise
// (c.Name+"/white"). c.Args is ignored: arguments come from the
// expression.
func (e *Expr) Build(c Config) (Kernel, error) {
	i := 0
	var build func(n *exprNode) (Kernel, error)
	build = func(n *exprNode) (Kernel, error) {
		if n.op == 0 {
			pc := c
			pc.Args = n.args
			if e.Composite() {
				pc.Name = PartName(c.Name, i, n.name)
			}
			i++
			k, err := New(n.name, pc)
			if err != nil {
				return nil, err
			}
			if k == nil {
				return nil, fmt.Errorf("kernels: the factory of %q returned no kernel", n.name)
			}
			return k, nil
		}
		ks := make([]Kernel, len(n.parts))
		for j, q := range n.parts {
			k, err := build(q)
			if err != nil {
				return nil, err
			}
			ks[j] = k
		}
		if n.op == '+' {
			return Sum(ks), nil
		}
		return Product(ks), nil
	}
	k, err := build(e.root)
	if err != nil || !e.Composite() {
		return k, err
	}
	return own(k, c), nil
}

// own makes the composite k own the white noise of its parts: each part
// that can (whiteDropper) drops its own, and the composite's σ₀² starts at
// the sum of what the parts started at, so that a sum's initial prior is
// the one it had when every part carried its own; a product, which used
// none of its factors', gains one. Without data (c.Data nil) it starts at
// 1, as every hyper-parameter does.
func own(k Kernel, c Config) *Composite {
	comp := &Composite{Kernel: k}
	var noise float64
	var walk func(k Kernel, viaSums bool)
	walk = func(k Kernel, viaSums bool) {
		switch k := k.(type) {
		case Sum:
			for _, q := range k {
				walk(q, viaSums)
			}
		case Product:
			for _, q := range k {
				walk(q, false)
			}
		case whiteDropper:
			noise += k.dropWhite()
		case Noiser:
			if viaSums {
				comp.kept = append(comp.kept, k)
			}
		}
	}
	walk(k, true)
	if noise > 0 {
		if c.Data == nil {
			noise = 1
		}
		comp.WhiteNoise = layers.NewParam(c.Name+"/white", tensor.ScalarShape(), noise, layers.Exp)
	}
	return comp
}

// SumParts lists the parts (counted from 0 left to right, as PartName
// numbers them) reached from the root through sums only. Before a
// composite owned one white noise, a sum added its parts' and a product
// used none of its factors', so these are the parts whose white noise a
// model saved then used: a loader converts such a file by their total.
func (e *Expr) SumParts() []int {
	var out []int
	i := 0
	var walk func(n *exprNode, viaSums bool)
	walk = func(n *exprNode, viaSums bool) {
		if n.op == 0 {
			if viaSums {
				out = append(out, i)
			}
			i++
			return
		}
		for _, q := range n.parts {
			walk(q, viaSums && n.op == '+')
		}
	}
	walk(e.root, true)
	return out
}

// Build parses expr and builds it (Expr.Build).
func Build(expr string, c Config) (Kernel, error) {
	e, err := Parse(expr)
	if err != nil {
		return nil, err
	}
	return e.Build(c)
}

type token int

const (
	tokEOF token = iota
	tokName
	tokNumber
	tokPunct // one of + * ( ) ,
)

type parser struct {
	src string
	off int // byte offset of the next unread character
	// the current token
	tok  token
	text string
	pos  int // 1-based character position of the current token
	err  *ExprError
}

func (p *parser) fail(format string, a ...any) {
	if p.err == nil {
		p.err = &ExprError{Expr: p.src, Pos: p.pos, Msg: fmt.Sprintf(format, a...)}
	}
}

func (p *parser) describe() string {
	switch p.tok {
	case tokEOF:
		return "end of expression"
	case tokName:
		return fmt.Sprintf("kernel name %q", p.text)
	case tokNumber:
		return fmt.Sprintf("number %s", p.text)
	}
	return fmt.Sprintf("%q", p.text)
}

// next reads the next token.
func (p *parser) next() {
	for p.off < len(p.src) && (p.src[p.off] == ' ' || p.src[p.off] == '\t') {
		p.off++
	}
	p.pos = utf8.RuneCountInString(p.src[:p.off]) + 1
	if p.off == len(p.src) {
		p.tok, p.text = tokEOF, ""
		return
	}
	start := p.off
	r, size := utf8.DecodeRuneInString(p.src[p.off:])
	switch {
	case strings.ContainsRune("+*(),", r):
		p.off += size
		p.tok = tokPunct
	case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		for p.off < len(p.src) && nameByte(p.src[p.off]) {
			p.off++
		}
		p.tok = tokName
	case r >= '0' && r <= '9' || r == '.' || r == '-':
		p.off += size
		for p.off < len(p.src) {
			b := p.src[p.off]
			exp := (b == '+' || b == '-') && (p.src[p.off-1] == 'e' || p.src[p.off-1] == 'E')
			if !(b >= '0' && b <= '9' || b == '.' || b == 'e' || b == 'E' || exp) {
				break
			}
			p.off++
		}
		p.tok = tokNumber
	default:
		p.text = string(r)
		p.fail("unexpected character %q (want a kernel name, +, *, parentheses or a number argument)", r)
		p.tok = tokEOF
		return
	}
	p.text = p.src[start:p.off]
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '.'
}

func (p *parser) is(punct string) bool { return p.tok == tokPunct && p.text == punct }

// sum parses expr = term { "+" term }.
func (p *parser) sum() *exprNode {
	return p.chain('+', p.product)
}

// product parses term = factor { "*" factor }.
func (p *parser) product() *exprNode {
	return p.chain('*', p.factor)
}

// chain parses operands joined by op, flattening nested ones of the same op
// (the sum and product are associative, and the parts' names then do not
// depend on the grouping).
func (p *parser) chain(op byte, operand func() *exprNode) *exprNode {
	first := operand()
	if p.err != nil {
		return nil
	}
	n := &exprNode{op: op}
	add := func(q *exprNode) {
		if q.op == op {
			n.parts = append(n.parts, q.parts...)
		} else {
			n.parts = append(n.parts, q)
		}
	}
	add(first)
	for p.is(string(op)) {
		p.next()
		q := operand()
		if p.err != nil {
			return nil
		}
		add(q)
	}
	if len(n.parts) == 1 {
		return n.parts[0]
	}
	return n
}

// factor parses name [ "(" numbers ")" ] | "(" expr ")".
func (p *parser) factor() *exprNode {
	switch {
	case p.err != nil:
		return nil
	case p.is("("):
		open := p.pos
		p.next()
		if p.is(")") {
			p.fail("empty parentheses")
			return nil
		}
		n := p.sum()
		if p.err != nil {
			return nil
		}
		if !p.is(")") {
			p.fail("expected ) to close the ( at position %d, found %s", open, p.describe())
			return nil
		}
		p.next()
		return n
	case p.tok == tokName:
		n := &exprNode{name: p.text}
		if _, err := registry.Lookup(n.name); err != nil {
			p.err = &ExprError{Expr: p.src, Pos: p.pos, Unknown: n.name,
				Msg: fmt.Sprintf("unknown kernel %q (want one of %s)", n.name, strings.Join(Names(), ", "))}
			return nil
		}
		p.next()
		if p.is("(") {
			n.args = p.args()
		}
		return n
	}
	p.fail("expected a kernel name or (, found %s", p.describe())
	return nil
}

// args parses "(" number { "," number } ")".
func (p *parser) args() []float64 {
	open := p.pos
	var out []float64
	p.next()
	for {
		if p.tok != tokNumber {
			p.fail("expected a number argument, found %s", p.describe())
			return nil
		}
		v, err := strconv.ParseFloat(p.text, 64)
		if err != nil {
			p.fail("%q is not a number", p.text)
			return nil
		}
		out = append(out, v)
		p.next()
		if p.is(")") {
			p.next()
			return out
		}
		if !p.is(",") {
			p.fail("expected , or ) to close the arguments opened at position %d, found %s", open, p.describe())
			return nil
		}
		p.next()
	}
}
