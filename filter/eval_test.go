package filter

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// p builds a property map from alternating names and values.
func p(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// E marks an evaluation that aborts (ErrEval).
const E Result = 255

type evalCase struct {
	expr  string
	props map[string]string
	want  Result
}

func runEval(t *testing.T, tests []evalCase) {
	t.Helper()
	for _, tt := range tests {
		s, err := Parse(tt.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		got, err := s.Eval(MapLookup(tt.props))
		switch {
		case tt.want == E:
			if !errors.Is(err, ErrEval) || got != Unknown {
				t.Errorf("%q on %v = %v, %v; want an ErrEval", tt.expr, tt.props, got, err)
			}
		case err != nil || got != tt.want:
			t.Errorf("%q on %v = %v, %v; want %v", tt.expr, tt.props, got, err, tt.want)
		}
		if m := s.Match(MapLookup(tt.props)); m != (tt.want == True) {
			t.Errorf("%q on %v: Match = %v", tt.expr, tt.props, m)
		}
	}
}

// TestEvalRocketMQ replays RocketMQ's ExpressionTest with the property
// values as strings (a broker only ever sees strings). Cases there that
// feed non-string Java objects as properties have no counterpart.
func TestEvalRocketMQ(t *testing.T) {
	axb, abb := p("value", "axb"), p("value", "abb")
	runEval(t, []evalCase{
		{"value contains 'x'", axb, True},
		{"value startswith 'ax'", axb, True},
		{"value endswith 'xb'", axb, True},
		{"value not contains 'x'", axb, False},
		{"value not startswith 'ax'", axb, False},
		{"value not endswith 'xb'", axb, False},
		{"value contains 'x'", abb, False},
		{"value startswith 'x'", abb, False},
		{"value endswith 'x'", abb, False},
		{"value not contains 'x'", abb, True},
		{"value not startswith 'x'", abb, True},
		{"value not endswith 'x'", abb, True},
		{"value contains ''", axb, False},
		{"value startswith ''", axb, False},
		{"value endswith ''", axb, False},
		{"value not contains ''", axb, False},
		{"value not startswith ''", axb, False},
		{"value not endswith ''", axb, False},
		{"value contains 'x'", nil, False},
		{"value startswith 'x'", nil, False},
		{"value endswith 'x'", nil, False},
		{"value not contains 'x'", nil, False},
		{"value not startswith 'x'", nil, False},
		{"value not endswith 'x'", nil, False},
		{"'axb' contains 'x'", nil, True},
		{"'axb' startswith 'ax'", nil, True},
		{"'axb' endswith 'xb'", nil, True},
		{"'axb' not contains 'x'", nil, False},
		{"'axb' not startswith 'ax'", nil, False},
		{"'axb' not endswith 'xb'", nil, False},
		{"'axb' contains 'u'", nil, False},
		{"'axb' not contains 'u'", nil, True},
		{"'axb' not startswith 'u'", nil, True},
		{"'axb' not endswith 'u'", nil, True},
		{"'axb' contains ''", nil, False},
		{"'axb' not endswith ''", nil, False},
		{"' ' contains ' '", nil, True},
		{"' ' startswith ' '", nil, True},
		{"' ' endswith ' '", nil, True},
		{"' ' not contains ' '", nil, False},
		{"'axb' contains '.'", nil, False},
		{"'axb' not startswith '.'", nil, True},
		{`'s' contains '\'`, nil, False},
		{`'s' endswith '\'`, nil, False},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'", p("a", "3", "b", "3", "c", "axbdc"), True},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not startswith 'axbc'", p("a", "3", "b", "3", "c", "axbdc"), True},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not endswith 'axbc'", p("a", "3", "b", "3", "c", "axbdc"), True},
		{"TAGS is not null and TAGS='''''tag'''''", p("TAGS", "''tag''"), True},
		{"a between up and low", p("a", "3.14"), Unknown},
		{"a between up and low", p("a", "3.14", "up", "up", "low", "low"), E},
		{"key is not null and key between 0 and 100", p("key", "con"), E},
		{"a between 0 and 100", p("a", "abc"), E},
		{"a=b", p("a", "3.14", "b", "3.14"), True},
		{"a<>b", p("a", "3.14", "b", "3.14"), False},
		{"a<>b", p("a", "3.14", "b", "3.141"), True},
		{"a > 3.1E10", p("a", "3.1415E10"), True},
		{"a > 3.14", p("a", "3.1415"), True},
		{"a > b", p("a", "10", "b", "20"), False},
		{"a > b", p("a", "20", "b", "10"), True},
		{"a is null OR a='hello'", nil, True},
		{"a is null OR a='hello'", p("a", "hello"), True},
		{"a is null OR a='hello'", p("a", "abc"), False},
		{"a=TRUE OR b=FALSE", p("a", "true", "b", "false"), True},
		{"a=TRUE OR b=FALSE", p("a", "false", "b", "true"), False},
		{"a is not null and a='hello'", p("a", "hello"), True},
		{"a is not null and a='hello'", nil, False},
		{"a=3 and b<>4 And c>5 AND d<=4", p("a", "3", "b", "5", "c", "6", "d", "1"), True},
		{"a=3 and b<>4 And c>5 AND d<=4", p("a", "4", "b", "5", "c", "6", "d", "1"), False},
		{"a=3 or b<>4 Or c>5 OR d<=4", p("a", "3"), True},
		{"a=3 or b<>4 Or c>5 OR d<=4", p("a", "4", "b", "5"), True},
		{"a=3 or b<>4 Or c>5 OR d<=4", p("a", "4", "b", "4", "c", "6"), True},
		{"a=3 or b<>4 Or c>5 OR d<=4", p("a", "4", "b", "4", "c", "3", "d", "2"), True},
		{"a=3 or b<>4 Or c>5 OR d<=4", p("a", "4", "b", "4", "c", "3", "d", "10"), False},
		{"a in ('3', '4', '5')", p("a", "3"), True},
		{"a in ('3', '4', '5')", p("a", "4"), True},
		{"a in ('3', '4', '5')", p("a", "5"), True},
		{"a in ('3', '4', '5')", p("a", "8"), False},
		{"a not in ('3', '4', '5')", p("a", "8"), True},
		{"a not in ('3', '4', '5')", p("a", "3"), False},
		{"a not in ('3', '4', '5')", p("a", "5"), False},
		{"a between 2 and 10", p("a", "2"), True},
		{"a between 2 and 10", p("a", "10"), True},
		{"a between 2 and 10", p("a", "3"), True},
		{"a between 2 and 10", p("a", "1"), False},
		{"a between 2 and 10", p("a", "11"), False},
		{"a not between 2 and 10", p("a", "1"), True},
		{"a not between 2 and 10", p("a", "11"), True},
		{"a not between 2 and 10", p("a", "2"), False},
		{"a not between 2 and 10", p("a", "10"), False},
		{"a not between 2 and 10", p("a", "3"), False},
		{"a is null", p("abc", "2"), True},
		{"a is null", p("a", "2"), False},
		{"a is not null", p("a", "2"), True},
		{"a is not null", p("abc", "2"), False},
	})
}

// TestEvalConversions covers how a property string meets each literal
// type (ComparisonExpression.__compare with string conversion).
func TestEvalConversions(t *testing.T) {
	runEval(t, []evalCase{
		// RocketMQ's documented example.
		{"a BETWEEN 0 AND 3", p("a", "1"), True},

		// Integer literal: the property is read by Integer.valueOf.
		{"a > 5", p("a", "6"), True},
		{"a > 5", p("a", "+6"), True},
		{"a > 5", p("a", "-6"), False},
		{"a = 5", p("a", "05"), True},
		{"a = 0", p("a", "-0"), True},
		{"a > 5", p("a", "\u0666"), True},     // ARABIC-INDIC DIGIT SIX
		{"a > 5", p("a", "\uff16"), True},     // FULLWIDTH DIGIT SIX
		{"a > 5", p("a", "\U0001D7D4"), E},    // MATHEMATICAL BOLD DIGIT SIX: a surrogate pair in Java
		{"a > 5", p("a", "3000000000"), E},    // beyond 32 bits
		{"a > 5", p("a", "2147483647"), True}, // the largest Integer
		{"a < 5", p("a", "-2147483648"), True},
		{"a < 5", p("a", "-2147483649"), E},
		{"a > 5", p("a", "5.5"), E},
		{"a > 5", p("a", " 6"), E},
		{"a > 5", p("a", "6L"), E},
		{"a > 5", p("a", "1e3"), E},
		{"a > 5", p("a", ""), E},
		{"a > 5", p("a", "-"), E},
		{"a > 5", p("a", "abc"), E},
		{"a = 5", p("a", "abc"), E},
		{"a <> 5", p("a", "abc"), E},
		{"5 = a", p("a", "5"), True},
		{"5 < a", p("a", "abc"), E},

		// Long literal: Long.valueOf.
		{"a > 3000000000", p("a", "3000000001"), True},
		{"a > 3000000000", p("a", "5"), False},
		{"a = 9223372036854775807", p("a", "9223372036854775807"), True},
		{"a > 3000000000", p("a", "9223372036854775808"), E},
		{"a = -2147483648", p("a", "-2147483648"), True}, // a negated Long
		{"a > 3000000000", p("a", "5.0"), E},

		// Double literal: Double.valueOf, which is lenient.
		{"a > 5.0", p("a", "5.5"), True},
		{"a = 5.0", p("a", "5"), True},
		{"a = 5", p("a", "5.0"), E},
		{"a > 1.5", p("a", " 2.5 "), True},
		{"a > 1.5", p("a", "\t2.5\n"), True},
		{"a > 1.5", p("a", "2f"), True},
		{"a > 1.5", p("a", "2D"), True},
		{"a > 1.5", p("a", "2ff"), E},
		{"a > 1.5", p("a", "1e"), E},
		{"a > 1.5", p("a", "1e+"), E},
		{"a > 1.5", p("a", "2,5"), E},
		{"a > 1.5", p("a", "1_000"), E},
		{"a > 1.5", p("a", "0x10"), E},
		{"a > 1.5", p("a", "0x10p0"), True},
		{"a > 1.5", p("a", "-0x1.8p1"), False},
		{"a > 1.5", p("a", "\u0661\u0660"), E}, // Double.valueOf wants ASCII digits
		{"a > 1", p("a", "\u0661\u0660"), True},
		{"a > 1.5", p("a", "."), E},
		{"a > 1.5", p("a", ".5e1"), True},
		{"a > 1.5", p("a", "NaN"), True}, // NaN sorts above everything
		{"a < 1.5", p("a", "NaN"), False},
		{"a = 1.5", p("a", "NaN"), False},
		{"a > 1.5", p("a", "nan"), E},
		{"a > 1.5", p("a", "Infinity"), True},
		{"a < -1.5", p("a", "-Infinity"), True},
		{"a > 1.5", p("a", "+Infinity"), True},
		{"a > 1.5", p("a", "inf"), E},
		{"a > 1.5", p("a", "1e999"), True},
		{"a < 1.5", p("a", "-0"), True},

		// Two properties: both read as Double, for ordering only.
		{"a > b", p("a", "10", "b", "9"), True},
		{"a < b", p("a", "-0.0", "b", "0.0"), True},
		{"a >= b", p("a", "NaN", "b", "NaN"), True},
		{"a > b", p("a", "NaN", "b", "1"), True},
		{"a > b", p("a", "abc", "b", "1"), E},
		{"a > b", p("a", "1", "b", "abc"), E},
		{"a > b", p("a", "1"), Unknown},
		{"a = b", p("a", "1.0", "b", "1"), False},
		{"a = b", p("a", "-0.0", "b", "0.0"), False},

		// Booleans: Boolean.valueOf on the string side.
		{"a = TRUE", p("a", "true"), True},
		{"a = TRUE", p("a", "TRUE"), True},
		{"a = TRUE", p("a", "tRuE"), True},
		{"a = TRUE", p("a", "yes"), False},
		{"a = TRUE", p("a", "1"), False},
		{"a = FALSE", p("a", "anything"), True},
		{"a <> TRUE", p("a", "false"), True},
		{"a = TRUE", nil, Unknown},
		{"TRUE = a", p("a", "true"), E}, // RocketMQ's ClassCastException
		{"TRUE = a", nil, False},
		{"(a = 1) = b", p("a", "1", "b", "true"), E},
		{"b = (a = 1)", p("a", "1", "b", "true"), True},
		{"TRUE = FALSE", nil, False},
		{"TRUE = TRUE", nil, True},
		{"1 = TRUE", nil, False},
		{"'true' = TRUE", nil, True},

		// Numbers among themselves.
		{"1 = 1.0", nil, True},
		{"1 < 1.5", nil, True},
		{"3000000000 = 3000000000.0", nil, True},
		{"9007199254740993 = 9007199254740992.0", nil, True}, // long→double rounds
		{"2147483648 > 2147483647", nil, True},
		{"-1 < 1", nil, True},
		{"-(-5) = 5", nil, True},
		{"'x' = 'x'", nil, True},
		{"'x' = 'y'", nil, False},
		{"5 BETWEEN 1 AND 10", nil, True},
		{"a = 1e3", p("a", "1000"), True},

		// Strings compare exactly.
		{"a = 'x'", p("a", "x"), True},
		{"a = 'x'", p("a", "X"), False},
		{"a = 'x'", p("a", "x "), False},
		{"a = ''", p("a", ""), True},
		{"a = 'ü中'", p("a", "ü中"), True},
	})
}

// TestEvalNull covers UNKNOWN: missing properties and the NULL literal.
func TestEvalNull(t *testing.T) {
	runEval(t, []evalCase{
		{"TRUE", nil, True},
		{"FALSE", nil, False},
		{"NULL", nil, Unknown},
		{"NOT NULL", nil, Unknown},
		{"NULL OR TRUE", nil, True},
		{"NULL OR FALSE", nil, Unknown},
		{"NULL AND FALSE", nil, False},
		{"NULL AND TRUE", nil, Unknown},
		{"NULL IS NULL", nil, True},
		{"NULL IS NOT NULL", nil, False},
		{"5 IS NULL", nil, False},
		{"-NULL IS NULL", nil, True},
		{"-'x' IS NULL", nil, True},
		{"-TRUE IS NULL", nil, True},
		{"-5 IS NULL", nil, False},
		{"NULL CONTAINS 'x'", nil, False},
		{"NULL NOT CONTAINS 'x'", nil, False},

		// A bare property is a boolean cast: never TRUE.
		{"a", p("a", "true"), False},
		{"a", nil, Unknown},
		{"NOT a", p("a", "true"), True},
		{"NOT a", nil, Unknown},
		{"a OR b", p("a", "1"), Unknown},
		{"a AND b", p("a", "1"), False},

		// Equality's asymmetry.
		{"a = b", nil, True},
		{"a = b", p("a", "1"), False},
		{"a = b", p("b", "1"), Unknown},
		{"a <> b", nil, False},
		{"a <> b", p("a", "1"), True},
		{"a <> b", p("b", "1"), Unknown},
		{"a = 'x'", nil, Unknown},
		{"a <> 'x'", nil, Unknown},
		{"'x' = a", nil, False},
		{"'x' <> a", nil, True},
		{"a = -NULL", nil, True},
		{"a = -NULL", p("a", "1"), False},

		// Ordering.
		{"a > 5", nil, Unknown},
		{"5 > a", nil, Unknown},
		{"a > -a", p("a", "1"), Unknown}, // minus of a string is null
		{"a BETWEEN 1 AND 10", nil, Unknown},
		{"a NOT BETWEEN 1 AND 10", nil, Unknown},
		{"a BETWEEN b AND c", p("a", "5", "c", "10"), Unknown},
		{"a BETWEEN b AND c", p("a", "5", "b", "1", "c", "3"), False},
		{"a BETWEEN b AND c", p("a", "5", "c", "3"), False},
		{"a NOT BETWEEN b AND c", p("a", "5", "c", "3"), True},
		{"a NOT BETWEEN b AND c", p("a", "5", "c", "10"), Unknown},

		// IN, CONTAINS and IS NULL.
		{"a IN ('x')", nil, Unknown},
		{"a NOT IN ('x')", nil, Unknown},
		{"NOT (a IN ('x'))", nil, Unknown},
		{"a NOT CONTAINS 'x'", nil, False},
		{"NOT (a CONTAINS 'x')", nil, True},
		{"a IS NULL", p("a", ""), False},
		{"a IS NOT NULL", p("a", ""), True},

		// Kleene logic, the truth table in doc.go (x, y are a = 1, b = 1).
		{"a = 1 AND b = 1", p("a", "1", "b", "1"), True},
		{"a = 1 AND b = 1", p("a", "1", "b", "2"), False},
		{"a = 1 AND b = 1", p("a", "1"), Unknown},
		{"a = 1 AND b = 1", p("a", "2"), False},
		{"a = 1 AND b = 1", p("b", "1"), Unknown},
		{"a = 1 AND b = 1", p("b", "2"), False},
		{"a = 1 AND b = 1", nil, Unknown},
		{"a = 1 OR b = 1", p("a", "1", "b", "1"), True},
		{"a = 1 OR b = 1", p("a", "1", "b", "2"), True},
		{"a = 1 OR b = 1", p("a", "1"), True},
		{"a = 1 OR b = 1", p("a", "2", "b", "2"), False},
		{"a = 1 OR b = 1", p("a", "2"), Unknown},
		{"a = 1 OR b = 1", p("b", "1"), True},
		{"a = 1 OR b = 1", p("b", "2"), Unknown},
		{"a = 1 OR b = 1", nil, Unknown},
		{"NOT (a = 1)", p("a", "1"), False},
		{"NOT (a = 1)", p("a", "2"), True},
		{"NOT (a = 1)", nil, Unknown},
	})
}

// TestEvalQuirks pins down RocketMQ behaviour that surprises: precedence
// of NOT, evaluation order under aborts, chains.
func TestEvalQuirks(t *testing.T) {
	runEval(t, []evalCase{
		// NOT binds to the operand, not to the comparison.
		{"NOT a = 1", p("a", "1"), False},
		{"NOT a = 1", p("a", "2"), False},
		{"NOT a = 1", nil, Unknown},
		{"NOT a IS NULL", nil, True},
		{"NOT a IS NULL", p("a", "x"), False},
		{"NOT a CONTAINS 'x'", p("a", "x"), False},

		// An abort ends the evaluation, unless a decided operand comes
		// first.
		{"a > 5 OR b = 'x'", p("a", "abc", "b", "x"), E},
		{"b = 'x' OR a > 5", p("a", "abc", "b", "x"), True},
		{"b = 'y' AND a > 5", p("a", "abc", "b", "x"), False},
		{"a > 5 AND b = 'y'", p("a", "abc", "b", "x"), E},
		{"a = 5 OR TRUE", p("a", "abc"), E},
		{"NOT (a = 5)", p("a", "abc"), E},
		{"-(a = 5) IS NULL", p("a", "abc"), E},
		{"(a = 5) CONTAINS 'x'", p("a", "abc"), E},
		{"(a = 5) CONTAINS ''", p("a", "abc"), False}, // empty search: a not evaluated
		{"a BETWEEN 1 AND 10", p("a", "1.5"), E},
		{"a BETWEEN 1.0 AND 10", p("a", "1.5"), E}, // a >= 1.0 holds, a <= 10 aborts
		{"a BETWEEN 2.0 AND 10", p("a", "1.5"), False},
		{"a NOT BETWEEN 2.0 AND 10", p("a", "1.5"), True}, // a < 2.0 decides
		{"a NOT BETWEEN 1.0 AND 10", p("a", "1.5"), E},
		{"a > b", p("b", "abc"), Unknown}, // left null: right not converted

		// Chains.
		{"a = 1 = TRUE", p("a", "1"), True},
		{"a = 1 = TRUE", p("a", "2"), False},
		{"a = 1 = TRUE", nil, Unknown},
		{"a = 1 = 1", p("a", "1"), False}, // Boolean vs Integer: unequal
		{"a IS NULL IS NULL", nil, False},
		{"a CONTAINS 'x' CONTAINS 'y'", p("a", "xy"), False},
		{"5 CONTAINS 'x'", nil, False},
		{"5 NOT CONTAINS 'x'", nil, False},
		{"'5' CONTAINS '5'", nil, True},

		// Negation.
		{"a = -5", p("a", "-5"), True},
		{"-a = 5", p("a", "-5"), Unknown},
		{"a > -(-5)", p("a", "6"), True},
		{"a = -1.5", p("a", "-1.5"), True},
		{"a < -0.5", p("a", "-1"), True},

		// IN through the hash set.
		{"a IN ('1', '2', '3', '4', '5')", p("a", "5"), True},
		{"a IN ('1', '2', '3', '4', '5')", p("a", "6"), False},
		{"a NOT IN ('1', '2', '3', '4', '5')", p("a", "6"), True},

		// Tags go through the same lookup.
		{"TAGS = 'a'", p("TAGS", "a"), True},
		{"TAGS IN ('a', 'b') AND KEYS IS NOT NULL", p("TAGS", "b", "KEYS", "k1 k2"), True},
	})
}

func TestNilLookup(t *testing.T) {
	s, err := Parse("a IS NULL AND NOT (b = 'x')")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Eval(nil); r != Unknown || err != nil {
		t.Fatalf("Eval(nil) = %v, %v", r, err)
	}
	if !mustParse(t, "a IS NULL").Match(nil) {
		t.Fatal("a IS NULL does not match a message without properties")
	}
}

func TestEvalErrorText(t *testing.T) {
	tests := []struct{ expr, val, want string }{
		{"a > 5", "x", `filter: evaluation error: "x" is not a 32-bit integer`},
		{"a > 3000000000", "x", `filter: evaluation error: "x" is not a 64-bit integer`},
		{"a > 1.5", "x", `filter: evaluation error: "x" is not a number`},
		{"TRUE = a", "x", `filter: evaluation error: boolean compared with string "x"`},
	}
	for _, tt := range tests {
		_, err := mustParse(t, tt.expr).Eval(MapLookup(p("a", tt.val)))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.expr, err, tt.want)
		}
	}
}

