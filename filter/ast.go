package filter

import "strconv"

// node is a compiled expression. Nodes are immutable once Parse returns,
// so a tree may be evaluated from any number of goroutines at once.
type node interface {
	// eval computes the node's value for one message. Boolean nodes
	// return a kBool or the null value; any node may return kErr, which
	// every parent passes up unchanged.
	eval(lk Lookup) value
	// depth is the height of the subtree: 1 for a leaf.
	depth() int
	// prec is the binding strength of the node's syntax, for printing.
	prec() int
	// format appends the node's canonical text.
	format(b []byte) []byte
}

// Binding strengths, loosest first; they follow the grammar's levels.
const (
	precOr      = 1 // OR
	precAnd     = 2 // AND
	precEq      = 3 // = <> IS [NOT] NULL
	precCmp     = 4 // > >= < <= [NOT] BETWEEN, [NOT] IN, [NOT] CONTAINS, …
	precUnary   = 5 // NOT, unary minus
	precPrimary = 6 // literals, properties
)

// propNode reads a message property.
type propNode struct{ name string }

// constNode is a string or numeric literal.
type constNode struct{ v value }

// boolConstNode is TRUE, FALSE or NULL: RocketMQ types these literals as
// both constants and boolean expressions.
type boolConstNode struct{ v value }

// negNode is unary minus.
type negNode struct {
	x node
	d int
}

// castNode is a property used where a boolean is required ("a AND b"):
// true only for a Boolean value, which a property string never is.
type castNode struct{ p *propNode }

// notNode is NOT.
type notNode struct {
	x node
	d int
}

// logicNode is a chain of AND or of OR, flattened: x1 AND x2 AND x3.
type logicNode struct {
	or bool
	xs []node
	d  int
}

// cmpOp is a binary comparison operator.
type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opGt
	opGe
	opLt
	opLe
)

var cmpText = [...]string{opEq: "=", opNe: "<>", opGt: ">", opGe: ">=", opLt: "<", opLe: "<="}

// cmpNode is l op r.
type cmpNode struct {
	op   cmpOp
	l, r node
	d    int
}

// isNullNode is x IS NULL, or x IS NOT NULL.
type isNullNode struct {
	x   node
	not bool
	d   int
}

// betweenNode is x [NOT] BETWEEN lo AND hi.
type betweenNode struct {
	x, lo, hi node
	not       bool
	d         int
}

// inNode is p [NOT] IN ('s1', 's2', …).
type inNode struct {
	p    *propNode
	list []string
	set  map[string]struct{} // for long lists; nil otherwise
	not  bool
}

// strOp is a string-search operator.
type strOp uint8

const (
	opContains strOp = iota
	opStartsWith
	opEndsWith
)

var strOpText = [...]string{opContains: "CONTAINS", opStartsWith: "STARTSWITH", opEndsWith: "ENDSWITH"}

// strNode is x [NOT] CONTAINS|STARTSWITH|ENDSWITH 'search'.
type strNode struct {
	op     strOp
	x      node
	search string
	not    bool
	d      int
}

func (*propNode) depth() int      { return 1 }
func (*constNode) depth() int     { return 1 }
func (*boolConstNode) depth() int { return 1 }
func (*castNode) depth() int      { return 2 }
func (n *negNode) depth() int     { return n.d }
func (n *notNode) depth() int     { return n.d }
func (n *logicNode) depth() int   { return n.d }
func (n *cmpNode) depth() int     { return n.d }
func (n *isNullNode) depth() int  { return n.d }
func (n *betweenNode) depth() int { return n.d }
func (*inNode) depth() int        { return 2 }
func (n *strNode) depth() int     { return n.d }

