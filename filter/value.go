package filter

import (
	"fmt"
	"math"
	"strings"
)

// kind is the run-time type of a value, one per Java class RocketMQ's
// evaluator meets: null, Boolean, Integer, Long, Double and String.
type kind uint8

const (
	kNull   kind = iota
	kBool        // n is 0 or 1
	kInt         // Java Integer: an int32, held in n
	kLong        // Java Long, held in n
	kDouble      // n holds the float64 bits
	kString      // s
	kErr         // evaluation aborted; n is an errCode, s the offending text
)

// value is the result of evaluating a node. It is small (32 bytes) and
// passed by value so that evaluation does not allocate: n holds a
// Boolean (0 or 1), an Integer or Long, or a Double's bits.
type value struct {
	k kind
	n int64
	s string
}

func (v value) bool() bool     { return v.n != 0 }
func (v value) float() float64 { return math.Float64frombits(uint64(v.n)) }

// errCode says why an evaluation aborted.
type errCode int64

const (
	errNotInt     errCode = iota + 1 // a string that Integer.valueOf rejects
	errNotLong                       // a string that Long.valueOf rejects
	errNotDouble                     // a string that Double.valueOf rejects
	errBoolString                    // Boolean compared with String
)

var (
	nullValue  = value{}
	trueValue  = value{k: kBool, n: 1}
	falseValue = value{k: kBool}
)

func boolValue(b bool) value {
	if b {
		return trueValue
	}
	return falseValue
}

func intValue(n int32) value             { return value{k: kInt, n: int64(n)} }
func longValue(n int64) value            { return value{k: kLong, n: n} }
func doubleValue(f float64) value        { return value{k: kDouble, n: int64(math.Float64bits(f))} }
func stringValue(s string) value         { return value{k: kString, s: s} }
func errValue(c errCode, s string) value { return value{k: kErr, n: int64(c), s: s} }

// err describes an aborted evaluation as an error wrapping ErrEval.
func (v value) err() error {
	switch errCode(v.n) {
	case errNotInt:
		return fmt.Errorf("%w: %q is not a 32-bit integer", ErrEval, v.s)
	case errNotLong:
		return fmt.Errorf("%w: %q is not a 64-bit integer", ErrEval, v.s)
	case errNotDouble:
		return fmt.Errorf("%w: %q is not a number", ErrEval, v.s)
	case errBoolString:
		return fmt.Errorf("%w: boolean compared with string %q", ErrEval, v.s)
	}
	return ErrEval
}

// literal formats a constant so that the lexer reads it back as the same
// constant: integers in decimal, doubles always with a '.' or an exponent,
// strings quoted.
func (v value) literal() string {
	switch v.k {
	case kNull:
		return "NULL"
	case kBool:
		if v.bool() {
			return "TRUE"
		}
		return "FALSE"
	case kInt, kLong:
		return fmt.Sprint(v.n)
	case kDouble:
		return formatDouble(v.float())
	case kString:
		return quote(v.s)
	}
	return "?"
}

func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 0):
		return "Infinity"
	}
	s := fmt.Sprint(f) // shortest representation that reads back exactly
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// quote writes s as a string literal: in single quotes, a quote doubled.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
