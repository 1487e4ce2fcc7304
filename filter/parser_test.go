package filter

import (
	"errors"
	"strings"
	"testing"
)

// TestParseValid parses expressions RocketMQ compiles and checks the
// canonical text of the result.
func TestParseValid(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// RocketMQ's ParserTest, valid cases.
		{"a=3 and b<>4 And c>5 AND d<=4", "a = 3 AND b <> 4 AND c > 5 AND d <= 4"},
		{"a=3  and    b<>4 And c>5 AND d<=4", "a = 3 AND b <> 4 AND c > 5 AND d <= 4"},
		{"a=3 or b<>4 Or c>5 OR d<=4", "a = 3 OR b <> 4 OR c > 5 OR d <= 4"},
		{"a in ('3', '4', '5')", "a IN ('3', '4', '5')"},
		{"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))", "a NOT IN ('6', '4', '5') OR b IN ('3', '4', '5')"},
		{"(a between 2 and 10) AND (b not between 6 and 9)", "a BETWEEN 2 AND 10 AND b NOT BETWEEN 6 AND 9"},
		{"a is null", "a IS NULL"},
		{"a is not null", "a IS NOT NULL"},
		{"a <= now", "a <= now"},
		{"a=3 and b contains 'xxx' and c not contains 'xxx'", "a = 3 AND b CONTAINS 'xxx' AND c NOT CONTAINS 'xxx'"},
		{"TAGS is not null and TAGS='''''tag'''''", "TAGS IS NOT NULL AND TAGS = '''''tag'''''"},

		// Keywords in any case; identifiers keep theirs.
		{"A = 1 aNd B = 2 oR NoT c", "A = 1 AND B = 2 OR NOT c"},
		{"a iS nUlL", "a IS NULL"},
		{"x StartsWith 'p' and y endswith 's'", "x STARTSWITH 'p' AND y ENDSWITH 's'"},
		{"x not startswith 'p' or y not endswith 's'", "x NOT STARTSWITH 'p' OR y NOT ENDSWITH 's'"},
		{"$a_1 = 'v' AND _b$ = 'w'", "$a_1 = 'v' AND _b$ = 'w'"},
		{"ANDROID = 'x' AND INX = 'y' AND isx = 1", "ANDROID = 'x' AND INX = 'y' AND isx = 1"},

		// Literals.
		{"a = 0", "a = 0"},
		{"a = 10L", "a = 10"},
		{"a = 10l", "a = 10"},
		{"a = 2147483647", "a = 2147483647"},
		{"a = 2147483648", "a = 2147483648"},
		{"a = 9223372036854775807", "a = 9223372036854775807"},
		{"a = -9223372036854775807", "a = -9223372036854775807"},
		{"a > 3.14", "a > 3.14"},
		{"a > 5.", "a > 5.0"},
		{"a > .5", "a > 0.5"},
		{"a > 5E10", "a > 5e+10"},
		{"a > 5.5e-3", "a > 0.0055"},
		{"a > 1.e2", "a > 100.0"},
		{"a > 007.5", "a > 7.5"},
		{"a > 00e1", ""}, // zero: see invalid
		{"a > 4.9E-324", "a > 5e-324"},
		{"a > 1.7976931348623157e308", "a > 1.7976931348623157e+308"},
		{"a = 'it''s'", "a = 'it''s'"},
		{"a = ''", "a = ''"},
		{"a = '\n\t ü 中'", "a = '\n\t ü 中'"},
		{"TRUE", "TRUE"},
		{"false", "FALSE"},
		{"NULL", "NULL"},
		{"a", "a"},
		{"(a)", "a"},
		{"NOT a", "NOT a"},
		{"NOT NULL", "NOT NULL"},
		{"NOT NOT a", "NOT NOT a"},

		// Unary plus disappears; minus stays a node.
		{"a > +5", "a > 5"},
		{"a > -5", "a > -5"},
		{"a > - -5", "a > -(-5)"},
		{"a > -(-(5))", "a > -(-5)"},
		{"a > -b", "a > -b"},
		{"a > -'x'", "a > -'x'"},
		{"a = -NULL", "a = -NULL"},
		{"a = -TRUE", "a = -TRUE"},
		{"a = -(b = 1)", "a = -(b = 1)"},
		{"a = -NOT b", "a = -NOT b"},
		{"+a IN ('x')", "a IN ('x')"},
		{"a BETWEEN -1 AND -5", "a BETWEEN -1 AND -5"},

		// NOT binds tighter than comparisons.
		{"NOT a = 1", "(NOT a) = 1"},
		{"NOT a IS NULL", "(NOT a) IS NULL"},
		{"NOT a CONTAINS 'x'", "(NOT a) CONTAINS 'x'"},
		{"NOT (a = 1)", "NOT (a = 1)"},

		// Equality operands may be anything but the NULL literal.
		{"a = b", "a = b"},
		{"1 = TRUE", "1 = TRUE"},
		{"'true' = TRUE", "'true' = TRUE"},
		{"TRUE = FALSE", "TRUE = FALSE"},
		{"TRUE = a", "TRUE = a"},
		{"a = TRUE", "a = TRUE"},
		{"(a = 1) = (b = 2)", "a = 1 = (b = 2)"},
		{"a = 1 = TRUE", "a = 1 = TRUE"},
		{"a IS NULL = TRUE", "a IS NULL = TRUE"},
		{"a IS NULL IS NULL", "a IS NULL IS NULL"},
		{"5 IS NULL", "5 IS NULL"},
		{"NULL IS NULL", "NULL IS NULL"},
		{"'x' = 'y'", "'x' = 'y'"},
		{"1 = 1", "1 = 1"},
		{"1 <> 2.5", "1 <> 2.5"},

		// Ordering operands: properties, numbers, negations.
		{"1 < 2", "1 < 2"},
		{"5 BETWEEN 1 AND 10", "5 BETWEEN 1 AND 10"},
		{"a BETWEEN b AND c", "a BETWEEN b AND c"},
		{"a BETWEEN 1 AND 1", "a BETWEEN 1 AND 1"},
		{"a BETWEEN 1 AND 1.5", "a BETWEEN 1 AND 1.5"},
		{"a BETWEEN 1 AND 3000000000", "a BETWEEN 1 AND 3000000000"},
		{"a NOT BETWEEN 10 AND 0", "a NOT BETWEEN 10 AND 0"},
		{"a BETWEEN 1 AND 2 AND b = 1", "a BETWEEN 1 AND 2 AND b = 1"},

		// CONTAINS and friends take anything on the left.
		{"5 CONTAINS 'x'", "5 CONTAINS 'x'"},
		{"TRUE STARTSWITH 'x'", "TRUE STARTSWITH 'x'"},
		{"(a = 1) ENDSWITH 'x'", "(a = 1) ENDSWITH 'x'"},
		{"a CONTAINS 'x' CONTAINS 'y'", "a CONTAINS 'x' CONTAINS 'y'"},
		{"'axb' NOT CONTAINS ''", "'axb' NOT CONTAINS ''"},

		// AND/OR chains are flattened; precedence is kept.
		{"a = 1 OR b = 2 AND c = 3", "a = 1 OR b = 2 AND c = 3"},
		{"(a = 1 OR b = 2) AND c = 3", "(a = 1 OR b = 2) AND c = 3"},
		{"a AND (b AND (c AND d))", "a AND b AND c AND d"},
		{"(a OR b) OR (c OR d)", "a OR b OR c OR d"},
		{"NOT (a AND b)", "NOT (a AND b)"},

		// Whitespace and comments.
		{" \t\r\n\fa\f=\n1 ", "a = 1"},
		{"a = 1 -- the rest\n AND b = 2", "a = 1 AND b = 2"},
		{"a = 1 --trailing", "a = 1"},
		{"a = 1 --\r AND b = 2", "a = 1 AND b = 2"},
		{"a /* x */ = /***/ 1 /* ** / */", "a = 1"},
		{"a=1AND b=2", "a = 1 AND b = 2"}, // "1AND": number then keyword
	}
	for _, tt := range tests {
		if tt.want == "" {
			continue
		}
		s, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := s.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestParseInvalid checks expressions RocketMQ refuses to compile (and the
// trailing-input cases this package refuses on purpose), the sentinel and
// the offset reported.
func TestParseInvalid(t *testing.T) {
	tests := []struct {
		in     string
		err    error
		offset int
		msg    string // substring of the message
	}{
		// RocketMQ's ParserTest, invalid cases.
		{"a and between 2 and 10", ErrSyntax, 6, "unexpected BETWEEN"},
		{"a > 100000000000000000000000", ErrSyntax, 4, "out of range"},
		{"a > 9223372036854775808", ErrSyntax, 4, "out of range"},
		{"a > -9223372036854775808", ErrSyntax, 5, "out of range"},
		{"a > 1" + strings.Repeat("1", 400) + ".5", ErrSyntax, 4, "too large"},
		{" a between 10 and 0", ErrSyntax, 3, "greater than"},
		// RocketMQ's ExpressionTest, parse failures.
		{"value contains x", ErrSyntax, 15, "expected a string literal"},
		{"value not contains x", ErrSyntax, 19, "expected a string literal"},
		{"value contains 123", ErrSyntax, 15, "expected a string literal"},
		{"'axb' contains ", ErrSyntax, 15, "end of expression"},
		{"'axb' not contains ", ErrSyntax, 19, "end of expression"},

		// Lexical.
		{"", ErrSyntax, 0, "unexpected end"},
		{"   ", ErrSyntax, 3, "unexpected end"},
		{"-- only a comment", ErrSyntax, 17, "unexpected end"},
		{"a != 1", ErrSyntax, 2, "'!'"},
		{"a == 1", ErrSyntax, 3, `unexpected "="`},
		{"a = 'abc", ErrSyntax, 4, "unterminated string"},
		{"a = 1 /* x", ErrSyntax, 6, "unterminated /*"},
		{"a.b = 1", ErrSyntax, 1, "'.'"},
		{"a-b = 1", ErrSyntax, 1, `unexpected "-"`},
		{"ü = 1", ErrSyntax, 0, "'ü'"},
		{"a = 1 & b = 2", ErrSyntax, 6, "'&'"},
		{"a = \"x\"", ErrSyntax, 4, `'"'`},
		{"a\v= 1", ErrSyntax, 1, `'\v'`},
		{"a = 0x10", ErrSyntax, 5, "identifier x10"},
		{"a = 012", ErrSyntax, 5, "number 12"},
		{"a = 0L", ErrSyntax, 5, "identifier L"},
		{"a = 5e", ErrSyntax, 5, "identifier e"},
		{"a = 1.2.3", ErrSyntax, 7, "number .3"},
		{"a = 1 -- x\n b", ErrSyntax, 12, "identifier b"},

		// Trailing input, which RocketMQ would ignore.
		{"a = 1 b = 2", ErrSyntax, 6, "after a complete expression"},
		{"a = 1)", ErrSyntax, 5, `")" after`},
		{"a = 1 'x'", ErrSyntax, 6, "after a complete"},

		// Grammar.
		{"a =", ErrSyntax, 3, "unexpected end"},
		{"(a = 1", ErrSyntax, 6, "expected )"},
		{"a = 1 AND", ErrSyntax, 9, "unexpected end"},
		{"a NOT = 1", ErrSyntax, 6, "after NOT"},
		{"a NOT", ErrSyntax, 5, "after NOT"},
		{"a IS 1", ErrSyntax, 5, "expected NULL"},
		{"a IS NOT 1", ErrSyntax, 9, "expected NULL"},
		{"a IN 'x'", ErrSyntax, 5, "expected ("},
		{"a IN ()", ErrSyntax, 6, "string literal in the IN list"},
		{"a IN (1, 2)", ErrSyntax, 6, "string literal in the IN list"},
		{"a IN ('x' 'y')", ErrSyntax, 10, "expected , or )"},
		{"a IN ('x',)", ErrSyntax, 10, "string literal"},
		{"a BETWEEN 1 OR 2", ErrSyntax, 12, "expected AND"},
		{"a BETWEEN 1 AND 2 AND", ErrSyntax, 21, "unexpected end"},
		{"a > 1 +2", ErrSyntax, 6, "after a complete"},

		// Not boolean where a boolean is needed.
		{"5", ErrSyntax, 0, "does not yield a boolean"},
		{"'x'", ErrSyntax, 0, "does not yield a boolean"},
		{"-a", ErrSyntax, 0, "does not yield a boolean"},
		{"a AND 'x'", ErrSyntax, 2, "does not yield"},
		{"1 OR a", ErrSyntax, 2, "does not yield"},
		{"NOT 5", ErrSyntax, 0, "does not yield"},
		{"NOT -a", ErrSyntax, 0, "does not yield"},

		// Ordering operands.
		{"a > 'x'", ErrSyntax, 2, "cannot be ordered"},
		{"'x' < a", ErrSyntax, 4, "cannot be ordered"},
		{"a > TRUE", ErrSyntax, 2, "cannot be ordered"},
		{"a >= NULL", ErrSyntax, 2, "cannot be ordered"},
		{"a > b > c", ErrSyntax, 6, "cannot be ordered"},
		{"(a = 1) < 2", ErrSyntax, 8, "cannot be ordered"},
		{"NOT a > 1", ErrSyntax, 6, "cannot be ordered"},
		{"a BETWEEN 'a' AND 'z'", ErrSyntax, 2, "cannot be ordered"},
		{"a BETWEEN 1 AND 'z'", ErrSyntax, 2, ""},
		{"a BETWEEN NULL AND 1", ErrSyntax, 2, "cannot be NULL"},
		{"a NOT BETWEEN NULL AND 1", ErrSyntax, 2, "cannot be ordered"},
		{"'5' BETWEEN 1 AND 10", ErrSyntax, 4, "cannot be ordered"},
		{"a BETWEEN TRUE AND FALSE", ErrSyntax, 2, ""},
		{"a BETWEEN 2.5 AND 2", ErrSyntax, 2, "greater than"},
		{"a BETWEEN 3000000000 AND 2", ErrSyntax, 2, "greater than"},

		// Equality operands.
		{"a = NULL", ErrSyntax, 2, "IS NULL"},
		{"NULL = a", ErrSyntax, 5, "IS NULL"},
		{"a <> NULL", ErrSyntax, 2, "IS NULL"},
		{"TRUE = 1", ErrSyntax, 5, "cannot be compared"},
		{"FALSE <> 'false'", ErrSyntax, 6, "cannot be compared"},

		// IN needs a property.
		{"'a' IN ('a')", ErrSyntax, 4, "needs a property"},
		{"NOT a IN ('x')", ErrSyntax, 6, "needs a property"},
		{"-a IN ('x')", ErrSyntax, 3, "needs a property"},
		{"(a = 1) NOT IN ('x')", ErrSyntax, 8, "needs a property"},

		// Float literals RocketMQ rejects.
		{"a > 0.0", ErrSyntax, 4, "zero or too small"},
		{"a > 0.", ErrSyntax, 4, "zero or too small"},
		{"a > .0", ErrSyntax, 4, "zero or too small"},
		{"a > 00e1", ErrSyntax, 4, "zero or too small"},
		{"a > 1e-400", ErrSyntax, 4, "zero or too small"},
		{"a > 1e309", ErrSyntax, 4, "too large"},

		// Limits.
		{strings.Repeat(" ", MaxLen+1), ErrTooLong, MaxLen, ""},
		{strings.Repeat("(", MaxNesting+1) + "a" + strings.Repeat(")", MaxNesting+1), ErrTooDeep, MaxNesting, ""},
		{strings.Repeat("NOT ", MaxNesting+1) + "a", ErrTooDeep, 4 * MaxNesting, "nest"},
		{strings.Repeat("NOT ", MaxDepth-1) + "a", ErrTooDeep, 0, "tree"},
		{"a > " + strings.Repeat("+", MaxNesting+1) + "5", ErrTooDeep, 4 + MaxNesting, "nest"},
		{"a" + strings.Repeat(" = 1", MaxDepth), ErrTooDeep, 2 + 4*(MaxDepth-1), ""},
		{"a" + strings.Repeat(" CONTAINS 'x'", MaxDepth), ErrTooDeep, 2 + 13*(MaxDepth-1), ""},
	}
	for _, tt := range tests {
		s, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%.60q) = %q, want error", tt.in, s)
			continue
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("Parse(%.60q): %v, want %v", tt.in, err, tt.err)
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%.60q): %T is not a *ParseError", tt.in, err)
			continue
		}
		if pe.Offset != tt.offset {
			t.Errorf("Parse(%.60q): offset %d, want %d (%v)", tt.in, pe.Offset, tt.offset, err)
		}
		if !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("Parse(%.60q): %q does not mention %q", tt.in, pe.Msg, tt.msg)
		}
	}
}