func TestResultString(t *testing.T) {
	got := strings.Join([]string{Unknown.String(), False.String(), True.String()}, " ")
	if got != "UNKNOWN FALSE TRUE" {
		t.Fatal(got)
	}
}

// TestLookupCalls checks that Match consults only the lookup, and only
// for names in the selector.
func TestLookupCalls(t *testing.T) {
	s := mustParse(t, "a > 5 AND TAGS IN ('x', 'y')")
	var names []string
	s.Match(func(name string) (string, bool) {
		names = append(names, name)
		return map[string]string{"a": "7", "TAGS": "x"}[name], true
	})
	if strings.Join(names, ",") != "a,TAGS" {
		t.Fatalf("lookups: %v", names)
	}
}

func mustParse(t testing.TB, expr string) *Selector {
	t.Helper()
	s, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return s
}

// TestConcurrentMatch shares one Selector among goroutines; run with -race.
func TestConcurrentMatch(t *testing.T) {
	s := mustParse(t, "a > 5 AND TAGS IN ('1', '2', '3', '4', '5', '6') OR b BETWEEN 1 AND 3")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				tag := strconv.Itoa(i % 8)
				want := i%8 >= 1 && i%8 <= 6
				if got := s.Match(MapLookup(p("a", "7", "TAGS", tag))); got != want {
					t.Errorf("TAGS %s: Match = %v", tag, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
