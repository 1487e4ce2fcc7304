package filter

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary text to Parse. It must not panic; an error
// must be a *ParseError with an offset inside the input; a selector must
// evaluate without panicking on properties drawn from pick, and its
// canonical text must parse back to a selector that prints the same and
// behaves the same.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"a > 5 AND TAGS IN ('x','y')",
		"a=3 and b<>4 And c>5 AND d<=4",
		"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
		"(a between 2 and 10) AND (b not between 6 and 9)",
		"a is not null and a='hello'",
		"TAGS is not null and TAGS='''''tag'''''",
		"a=3 and b contains 'xxx' and c not contains 'xxx'",
		"x startswith 'p' or y not endswith 's'",
		"NOT a = 1",
		"a > -(-5) OR b < 3000000000 OR c = 1.5e3",
		"a = b AND TRUE = c AND 1 = TRUE",
		"a /* c */ = 1 -- d\n OR NOT (b IS NULL)",
		"a BETWEEN 10 AND 0",
		"a > 0.0",
		"'x' IN ('x')",
		"((((a))))",
		"a = 'unterminated",
		"a != 1",
		"",
	}
	for i, s := range seeds {
		f.Add(s, []byte{byte(i), byte(3 * i), 17, 200})
	}
	f.Fuzz(func(t *testing.T, expr string, pick []byte) {
		s, err := Parse(expr)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): %T %v", expr, err, err)
			}
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrTooLong) && !errors.Is(err, ErrTooDeep) {
				t.Fatalf("Parse(%q): unknown sentinel in %v", expr, err)
			}
			if pe.Offset < 0 || (pe.Offset > len(expr) && !errors.Is(err, ErrTooLong)) {
				t.Fatalf("Parse(%q): offset %d outside the input", expr, pe.Offset)
			}
			return
		}
		if s.root.depth() > MaxDepth {
			t.Fatalf("Parse(%q): depth %d", expr, s.root.depth())
		}
		for i := 0; i < 3; i++ {
			props := propsFor(expr, rotate(pick, i))
			r, err := s.Eval(MapLookup(props))
			if err != nil && (r != Unknown || !errors.Is(err, ErrEval)) {
				t.Fatalf("%q on %v: %v, %v", expr, props, r, err)
			}
		}
		checkRoundTrip(t, s, pick)
	})
}

// FuzzJavaNumbers checks the property-string conversions, which read
// bytes from stored messages: no panic, and agreement with strconv on the
// inputs where Java's and Go's syntax coincide.
func FuzzJavaNumbers(f *testing.F) {
	for _, s := range []string{"0", "-2147483648", "9223372036854775808", "+5", "1.5e3", " 2.5d ", "NaN", "-Infinity", "0x1.8p1", "\u0661\u0662", "1e", ".", "1_0", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, bits := range []uint{32, 64} {
			n, ok := javaParseInt(s, bits)
			if !isASCII(s) {
				continue
			}
			want, err := strconv.ParseInt(s, 10, int(bits))
			if ok != (err == nil) || (ok && n != want) {
				t.Fatalf("javaParseInt(%q, %d) = %d, %v; strconv says %d, %v", s, bits, n, ok, want, err)
			}
		}
		f, ok := javaParseDouble(s)
		plain := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
		if !simpleDecimal(plain) {
			return
		}
		want, err := strconv.ParseFloat(plain, 64)
		if err != nil && !isRangeErr(err) {
			t.Fatalf("strconv rejects simple decimal %q: %v", plain, err)
		}
		if !ok || javaCompareDouble(f, want) != 0 {
			t.Fatalf("javaParseDouble(%q) = %v, %v; strconv says %v", s, f, ok, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// simpleDecimal reports whether s is [+-]? digits [. digits] [e [+-] digits]
// with at least one mantissa digit: the syntax both Java and strconv accept.
func simpleDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i = skipExponent(s, i+1); i < 0 {
			return false
		}
	}
	return i == len(s)
}