func (*propNode) prec() int      { return precPrimary }
func (*constNode) prec() int     { return precPrimary }
func (*boolConstNode) prec() int { return precPrimary }
func (*castNode) prec() int      { return precPrimary }
func (*negNode) prec() int       { return precUnary }
func (*notNode) prec() int       { return precUnary }
func (n *logicNode) prec() int {
	if n.or {
		return precOr
	}
	return precAnd
}
func (n *cmpNode) prec() int {
	if n.op == opEq || n.op == opNe {
		return precEq
	}
	return precCmp
}
func (*isNullNode) prec() int  { return precEq }
func (*betweenNode) prec() int { return precCmp }
func (*inNode) prec() int      { return precCmp }
func (*strNode) prec() int     { return precCmp }

// height is 1 + the greatest depth among xs.
func height(xs ...node) int {
	d := 0
	for _, x := range xs {
		d = max(d, x.depth())
	}
	return d + 1
}

// The checks below are the ones RocketMQ's expression factories make while
// the parser builds the tree (ComparisonExpression.create*,
// SelectorParser.asBooleanExpression); failing one fails the compile.

// isBoolean reports whether RocketMQ types n as a BooleanExpression.
func isBoolean(n node) bool {
	switch n.(type) {
	case *propNode, *constNode, *negNode:
		return false
	}
	return true
}

// constant returns the value of a literal, and whether n is one.
func constant(n node) (value, bool) {
	switch c := n.(type) {
	case *constNode:
		return c.v, true
	case *boolConstNode:
		return c.v, true
	}
	return value{}, false
}

// asBoolean returns n for use where a boolean is required (a selector,
// an operand of AND, OR or NOT): boolean expressions as they are, a bare
// property wrapped in a cast, anything else rejected.
func asBoolean(n node, pos int) (node, error) {
	if isBoolean(n) {
		return n, nil
	}
	if p, ok := n.(*propNode); ok {
		return &castNode{p: p}, nil
	}
	return nil, syntaxErr(pos, "%s does not yield a boolean", text(n))
}

// checkOrdered is checkLessThanOperand: only numeric literals, properties
// and negations may stand on either side of > >= < <= or BETWEEN.
func checkOrdered(n node, pos int) error {
	if v, ok := constant(n); ok {
		if v.k == kInt || v.k == kLong || v.k == kDouble {
			return nil
		}
		return syntaxErr(pos, "%s cannot be ordered; only numbers can", text(n))
	}
	if isBoolean(n) {
		return syntaxErr(pos, "%s cannot be ordered; only numbers can", text(n))
	}
	return nil
}

// newCmp builds l op r after RocketMQ's checks.
func newCmp(op cmpOp, l, r node, pos int) (node, error) {
	switch op {
	case opEq, opNe:
		// checkEqualOperand: no NULL literal; IS NULL is the way.
		for _, x := range [...]node{l, r} {
			if v, ok := constant(x); ok && v.k == kNull {
				return nil, syntaxErr(pos, "NULL cannot be compared with %s; use IS NULL", cmpText[op])
			}
		}
		// checkEqualOperandCompatability: TRUE/FALSE on the left of
		// another literal only if that one is boolean too.
		if lv, ok := constant(l); ok && lv.k == kBool {
			if rv, ok := constant(r); ok && rv.k != kBool {
				return nil, syntaxErr(pos, "%s cannot be compared with %s", text(l), text(r))
			}
		}
	default:
		if err := checkOrdered(l, pos); err != nil {
			return nil, err
		}
		if err := checkOrdered(r, pos); err != nil {
			return nil, err
		}
	}
	return &cmpNode{op: op, l: l, r: r, d: height(l, r)}, nil
}

// newBetween builds x [NOT] BETWEEN lo AND hi. BETWEEN (not NOT BETWEEN)
// with two literal bounds requires them to be non-NULL and lo ≤ hi.
func newBetween(x, lo, hi node, not bool, pos int) (node, error) {
	if !not {
		lv, lok := constant(lo)
		hv, hok := constant(hi)
		if lok && hok {
			if lv.k == kNull || hv.k == kNull {
				return nil, syntaxErr(pos, "BETWEEN bounds cannot be NULL")
			}
			c, e := javaCompare(hv, lv)
			if e.k == kErr {
				return nil, syntaxErr(pos, "BETWEEN bounds %s and %s cannot be compared", lv.literal(), hv.literal())
			}
			if c < 0 {
				return nil, syntaxErr(pos, "BETWEEN lower bound %s is greater than upper bound %s", lv.literal(), hv.literal())
			}
		}
	}
	for _, n := range [...]node{x, lo, hi} {
		if err := checkOrdered(n, pos); err != nil {
			return nil, err
		}
	}
	return &betweenNode{x: x, lo: lo, hi: hi, not: not, d: height(x, lo, hi)}, nil
}