// TestParseLimits checks that the limits are not off by one, and that
// chains of AND and OR do not count against the depth.
func TestParseLimits(t *testing.T) {
	valid := []string{
		strings.Repeat("(", MaxNesting) + "a" + strings.Repeat(")", MaxNesting),
		strings.Repeat("NOT ", MaxDepth-2) + "a", // NOTs, a cast and a property
		"a > " + strings.Repeat("+", MaxNesting) + "5",
		"a" + strings.Repeat(" = 1", MaxDepth-1),
		"TAGS IN (" + strings.Repeat("'tag', ", (MaxLen-20)/7) + "'x')",
	}
	chain := "a = 1"
	for len(chain)+len(" AND a = 1") <= MaxLen {
		chain += " AND a = 1"
	}
	valid = append(valid, chain, strings.ReplaceAll(chain, "AND", "OR"))
	for _, in := range valid {
		if len(in) > MaxLen {
			t.Fatalf("test input is %d bytes", len(in))
		}
		if _, err := Parse(in); err != nil {
			t.Errorf("Parse(%.60q…): %v", in, err)
		}
	}
}

func TestParseErrorText(t *testing.T) {
	_, err := Parse("a = 1)")
	want := `filter: syntax error at offset 5: unexpected ")" after a complete expression`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
