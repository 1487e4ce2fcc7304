package filter

// Canonical text. Every node prints in a form that parses back to the
// same tree: keywords upper-case, one space around operators, parentheses
// only where the grammar needs them — and around a NOT that is an operand
// of a comparison, where "NOT a = 1" would read as NOT (a = 1) to a person
// though the grammar (like RocketMQ's) reads it as (NOT a) = 1.

func (n *propNode) format(b []byte) []byte      { return append(b, n.name...) }
func (n *constNode) format(b []byte) []byte     { return append(b, n.v.literal()...) }
func (n *boolConstNode) format(b []byte) []byte { return append(b, n.v.literal()...) }
func (n *castNode) format(b []byte) []byte      { return n.p.format(b) }

func (n *negNode) format(b []byte) []byte {
	b = append(b, '-')
	if _, ok := n.x.(*negNode); ok {
		// "--" would start a comment.
		return group(b, n.x)
	}
	return operand(b, n.x, precUnary)
}

func (n *notNode) format(b []byte) []byte {
	return operand(append(b, "NOT "...), n.x, precUnary)
}

func (n *logicNode) format(b []byte) []byte {
	sep, p := " AND ", precAnd+1
	if n.or {
		sep, p = " OR ", precOr+1
	}
	for i, x := range n.xs {
		if i > 0 {
			b = append(b, sep...)
		}
		b = operand(b, x, p)
	}
	return b
}

func (n *cmpNode) format(b []byte) []byte {
	lp, rp := precCmp, precUnary
	if n.op == opEq || n.op == opNe {
		lp, rp = precEq, precCmp
	}
	b = cmpOperand(b, n.l, lp)
	b = append(append(append(b, ' '), cmpText[n.op]...), ' ')
	return cmpOperand(b, n.r, rp)
}

func (n *isNullNode) format(b []byte) []byte {
	b = cmpOperand(b, n.x, precEq)
	if n.not {
		return append(b, " IS NOT NULL"...)
	}
	return append(b, " IS NULL"...)
}

func (n *betweenNode) format(b []byte) []byte {
	b = cmpOperand(b, n.x, precCmp)
	if n.not {
		b = append(b, " NOT"...)
	}
	b = cmpOperand(append(b, " BETWEEN "...), n.lo, precUnary)
	return cmpOperand(append(b, " AND "...), n.hi, precUnary)
}

func (n *inNode) format(b []byte) []byte {
	b = n.p.format(b)
	if n.not {
		b = append(b, " NOT"...)
	}
	b = append(b, " IN ("...)
	for i, s := range n.list {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, quote(s)...)
	}
	return append(b, ')')
}

func (n *strNode) format(b []byte) []byte {
	b = cmpOperand(b, n.x, precCmp)
	if n.not {
		b = append(b, " NOT"...)
	}
	b = append(append(append(b, ' '), strOpText[n.op]...), ' ')
	return append(b, quote(n.search)...)
}

// operand prints x, in parentheses if it binds more loosely than min.
func operand(b []byte, x node, min int) []byte {
	if x.prec() < min {
		return group(b, x)
	}
	return x.format(b)
}

// cmpOperand is operand for the operands of comparisons, which also
// parenthesizes NOT.
func cmpOperand(b []byte, x node, min int) []byte {
	if _, ok := x.(*notNode); ok {
		return group(b, x)
	}
	return operand(b, x, min)
}

func group(b []byte, x node) []byte {
	return append(x.format(append(b, '(')), ')')
}