// inSetMin is the list length from which IN uses a hash set (RocketMQ
// switches to a HashSet at five elements too).
const inSetMin = 5

// newIn builds x [NOT] IN (list); x must be a property.
func newIn(x node, list []string, not bool, pos int) (node, error) {
	p, ok := x.(*propNode)
	if !ok {
		return nil, syntaxErr(pos, "IN needs a property on its left, not %s", text(x))
	}
	n := &inNode{p: p, list: list, not: not}
	if len(list) >= inSetMin {
		n.set = make(map[string]struct{}, len(list))
		for _, s := range list {
			n.set[s] = struct{}{}
		}
	}
	return n, nil
}

// newLogic builds l AND r or l OR r, merging chains of the same operator
// into one node: AND and OR are associative under RocketMQ's evaluation
// order, so (a AND b) AND c and a AND (b AND c) behave the same.
func newLogic(or bool, l, r node, pos int) (node, error) {
	l, err := asBoolean(l, pos)
	if err != nil {
		return nil, err
	}
	if r, err = asBoolean(r, pos); err != nil {
		return nil, err
	}
	var rs []node
	if rn, ok := r.(*logicNode); ok && rn.or == or {
		rs = rn.xs
	} else {
		rs = []node{r}
	}
	if ln, ok := l.(*logicNode); ok && ln.or == or {
		ln.xs = append(ln.xs, rs...) // ln is fresh from this parse and not shared
		ln.d = max(ln.d, height(rs...))
		return ln, nil
	}
	xs := append([]node{l}, rs...)
	return &logicNode{or: or, xs: xs, d: height(xs...)}, nil
}

// newNot builds NOT x.
func newNot(x node, pos int) (node, error) {
	x, err := asBoolean(x, pos)
	if err != nil {
		return nil, err
	}
	return &notNode{x: x, d: height(x)}, nil
}

// newInt is ConstantExpression.createFromDecimal: a Java long (an 'l' or
// 'L' suffix is dropped), typed Integer when it fits in 32 bits.
func newInt(t token) (node, error) {
	s := t.text
	if c := s[len(s)-1]; c == 'l' || c == 'L' {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, syntaxErr(t.pos, "integer %s is out of range", t.text)
	}
	if int64(int32(n)) == n {
		return &constNode{v: intValue(int32(n))}, nil
	}
	return &constNode{v: longValue(n)}, nil
}

// newFloat is ConstantExpression.createFloat: a Java double that must be
// finite and at least Double.MIN_VALUE, which RocketMQ's check also makes
// a literal equal to zero (0.0, 0e5, 1e-400) invalid.
func newFloat(t token) (node, error) {
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil && !isRangeErr(err) {
		return nil, syntaxErr(t.pos, "bad number %s", t.text)
	}
	if f > maxFloat64 {
		return nil, syntaxErr(t.pos, "number %s is too large", t.text)
	}
	if f < minFloat64 {
		return nil, syntaxErr(t.pos, "number %s is zero or too small; RocketMQ rejects floating-point literals below 4.9E-324 (write 0 for zero)", t.text)
	}
	return &constNode{v: doubleValue(f)}, nil
}

const (
	maxFloat64 = 1.79769313486231570814527423731704356798070e+308
	minFloat64 = 4.9406564584124654417656879286822137236505980e-324
)

// text formats n for an error message.
func text(n node) string { return string(n.format(nil)) }
