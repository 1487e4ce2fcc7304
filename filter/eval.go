package filter

import "strings"

// Evaluation follows RocketMQ's expression classes step by step, including
// which operands are evaluated at all: a conversion failure aborts the whole
// selector (kErr), so evaluation order is observable and must match.

func (n *propNode) eval(lk Lookup) value {
	if lk == nil {
		return nullValue
	}
	s, ok := lk(n.name)
	if !ok {
		return nullValue
	}
	return stringValue(s)
}

func (n *constNode) eval(Lookup) value     { return n.v }
func (n *boolConstNode) eval(Lookup) value { return n.v }

// eval is UnaryExpression.createNegate: numbers are negated (in their own
// type, wrapping like Java), anything else is null.
func (n *negNode) eval(lk Lookup) value {
	v := n.x.eval(lk)
	switch v.k {
	case kErr:
		return v
	case kInt:
		return intValue(-int32(v.n))
	case kLong:
		return longValue(-v.n)
	case kDouble:
		return doubleValue(-v.float())
	}
	return nullValue
}

// eval is UnaryExpression.createBooleanCast: null stays null; a value that
// is not a Boolean — every property value, being a string — is false.
func (n *castNode) eval(lk Lookup) value {
	if n.p.eval(lk).k == kNull {
		return nullValue
	}
	return falseValue
}

func (n *notNode) eval(lk Lookup) value {
	return not(n.x.eval(lk))
}

// not negates a boolean; null and kErr pass through.
func not(v value) value {
	if v.k == kBool {
		return boolValue(!v.bool())
	}
	return v
}

// eval is LogicExpression: operands left to right, stopping at the first
// FALSE (AND) or TRUE (OR); otherwise null if any operand was null.
func (n *logicNode) eval(lk Lookup) value {
	sawNull := false
	for _, x := range n.xs {
		v := x.eval(lk)
		switch {
		case v.k == kErr:
			return v
		case v.k == kBool:
			if v.bool() == n.or {
				return v
			}
		default:
			sawNull = true
		}
	}
	if sawNull {
		return nullValue
	}
	return boolValue(!n.or)
}

func (n *cmpNode) eval(lk Lookup) value {
	switch n.op {
	case opEq:
		return equal(n.l, n.r, lk)
	case opNe:
		return not(equal(n.l, n.r, lk))
	}
	return order(n.op, n.l, n.r, lk)
}

// equal is ComparisonExpression.doCreateEqual. Both sides are evaluated.
// null = null is TRUE; null on the left only gives null, on the right only
// FALSE (RocketMQ's asymmetry, kept); otherwise the values are compared
// after javaCompare's conversions.
func equal(l, r node, lk Lookup) value {
	lv := l.eval(lk)
	if lv.k == kErr {
		return lv
	}
	rv := r.eval(lk)
	if rv.k == kErr {
		return rv
	}
	switch {
	case lv.k == kNull && rv.k == kNull:
		return trueValue
	case lv.k == kNull:
		return nullValue
	case rv.k == kNull:
		return falseValue
	}
	c, e := javaCompare(lv, rv)
	if e.k == kErr {
		return e
	}
	return boolValue(c == 0)
}

// order is ComparisonExpression.evaluate for > >= < <=: null if the left
// side is null (the right is then not evaluated) or the right side is;
// two strings are both read as doubles first; then javaCompare.
func order(op cmpOp, l, r node, lk Lookup) value {
	lv := l.eval(lk)
	if lv.k == kErr || lv.k == kNull {
		return lv
	}
	rv := r.eval(lk)
	if rv.k == kErr || rv.k == kNull {
		return rv
	}
	if lv.k == kString && rv.k == kString {
		lf, ok := javaParseDouble(lv.s)
		if !ok {
			return errValue(errNotDouble, lv.s)
		}
		rf, ok := javaParseDouble(rv.s)
		if !ok {
			return errValue(errNotDouble, rv.s)
		}
		lv, rv = doubleValue(lf), doubleValue(rf)
	}
	c, e := javaCompare(lv, rv)
	if e.k == kErr {
		return e
	}
	switch op {
	case opGt:
		return boolValue(c > 0)
	case opGe:
		return boolValue(c >= 0)
	case opLt:
		return boolValue(c < 0)
	}
	return boolValue(c <= 0)
}

// eval is x IS NULL (ComparisonExpression.createIsNull, an equality with
// the NULL literal) or its negation; never null itself.
func (n *isNullNode) eval(lk Lookup) value {
	v := n.x.eval(lk)
	if v.k == kErr {
		return v
	}
	return boolValue((v.k == kNull) != n.not)
}

// eval is RocketMQ's rewrite: x BETWEEN lo AND hi is
// (x >= lo) AND (x <= hi), x NOT BETWEEN lo AND hi is (x < lo) OR (x > hi),
// x being evaluated once per comparison.
func (n *betweenNode) eval(lk Lookup) value {
	var a, b value
	if n.not {
		a = order(opLt, n.x, n.lo, lk)
	} else {
		a = order(opGe, n.x, n.lo, lk)
	}
	if a.k == kErr || (a.k == kBool && a.bool() == n.not) {
		return a
	}
	if n.not {
		b = order(opGt, n.x, n.hi, lk)
	} else {
		b = order(opLe, n.x, n.hi, lk)
	}
	if b.k == kErr || (b.k == kBool && b.bool() == n.not) {
		return b
	}
	if a.k == kNull || b.k == kNull {
		return nullValue
	}
	return boolValue(!n.not)
}

// eval is UnaryExpression.createInExpression: null for a missing property,
// else membership (negated for NOT IN).
func (n *inNode) eval(lk Lookup) value {
	v := n.p.eval(lk)
	if v.k != kString {
		return v
	}
	var found bool
	if n.set != nil {
		_, found = n.set[v.s]
	} else {
		for _, s := range n.list {
			if s == v.s {
				found = true
				break
			}
		}
	}
	return boolValue(found != n.not)
}

// eval is ComparisonExpression's Contains/StartsWith/EndsWith expressions
// and their NOT forms: FALSE for an empty search string (without
// evaluating x), for a null x and for an x that is not a string — in the
// NOT forms too; else the test, negated for NOT.
func (n *strNode) eval(lk Lookup) value {
	if n.search == "" {
		return falseValue
	}
	v := n.x.eval(lk)
	if v.k == kErr {
		return v
	}
	if v.k != kString {
		return falseValue
	}
	var r bool
	switch n.op {
	case opContains:
		r = strings.Contains(v.s, n.search)
	case opStartsWith:
		r = strings.HasPrefix(v.s, n.search)
	default:
		r = strings.HasSuffix(v.s, n.search)
	}
	return boolValue(r != n.not)
}
