package filter

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Parse returns is a *ParseError wrapping one
// of ErrSyntax, ErrTooLong or ErrTooDeep; every error Selector.Eval returns
// wraps ErrEval. Callers branch with errors.Is, never on the text.
var (
	// ErrSyntax reports an expression RocketMQ's SQL92 parser would not
	// compile: a character or token out of place, a literal out of range,
	// or an operand of the wrong type for its operator (a string literal
	// after '>', a NULL after '=', a non-property left of IN, BETWEEN
	// bounds in the wrong order, …). The broker answers such a
	// subscription with SUBSCRIPTION_PARSE_FAILED.
	ErrSyntax = errors.New("filter: syntax error")

	// ErrTooLong reports an expression longer than MaxLen bytes.
	ErrTooLong = errors.New("filter: expression too long")

	// ErrTooDeep reports an expression whose syntax tree is deeper than
	// MaxDepth, or whose parentheses and prefix operators nest deeper than
	// MaxNesting.
	ErrTooDeep = errors.New("filter: expression nested too deeply")

	// ErrEval reports a comparison RocketMQ aborts at run time: a property
	// value that does not convert to the type of the number it is compared
	// with (RocketMQ's NumberFormatException), or a boolean literal on the
	// left of '=' with a string on the right (its ClassCastException). The
	// whole selector then does not match the message, whatever the rest of
	// it would have said.
	ErrEval = errors.New("filter: evaluation error")
)

// ParseError is the error Parse returns. Offset is the byte offset in the
// expression of the token (or character) the parser stopped at.
type ParseError struct {
	Err    error // ErrSyntax, ErrTooLong or ErrTooDeep
	Offset int
	Msg    string
}

// Error formats the error as "filter: syntax error at offset 7: <msg>".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%v at offset %d: %s", e.Err, e.Offset, e.Msg)
}

// Unwrap returns the sentinel, for errors.Is.
func (e *ParseError) Unwrap() error { return e.Err }

func syntaxErr(off int, format string, args ...any) *ParseError {
	return &ParseError{Err: ErrSyntax, Offset: off, Msg: fmt.Sprintf(format, args...)}
}
