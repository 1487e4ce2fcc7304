package filter

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// valuePool holds property values that exercise every conversion path.
var valuePool = []string{
	"", "0", "1", "-1", "5", "+6", "2.5", "-0.0", "NaN", "Infinity", "1e3",
	"0x1p3", "3000000000", "9223372036854775808", "true", "TRUE", "false",
	"x", "abc", "axb", " 7 ", "\u0663", "'", "a''b", "it's",
}

// propsFor gives each identifier in expr a value from valuePool chosen by
// pick, or leaves it missing.
func propsFor(expr string, pick []byte) map[string]string {
	toks, err := lex(expr)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	k := 0
	for _, t := range toks {
		if t.kind != tIdent {
			continue
		}
		if _, done := m[t.text]; done {
			continue
		}
		b := byte(k * 7)
		if k < len(pick) {
			b = pick[k]
		}
		k++
		if int(b) < len(valuePool) {
			m[t.text] = valuePool[b]
		} else if b%3 != 0 {
			m[t.text] = valuePool[int(b)%len(valuePool)]
		}
	}
	return m
}

// sameResult fails the test if a and b evaluate differently on props.
func sameResult(t *testing.T, a, b *Selector, props map[string]string) {
	t.Helper()
	ra, ea := a.Eval(MapLookup(props))
	rb, eb := b.Eval(MapLookup(props))
	if ra != rb || (ea == nil) != (eb == nil) {
		t.Fatalf("%q and %q differ on %v: %v, %v vs %v, %v", a, b, props, ra, ea, rb, eb)
	}
	if (ea != nil && !errors.Is(ea, ErrEval)) || a.Match(MapLookup(props)) != (ra == True && ea == nil) {
		t.Fatalf("%q on %v: Eval %v, %v disagrees with Match", a, props, ra, ea)
	}
}

// checkRoundTrip verifies that String parses back to the same canonical
// text and the same behaviour.
func checkRoundTrip(t *testing.T, s *Selector, pick []byte) {
	t.Helper()
	text := s.String()
	if len(text) > MaxLen {
		return
	}
	s2, err := Parse(text)
	if err != nil {
		t.Fatalf("canonical text %q does not parse: %v", text, err)
	}
	if text2 := s2.String(); text2 != text {
		t.Fatalf("String is not a fixpoint: %q then %q", text, text2)
	}
	if s2.root.depth() != s.root.depth() {
		t.Fatalf("%q: depth %d after round trip, was %d", text, s2.root.depth(), s.root.depth())
	}
	for i := 0; i < 4; i++ {
		props := propsFor(text, rotate(pick, i))
		sameResult(t, s, s2, props)
	}
}

func rotate(b []byte, n int) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[i] = b[i] + byte(n*31)
	}
	return out
}

// gen writes a random expression following the grammar loosely, so that
// some results fail RocketMQ's type checks and some pass.
func gen(r *rand.Rand, b *strings.Builder, depth int) {
	kw := func(s string) {
		switch r.IntN(3) {
		case 0:
			s = strings.ToLower(s)
		case 1:
			s = strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
		}
		b.WriteString(s)
	}
	sp := func() {
		b.WriteString([]string{" ", " ", "  ", "\n", " /* c */ ", "\t"}[r.IntN(6)])
	}
	leaf := func() {
		if r.IntN(2) == 0 {
			b.WriteString([]string{"a", "b", "c", "TAGS", "$x"}[r.IntN(5)])
			return
		}
		b.WriteString([]string{"'x'", "'it''s'", "''", "0", "5", "3000000000", "1.5", "2e3", ".5", "7L", "TRUE", "false", "NULL"}[r.IntN(13)])
	}
	if depth <= 0 {
		leaf()
		return
	}
	switch r.IntN(13) {
	case 0, 1:
		leaf()
	case 2:
		b.WriteString("(")
		gen(r, b, depth-1)
		b.WriteString(")")
	case 3:
		kw("NOT")
		sp()
		gen(r, b, depth-1)
	case 4:
		b.WriteString([]string{"-", "+", "- "}[r.IntN(3)])
		gen(r, b, depth-1)
	case 5, 6:
		gen(r, b, depth-1)
		sp()
		b.WriteString([]string{"=", "<>", ">", ">=", "<", "<="}[r.IntN(6)])
		sp()
		gen(r, b, depth-1)
	case 7, 8:
		gen(r, b, depth-1)
		sp()
		kw([]string{"AND", "OR"}[r.IntN(2)])
		sp()
		gen(r, b, depth-1)
	case 9:
		gen(r, b, depth-1)
		sp()
		kw([]string{"IS NULL", "IS NOT NULL"}[r.IntN(2)])
	case 10:
		gen(r, b, depth-1)
		sp()
		if r.IntN(2) == 0 {
			kw("NOT ")
		}
		kw("BETWEEN")
		sp()
		gen(r, b, depth-1)
		sp()
		kw("AND")
		sp()
		gen(r, b, depth-1)
	case 11:
		b.WriteString([]string{"a", "TAGS", "(b)"}[r.IntN(3)])
		sp()
		if r.IntN(2) == 0 {
			kw("NOT ")
		}
		kw("IN")
		b.WriteString([]string{" ('x')", " ('x', 'y')", "('1','2','3','4','5','6')"}[r.IntN(3)])
	case 12:
		gen(r, b, depth-1)
		sp()
		if r.IntN(2) == 0 {
			kw("NOT ")
		}
		kw([]string{"CONTAINS", "STARTSWITH", "ENDSWITH"}[r.IntN(3)])
		sp()
		b.WriteString([]string{"'x'", "''", "'1'", "'a''b'"}[r.IntN(4)])
	}
}

// TestRoundTripGenerated checks String on many random expressions.
func TestRoundTripGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parsed := 0
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		gen(r, &b, 1+r.IntN(5))
		s, err := Parse(b.String())
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): unexpected error %v", b.String(), err)
			}
			continue
		}
		parsed++
		pick := []byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}
		checkRoundTrip(t, s, pick)
	}
	t.Logf("%d of 20000 generated expressions parsed", parsed)
	if parsed < 2000 {
		t.Fatalf("only %d of 20000 generated expressions parsed", parsed)
	}
}

// TestRoundTripDeep checks that the canonical text of the deepest trees
// still parses (its nesting stays within MaxNesting).
func TestRoundTripDeep(t *testing.T) {
	for _, in := range []string{
		"a > " + strings.Repeat("-(", MaxDepth-2) + "5" + strings.Repeat(")", MaxDepth-2),
		strings.Repeat("NOT (", MaxDepth-3) + "a = 1" + strings.Repeat(")", MaxDepth-3),
		strings.Repeat("(", (MaxDepth-4)/2) + "a = 1" + strings.Repeat(" OR b = 2) AND c = 3", (MaxDepth-4)/2),
		strings.Repeat("a = -(", (MaxDepth-2)/2) + "5" + strings.Repeat(")", (MaxDepth-2)/2),
		strings.Repeat("NOT ", MaxDepth-4) + "(a = 1) IS NULL",
	} {
		s, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%.50q…): %v", in, err)
		}
		if d := s.root.depth(); d < MaxDepth-3 {
			t.Errorf("Parse(%.50q…): depth %d, test wants one near MaxDepth", in, d)
		}
		checkRoundTrip(t, s, nil)
	}
}
