package filter

import (
	"fmt"
	"strings"
	"testing"
)

// tokString renders tokens compactly: kinds by name, with the text of
// identifiers, numbers and strings.
func tokString(toks []token) string {
	var parts []string
	for _, t := range toks {
		switch t.kind {
		case tEOF:
			parts = append(parts, "EOF")
		case tIdent:
			parts = append(parts, "id:"+t.text)
		case tInt:
			parts = append(parts, "int:"+t.text)
		case tFloat:
			parts = append(parts, "float:"+t.text)
		case tString:
			parts = append(parts, "str:"+t.text)
		default:
			parts = append(parts, t.describe())
		}
	}
	return strings.Join(parts, " ")
}

func TestLex(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "EOF"},
		{"a", "id:a EOF"},
		{"$_a1", "id:$_a1 EOF"},
		{"and AnD AND", "AND AND AND EOF"},
		{"android isnull", "id:android id:isnull EOF"},
		{"not in is null true false between contains startswith endswith or",
			"NOT IN IS NULL TRUE FALSE BETWEEN CONTAINS STARTSWITH ENDSWITH OR EOF"},
		{"= <> > >= < <= ( , ) + -", `"=" "<>" ">" ">=" "<" "<=" "(" "," ")" "+" "-" EOF`},
		{"a<>b<=c>=d<e>f", `id:a "<>" id:b "<=" id:c ">=" id:d "<" id:e ">" id:f EOF`},
		{"<>=", `"<>" "=" EOF`},
		{"=<", `"=" "<" EOF`},
		{"0 7 10 10L 10l 0L 012", "int:0 int:7 int:10 int:10L int:10l int:0 id:L int:0 int:12 EOF"},
		{"1.5 1. .5 1e5 1E+5 1e-5 1.e5 .5e5 00.5 007e1", "float:1.5 float:1. float:.5 float:1e5 float:1E+5 float:1e-5 float:1.e5 float:.5e5 float:00.5 float:007e1 EOF"},
		{"1e 1e+ 1.5e", "int:1 id:e int:1 id:e " + `"+"` + " float:1.5 id:e EOF"},
		{"1.2.3", "float:1.2 float:.3 EOF"},
		{"5L5", "int:5L int:5 EOF"},
		{"1and", "int:1 AND EOF"},
		{"'' 'a' 'it''s' '''' 'a''''b'", "str: str:a str:it's str:' str:a''b EOF"},
		{"'multi\nline'", "str:multi\nline EOF"},
		{"'ü中'", "str:ü中 EOF"},
		{"a--x\nb", "id:a id:b EOF"},
		{"a--x\rb", "id:a id:b EOF"},
		{"a--x", "id:a EOF"},
		{"a - -b", `id:a "-" "-" id:b EOF`},
		{"a/**/b/* * */c/***/d", "id:a id:b id:c id:d EOF"},
		{"a/*--*/b", "id:a id:b EOF"},
		{"--/*\na", "id:a EOF"},
		{" \t\n\r\fa", "id:a EOF"},
	}
	for _, tt := range tests {
		toks, err := lex(tt.in)
		if err != nil {
			t.Errorf("lex(%q): %v", tt.in, err)
			continue
		}
		if got := tokString(toks); got != tt.want {
			t.Errorf("lex(%q) = %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestLexPositions(t *testing.T) {
	toks, err := lex("ab  <= 'x''y' /* c */ 1.5")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, fmt.Sprint(tk.pos))
	}
	if s := strings.Join(got, ","); s != "0,4,7,22,25" {
		t.Fatalf("positions %s", s)
	}
}

func TestLexErrors(t *testing.T) {
	tests := []struct {
		in     string
		offset int
	}{
		{"!", 0},
		{"a ! b", 2},
		{"a.b", 1},
		{".", 0},
		{"a = .e5", 4},
		{"/", 0},
		{"a /* b", 2},
		{"/*/", 0},
		{"'abc", 0},
		{"'abc''", 0},
		{"a = 'x' 'y", 8},
		{"é", 0},
		{"\x00", 0},
		{"\xff", 0},
		{"a\u00a0b", 1},
		{"a\vb", 1},
		{"a;", 1},
		{"a[0]", 1},
		{"\"a\"", 0},
		{"`a`", 0},
		{"a * b", 2},
		{"a % b", 2},
		{"a | b", 2},
	}
	for _, tt := range tests {
		_, err := lex(tt.in)
		pe, ok := err.(*ParseError)
		if !ok || pe.Err != ErrSyntax || pe.Offset != tt.offset {
			t.Errorf("lex(%q): %v, want a syntax error at %d", tt.in, err, tt.offset)
		}
	}
}
