package filter

// Limits on the expressions Parse accepts. They bound the work and the
// recursion spent on hostile input; RocketMQ itself has none.
const (
	// MaxLen is the longest expression, in bytes.
	MaxLen = 16 << 10
	// MaxDepth is the greatest height of the syntax tree: "a = 1" is 2
	// deep, "a = 1 AND b = 2" 3 (a chain of AND or of OR is one level).
	MaxDepth = 64
	// MaxNesting is the greatest number of parentheses and prefix
	// operators (NOT, -, +) open at one point of the text. It is twice
	// MaxDepth so that String of any accepted selector parses again.
	MaxNesting = 2 * MaxDepth
)

// Lookup returns the value of the message property name, and whether the
// message has it. RocketMQ keeps the tag in the property TAGS and the keys
// in KEYS, so "TAGS = 'a'" reads them through the same function.
type Lookup func(name string) (value string, ok bool)

// MapLookup returns a Lookup over a decoded property map.
func MapLookup(props map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := props[name]
		return v, ok
	}
}

// Result is the three-valued outcome of a selector.
type Result uint8

const (
	Unknown Result = iota // SQL's NULL, typically from a missing property
	False
	True
)

func (r Result) String() string {
	switch r {
	case False:
		return "FALSE"
	case True:
		return "TRUE"
	}
	return "UNKNOWN"
}

// Selector is a compiled SQL92 message selector. It is immutable: Match,
// Eval and String may be called from any number of goroutines at once.
type Selector struct {
	root node
}

// Parse compiles a selector as RocketMQ's SelectorParser.parse does,
// rejecting what it rejects. Errors are *ParseError values wrapping
// ErrSyntax, ErrTooLong or ErrTooDeep, with the byte offset of the fault.
// Parse never panics; its work grows linearly with len(expr), which is
// at most MaxLen.
func Parse(expr string) (*Selector, error) {
	if len(expr) > MaxLen {
		return nil, &ParseError{Err: ErrTooLong, Offset: MaxLen, Msg: "expression is longer than MaxLen bytes"}
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	root, err := p.parseSelector()
	if err != nil {
		return nil, err
	}
	return &Selector{root: root}, nil
}

// Match reports whether the selector is TRUE for the message whose
// properties lk reads. UNKNOWN, FALSE and an evaluation error (see
// ErrEval) all mean no match, as in RocketMQ's broker.
//
// lk is called on the calling goroutine, only during Match, possibly more
// than once for one name; a nil lk is a message without properties. Match
// does not allocate.
func (s *Selector) Match(lk Lookup) bool {
	v := s.root.eval(lk)
	return v.k == kBool && v.bool()
}

// Eval is Match with the reason: the selector's value for the message, or
// Unknown and an error wrapping ErrEval when RocketMQ's evaluation would
// throw (the broker logs it and skips the message).
func (s *Selector) Eval(lk Lookup) (Result, error) {
	v := s.root.eval(lk)
	switch v.k {
	case kErr:
		return Unknown, v.err()
	case kBool:
		if v.bool() {
			return True, nil
		}
		return False, nil
	}
	return Unknown, nil
}

// String returns the selector in canonical form: keywords in upper case,
// operators spaced, parentheses only where needed, comments dropped.
// Parse(s.String()) gives a selector that behaves identically, unless the
// canonical text exceeds MaxLen.
func (s *Selector) String() string {
	return string(s.root.format(nil))
}
