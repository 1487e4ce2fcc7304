package filter

import (
	"strconv"
	"strings"
	"testing"
)

// tenProps is a message with ten properties, as a producer with a tag,
// keys and a few user properties sends them.
func tenProps() map[string]string {
	m := map[string]string{
		"TAGS":     "x",
		"KEYS":     "order-1234",
		"UNIQ_KEY": "7F000001000018B4AAC2080E4B2A0000",
		"WAIT":     "true",
		"a":        "7",
	}
	for i := 0; len(m) < 10; i++ {
		m["user"+strconv.Itoa(i)] = "value" + strconv.Itoa(i)
	}
	return m
}

func BenchmarkMatch(b *testing.B) {
	s := mustParse(b, "a > 5 AND TAGS IN ('x','y')")
	lk := MapLookup(tenProps())
	b.ReportAllocs()
	for b.Loop() {
		if !s.Match(lk) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkMatchMiss(b *testing.B) {
	s := mustParse(b, "a > 5 AND TAGS IN ('x','y')")
	props := tenProps()
	props["a"] = "3"
	lk := MapLookup(props)
	b.ReportAllocs()
	for b.Loop() {
		if s.Match(lk) {
			b.Fatal("match")
		}
	}
}

func BenchmarkMatchComplex(b *testing.B) {
	s := mustParse(b, "(TAGS IN ('a','b','c','d','e','x') OR KEYS STARTSWITH 'order-') AND a BETWEEN 1 AND 10 AND price IS NULL AND NOT (WAIT = FALSE) AND user3 <> 'nope'")
	lk := MapLookup(tenProps())
	b.ReportAllocs()
	for b.Loop() {
		if !s.Match(lk) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("a > 5 AND TAGS IN ('x','y')"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLong(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("TAGS IN (")
	for i := 0; sb.Len() < MaxLen-100; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("'tag" + strconv.Itoa(i) + "'")
	}
	sb.WriteString(")")
	expr := sb.String()
	b.SetBytes(int64(len(expr)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(expr); err != nil {
			b.Fatal(err)
		}
	}
}
