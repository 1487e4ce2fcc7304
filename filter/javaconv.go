package filter

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file reproduces the Java library behaviour RocketMQ's evaluator
// depends on: Integer.valueOf, Long.valueOf, Double.valueOf and
// Boolean.valueOf on property strings, and the ordering of
// ComparisonExpression.__compare.

// javaParseInt parses s as Integer.valueOf (bits 32) or Long.valueOf
// (bits 64) do: an optional ASCII sign, then one or more decimal digits,
// nothing else (no spaces, no '.', no exponent, no suffix). Any Unicode
// decimal digit of the Basic Multilingual Plane counts, as Java's
// Character.digit allows; a digit outside it is two UTF-16 units to Java
// and none of them a digit.
func javaParseInt(s string, bits uint) (int64, bool) {
	if s == "" {
		return 0, false
	}
	i, neg := 0, false
	switch s[0] {
	case '-':
		i, neg = 1, true
	case '+':
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	limit := uint64(1)<<(bits-1) - 1
	if neg {
		limit++
	}
	var acc uint64
	for i < len(s) {
		var d int
		if c := s[i]; c < utf8.RuneSelf {
			if !isDigit(c) {
				return 0, false
			}
			d = int(c - '0')
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if d = unicodeDigit(r); d < 0 {
				return 0, false
			}
			i += size
		}
		if acc > (limit-uint64(d))/10 {
			return 0, false
		}
		acc = acc*10 + uint64(d)
	}
	if neg {
		return -int64(acc), true // acc == 1<<63 wraps to MinInt64, as wanted
	}
	return int64(acc), true
}

// unicodeDigit is Character.digit(r, 10) for r beyond ASCII: the value of
// a decimal digit (general category Nd) in the BMP, or -1. Nd digits come
// in runs of ten, 0 to 9, so a digit's value is its distance from the
// start of its range modulo ten (TestUnicodeDigitRuns checks the tables).
func unicodeDigit(r rune) int {
	if r > 0xFFFF || r == utf8.RuneError {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			if rg.Stride != 1 {
				return -1
			}
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// javaParseDouble parses s as Double.valueOf does:
//
//   - leading and trailing characters up to U+0020 are trimmed;
//   - an optional sign, then "NaN", "Infinity", a hexadecimal literal
//     ([+-]?0[xX] hex digits with an optional '.', then [pP] exponent) or
//     a decimal one (digits with at most one '.', at least one digit,
//     optional [eE][+-]?digits), either optionally followed by one of
//     [fFdD];
//   - digits are ASCII only; anything else is rejected.
//
// Overflow gives ±Inf and underflow ±0, as in Java.
func javaParseDouble(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if s == "" {
		return 0, false
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	rest := s[i:]
	switch {
	case rest[0] == 'N':
		return math.NaN(), rest == "NaN"
	case rest[0] == 'I':
		if rest != "Infinity" {
			return 0, false
		}
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case len(rest) > 1 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X'):
		return javaParseHex(s, i+2)
	}
	j, digits, dot := i, 0, false
	for ; j < len(s); j++ {
		if c := s[j]; isDigit(c) {
			digits++
		} else if c == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	if digits == 0 {
		return 0, false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		if j = skipExponent(s, j+1); j < 0 {
			return 0, false
		}
	}
	return finishFloat(s, j)
}

// javaParseHex parses the hexadecimal form; s[j:] follows the "0x".
func javaParseHex(s string, j int) (float64, bool) {
	digits := 0
	for j < len(s) && isHexDigit(s[j]) {
		j, digits = j+1, digits+1
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isHexDigit(s[j]) {
			j, digits = j+1, digits+1
		}
	}
	if digits == 0 || j == len(s) || (s[j] != 'p' && s[j] != 'P') {
		return 0, false
	}
	if j = skipExponent(s, j+1); j < 0 {
		return 0, false
	}
	return finishFloat(s, j)
}

// skipExponent skips [+-]?digits starting at s[j]; it returns the offset
// after them, or -1 if there is no digit.
func skipExponent(s string, j int) int {
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	start := j
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == start {
		return -1
	}
	return j
}

// finishFloat accepts one optional type suffix at s[j] and converts
// s[:j], which the callers have checked to be a well-formed number.
func finishFloat(s string, j int) (float64, bool) {
	if j < len(s) {
		if j != len(s)-1 || strings.IndexByte("fFdD", s[j]) < 0 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s[:j], 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isHexDigit(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// javaParseBool is Boolean.valueOf: true for "true" in any case, else
// false. (No character outside ASCII upper- or lower-cases to a letter of
// "true", so an ASCII comparison is exact.)
func javaParseBool(s string) bool {
	return len(s) == 4 && strings.EqualFold(s, "true")
}

// javaCompareDouble is Double.compare: numeric order, except that -0.0
// sorts before 0.0 and NaN after +Inf and equal to itself.
func javaCompareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := canonicalBits(a), canonicalBits(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}

func canonicalBits(f float64) int64 {
	if math.IsNaN(f) {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// javaCompare is ComparisonExpression.__compare with string conversion on
// (RocketMQ always compiles with it on). Operands of different types are
// first converted towards each other:
//
//	left \ right  Boolean     Integer      Long        Double       String
//	Boolean       -           -1           -1          -1           abort (ClassCastException)
//	Integer       -1          -            left→Long   left→Double  right→Integer.valueOf
//	Long          -1          right→Long   -           left→Double  right→Long.valueOf
//	Double        -1          right→Double right→Double -           right→Double.valueOf
//	String        left→Boolean.valueOf  left→Integer.valueOf  left→Long.valueOf  left→Double.valueOf  -
//
// "-1" means the operands are incomparable and the answer is "less". A
// failed conversion aborts the evaluation: the returned value is then a
// kErr value (and the int is meaningless); otherwise it is the null value.
// Neither operand may be null.
func javaCompare(l, r value) (int, value) {
	if l.k != r.k {
		switch l.k {
		case kBool:
			if r.k == kString {
				return 0, errValue(errBoolString, r.s)
			}
			return -1, nullValue
		case kInt:
			switch r.k {
			case kLong:
				l.k = kLong
			case kDouble:
				l = doubleValue(float64(l.n))
			case kString:
				n, ok := javaParseInt(r.s, 32)
				if !ok {
					return 0, errValue(errNotInt, r.s)
				}
				r = intValue(int32(n))
			default:
				return -1, nullValue
			}
		case kLong:
			switch r.k {
			case kInt:
				r.k = kLong
			case kDouble:
				l = doubleValue(float64(l.n))
			case kString:
				n, ok := javaParseInt(r.s, 64)
				if !ok {
					return 0, errValue(errNotLong, r.s)
				}
				r = longValue(n)
			default:
				return -1, nullValue
			}
		case kDouble:
			switch r.k {
			case kInt, kLong:
				r = doubleValue(float64(r.n))
			case kString:
				f, ok := javaParseDouble(r.s)
				if !ok {
					return 0, errValue(errNotDouble, r.s)
				}
				r = doubleValue(f)
			default:
				return -1, nullValue
			}
		case kString:
			switch r.k {
			case kBool:
				l = boolValue(javaParseBool(l.s))
			case kInt:
				n, ok := javaParseInt(l.s, 32)
				if !ok {
					return 0, errValue(errNotInt, l.s)
				}
				l = intValue(int32(n))
			case kLong:
				n, ok := javaParseInt(l.s, 64)
				if !ok {
					return 0, errValue(errNotLong, l.s)
				}
				l = longValue(n)
			case kDouble:
				f, ok := javaParseDouble(l.s)
				if !ok {
					return 0, errValue(errNotDouble, l.s)
				}
				l = doubleValue(f)
			default:
				return -1, nullValue
			}
		default:
			return -1, nullValue
		}
	}
	switch l.k {
	case kBool:
		switch {
		case l.bool() == r.bool():
			return 0, nullValue
		case l.bool():
			return 1, nullValue
		}
		return -1, nullValue
	case kInt, kLong:
		switch {
		case l.n < r.n:
			return -1, nullValue
		case l.n > r.n:
			return 1, nullValue
		}
		return 0, nullValue
	case kDouble:
		return javaCompareDouble(l.float(), r.float()), nullValue
	case kString:
		// Only equality is observable: '>' and friends turn two strings
		// into doubles before they get here.
		return strings.Compare(l.s, r.s), nullValue
	}
	return -1, nullValue
}
