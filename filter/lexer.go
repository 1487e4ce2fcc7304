package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tInt    // DECIMAL_LITERAL: 0 | [1-9][0-9]* [lL]?
	tFloat  // FLOATING_POINT_LITERAL
	tString // STRING_LITERAL, text already decoded

	// Reserved words, matched without regard to case.
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith

	// Punctuation.
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen // (
	tComma  // ,
	tRParen // )
	tPlus   // +
	tMinus  // -
)

var keywords = map[string]tokKind{
	"NOT":        tNot,
	"AND":        tAnd,
	"OR":         tOr,
	"BETWEEN":    tBetween,
	"IN":         tIn,
	"TRUE":       tTrue,
	"FALSE":      tFalse,
	"NULL":       tNull,
	"IS":         tIs,
	"CONTAINS":   tContains,
	"STARTSWITH": tStartsWith,
	"ENDSWITH":   tEndsWith,
}

var punctText = map[tokKind]string{
	tEq: "=", tNe: "<>", tGt: ">", tGe: ">=", tLt: "<", tLe: "<=",
	tLParen: "(", tComma: ",", tRParen: ")", tPlus: "+", tMinus: "-",
}

// token is one lexical token. text is the source image for identifiers,
// keywords and numbers, and the decoded value for strings.
type token struct {
	kind tokKind
	pos  int // byte offset of the first character
	text string
}

// describe names the token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tIdent:
		return fmt.Sprintf("identifier %s", t.text)
	case tInt, tFloat:
		return fmt.Sprintf("number %s", t.text)
	case tString:
		return fmt.Sprintf("string %s", quote(t.text))
	}
	if s, ok := punctText[t.kind]; ok {
		return fmt.Sprintf("%q", s)
	}
	return strings.ToUpper(t.text)
}

// lex splits src into tokens, the last of which is tEOF. It follows the
// token rules of RocketMQ's SelectorParser.jj (longest match; a reserved
// word wins over an identifier of the same length), except that a "--"
// comment may end at the end of the input as well as at a line break.
func lex(src string) ([]token, error) {
	toks := make([]token, 0, len(src)/3+1)
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			j := strings.IndexAny(src[i:], "\r\n")
			if j < 0 {
				i = len(src)
			} else {
				i += j + 1
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, syntaxErr(i, "unterminated /* comment")
			}
			i += 2 + j + 2
		case c == '\'':
			t, n, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i = n
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			t, n := lexNumber(src, i)
			toks = append(toks, t)
			i = n
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			kind := tIdent
			if k, ok := keywords[strings.ToUpper(word)]; ok {
				kind = k
			}
			toks = append(toks, token{kind: kind, pos: i, text: word})
			i = j
		default:
			kind, n := lexPunct(src, i)
			if n == 0 {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, syntaxErr(i, "unexpected character %q", r)
			}
			toks = append(toks, token{kind: kind, pos: i})
			i += n
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

// lexString reads a quoted string starting at the quote src[i], where a
// doubled quote stands for one quote. It returns the decoded token and the
// offset after the closing quote.
func lexString(src string, i int) (token, int, error) {
	var b strings.Builder
	j := i + 1
	for {
		k := strings.IndexByte(src[j:], '\'')
		if k < 0 {
			return token{}, 0, syntaxErr(i, "unterminated string literal")
		}
		end := j + k + 1
		if end < len(src) && src[end] == '\'' {
			b.WriteString(src[j:end]) // the text and one quote
			j = end + 1
			continue
		}
		text := src[j : j+k]
		if b.Len() > 0 {
			b.WriteString(text)
			text = b.String()
		}
		return token{kind: tString, pos: i, text: text}, end, nil
	}
}

// lexNumber reads the longest DECIMAL_LITERAL or FLOATING_POINT_LITERAL at
// src[i], which is a digit, or a '.' followed by a digit:
//
//	float:   digits "." digits* exp? | "." digits exp? | digits exp
//	exp:     [eE] [+-]? digits
//	decimal: "0" | [1-9] digits* [lL]?
//
// "0" takes no suffix and no further digits: "012" is the three tokens
// 0, 12 (RocketMQ removed octal literals; the parser then rejects the
// second number).
func lexNumber(src string, i int) (token, int) {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	intEnd := j
	float := false
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		float = true
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
			float = true
		}
	}
	if float {
		return token{kind: tFloat, pos: i, text: src[i:j]}, j
	}
	if src[i] == '0' {
		return token{kind: tInt, pos: i, text: "0"}, i + 1
	}
	j = intEnd
	if j < len(src) && (src[j] == 'l' || src[j] == 'L') {
		j++
	}
	return token{kind: tInt, pos: i, text: src[i:j]}, j
}

// lexPunct matches an operator or punctuation at src[i]; n is 0 if none.
func lexPunct(src string, i int) (tokKind, int) {
	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch src[i] {
	case '=':
		return tEq, 1
	case '<':
		switch next {
		case '>':
			return tNe, 2
		case '=':
			return tLe, 2
		}
		return tLt, 1
	case '>':
		if next == '=' {
			return tGe, 2
		}
		return tGt, 1
	case '(':
		return tLParen, 1
	case ',':
		return tComma, 1
	case ')':
		return tRParen, 1
	case '+':
		return tPlus, 1
	case '-':
		return tMinus, 1
	}
	return tEOF, 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }
