package filter

// The parser is a recursive descent over the token slice, one function per
// level of RocketMQ's grammar (SelectorParser.jj), building the tree and
// running RocketMQ's type checks as it goes. Recursion happens only at
// parentheses and prefix operators, and p.nest bounds it.

type parser struct {
	toks []token
	i    int
	nest int // parentheses and prefix operators currently open
}

func (p *parser) peek() token { return p.toks[p.i] }

// peek2 is the token after the next one (tEOF at the end).
func (p *parser) peek2() token {
	if p.i+1 < len(p.toks) {
		return p.toks[p.i+1]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) expect(k tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != k {
		return t, syntaxErr(t.pos, "expected %s, found %s", what, t.describe())
	}
	return t, nil
}

// enter opens one level of nesting at a parenthesis or prefix operator.
func (p *parser) enter(t token) error {
	p.nest++
	if p.nest > MaxNesting {
		return &ParseError{Err: ErrTooDeep, Offset: t.pos, Msg: "parentheses and prefix operators nest too deeply"}
	}
	return nil
}

// built checks the depth of a node just built by the operator at pos; it
// passes a constructor's error through.
func built(pos int, n node, err error) (node, error) {
	if err != nil {
		return nil, err
	}
	if n.depth() > MaxDepth {
		return nil, &ParseError{Err: ErrTooDeep, Offset: pos, Msg: "expression tree too deep"}
	}
	return n, nil
}

// parseSelector parses a whole expression: orExpression, then the end of
// the input (RocketMQ's grammar does not require the end; see doc.go).
func (p *parser) parseSelector() (node, error) {
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, syntaxErr(t.pos, "unexpected %s after a complete expression", t.describe())
	}
	return asBoolean(n, 0)
}

// parseOr: andExpr { OR andExpr }
func (p *parser) parseOr() (node, error) {
	left, err := p.parseAnd()
	for err == nil && p.peek().kind == tOr {
		op := p.next()
		var right node
		if right, err = p.parseAnd(); err == nil {
			n, e := newLogic(true, left, right, op.pos)
			left, err = built(op.pos, n, e)
		}
	}
	return left, err
}

// parseAnd: equality { AND equality }
func (p *parser) parseAnd() (node, error) {
	left, err := p.parseEquality()
	for err == nil && p.peek().kind == tAnd {
		op := p.next()
		var right node
		if right, err = p.parseEquality(); err == nil {
			n, e := newLogic(false, left, right, op.pos)
			left, err = built(op.pos, n, e)
		}
	}
	return left, err
}

// parseEquality: comparison { ("=" | "<>") comparison | IS [NOT] NULL }
func (p *parser) parseEquality() (node, error) {
	left, err := p.parseComparison()
	for err == nil {
		op := p.peek()
		switch op.kind {
		case tEq, tNe:
			p.next()
			var right node
			if right, err = p.parseComparison(); err != nil {
				return nil, err
			}
			cop := opEq
			if op.kind == tNe {
				cop = opNe
			}
			n, e := newCmp(cop, left, right, op.pos)
			left, err = built(op.pos, n, e)
		case tIs:
			p.next()
			not := false
			if p.peek().kind == tNot {
				p.next()
				not = true
			}
			if _, err = p.expect(tNull, "NULL after IS"); err != nil {
				return nil, err
			}
			left, err = built(op.pos, &isNullNode{x: left, not: not, d: height(left)}, nil)
		default:
			return left, nil
		}
	}
	return nil, err
}

// parseComparison parses
//
//	unary { ( ">" | ">=" | "<" | "<=" ) unary
//	      | [ NOT ] ( CONTAINS | STARTSWITH | ENDSWITH ) string
//	      | [ NOT ] BETWEEN unary AND unary
//	      | [ NOT ] IN "(" string { "," string } ")" }
func (p *parser) parseComparison() (node, error) {
	left, err := p.parseUnary()
	for err == nil {
		op := p.peek()
		not := false
		kind := op.kind
		if kind == tNot {
			switch k := p.peek2().kind; k {
			case tContains, tStartsWith, tEndsWith, tBetween, tIn:
				p.next()
				not, kind = true, k
			default:
				return nil, syntaxErr(p.peek2().pos, "expected CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT, found %s", p.peek2().describe())
			}
		}
		switch kind {
		case tGt, tGe, tLt, tLe:
			p.next()
			var right node
			if right, err = p.parseUnary(); err != nil {
				return nil, err
			}
			cop := orderOp(kind)
			n, e := newCmp(cop, left, right, op.pos)
			left, err = built(op.pos, n, e)
		case tContains, tStartsWith, tEndsWith:
			p.next()
			var s token
			if s, err = p.expect(tString, "a string literal"); err != nil {
				return nil, err
			}
			sop := searchOp(kind)
			left, err = built(op.pos, &strNode{op: sop, x: left, search: s.text, not: not, d: height(left)}, nil)
		case tBetween:
			p.next()
			var lo, hi node
			if lo, err = p.parseUnary(); err != nil {
				return nil, err
			}
			if _, err = p.expect(tAnd, "AND in BETWEEN"); err != nil {
				return nil, err
			}
			if hi, err = p.parseUnary(); err != nil {
				return nil, err
			}
			n, e := newBetween(left, lo, hi, not, op.pos)
			left, err = built(op.pos, n, e)
		case tIn:
			p.next()
			var list []string
			if list, err = p.parseInList(); err != nil {
				return nil, err
			}
			n, e := newIn(left, list, not, op.pos)
			left, err = built(op.pos, n, e)
		default:
			return left, nil
		}
	}
	return nil, err
}

// parseInList: "(" string { "," string } ")"
func (p *parser) parseInList() ([]string, error) {
	if _, err := p.expect(tLParen, "( after IN"); err != nil {
		return nil, err
	}
	var list []string
	for {
		s, err := p.expect(tString, "a string literal in the IN list")
		if err != nil {
			return nil, err
		}
		list = append(list, s.text)
		t := p.next()
		switch t.kind {
		case tRParen:
			return list, nil
		case tComma:
		default:
			return nil, syntaxErr(t.pos, "expected , or ) in the IN list, found %s", t.describe())
		}
	}
}

// parseUnary: "+" unary | "-" unary | NOT unary | primary
func (p *parser) parseUnary() (node, error) {
	t := p.peek()
	switch t.kind {
	case tPlus, tMinus, tNot:
	default:
		return p.parsePrimary()
	}
	p.next()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	x, err := p.parseUnary()
	p.nest--
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tPlus:
		return x, nil // RocketMQ's unary plus is the operand itself
	case tMinus:
		return built(t.pos, &negNode{x: x, d: height(x)}, nil)
	}
	n, err := newNot(x, t.pos)
	return built(t.pos, n, err)
}

// parsePrimary: literal | identifier | "(" orExpr ")"
func (p *parser) parsePrimary() (node, error) {
	t := p.next()
	switch t.kind {
	case tString:
		return &constNode{v: stringValue(t.text)}, nil
	case tInt:
		return newInt(t)
	case tFloat:
		return newFloat(t)
	case tTrue:
		return &boolConstNode{v: trueValue}, nil
	case tFalse:
		return &boolConstNode{v: falseValue}, nil
	case tNull:
		return &boolConstNode{v: nullValue}, nil
	case tIdent:
		return &propNode{name: t.text}, nil
	case tLParen:
		if err := p.enter(t); err != nil {
			return nil, err
		}
		x, err := p.parseOr()
		p.nest--
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return x, nil
	}
	return nil, syntaxErr(t.pos, "unexpected %s", t.describe())
}

func orderOp(k tokKind) cmpOp {
	switch k {
	case tGt:
		return opGt
	case tGe:
		return opGe
	case tLt:
		return opLt
	}
	return opLe
}

func searchOp(k tokKind) strOp {
	switch k {
	case tContains:
		return opContains
	case tStartsWith:
		return opStartsWith
	}
	return opEndsWith
}
