package remoting

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The JSON header codec. Encoding writes a fixed key order and sorted ext
// keys (ExtList's fields in their own order). Decoding is a small strict parser for the one object shape a header
// has; it accepts exactly what encoding/json accepts when unmarshalling
// into the Go client's RemotingCommand struct (keys matched
// case-insensitively, numbers for the int fields, null for anything, ext
// values that are strings or null), except that the top level must be an
// object and that HeaderLimits bound the ext entries and the nesting. A
// differential fuzz test holds it to that.

// maxJSONDepth is encoding/json's nesting limit for arrays and objects.
const maxJSONDepth = 10000

// appendJSONHeader appends c's header as JSON, with the given opaque and
// flag. An empty remark is left out; extFields is always written.
func appendJSONHeader(dst []byte, c *Command, opaque, flag int32) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	dst = appendJSONString(dst, c.Language)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(flag), 10)
	if c.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, c.Remark)
	}
	dst = append(dst, `,"extFields":{`...)
	if c.ExtFields == nil {
		dst = appendJSONExt(dst, c.ExtList)
	} else {
		var small [24]ExtField
		pairs := small[:0]
		for k, v := range c.ExtFields {
			pairs = append(pairs, ExtField{k, v})
		}
		sortPairs(pairs)
		dst = appendJSONExt(dst, pairs)
	}
	return append(dst, "}}"...)
}

// appendJSONExt appends the members of the extFields object.
func appendJSONExt(dst []byte, pairs []ExtField) []byte {
	for i, p := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, p.Key)
		dst = append(dst, ':')
		dst = appendJSONString(dst, p.Value)
	}
	return dst
}

// sortPairs sorts ext fields by key: by insertion for the handful a header
// has, which needs no second map lookup per key nor a comparison func.
func sortPairs(pairs []ExtField) {
	if len(pairs) > 16 {
		slices.SortFunc(pairs, func(a, b ExtField) int { return strings.Compare(a.Key, b.Key) })
		return
	}
	for i := 1; i < len(pairs); i++ {
		for j := i; j > 0 && pairs[j].Key < pairs[j-1].Key; j-- {
			pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
		}
	}
}

// jsonPlain marks the bytes a JSON string holds as they are: printable
// ASCII other than the quote and the backslash.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Quotes, backslashes and
// control characters are escaped (so property separators \x01 and \x02
// travel as \u0001 and \u0002); invalid UTF-8 becomes \ufffd, as with
// encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	i := 0
	for i < len(s) && jsonPlain[s[i]] {
		i++
	}
	if i == len(s) {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Header fields of the JSON object, as headerField names them.
const (
	fieldOther = iota
	fieldCode
	fieldLanguage
	fieldVersion
	fieldOpaque
	fieldFlag
	fieldRemark
	fieldExt
)

// headerFieldNames is indexed by the field constants.
var headerFieldNames = [...]string{"", "code", "language", "version", "opaque", "flag", "remark", "extFields"}

// headerField names the header field of a key. Keys match
// case-insensitively, as with encoding/json; the exact spelling every
// client writes is matched without folding.
func headerField(key []byte) int {
	switch string(key) {
	case "code":
		return fieldCode
	case "language":
		return fieldLanguage
	case "version":
		return fieldVersion
	case "opaque":
		return fieldOpaque
	case "flag":
		return fieldFlag
	case "remark":
		return fieldRemark
	case "extFields":
		return fieldExt
	}
	for f := fieldCode; f < len(headerFieldNames); f++ {
		if bytes.EqualFold(key, []byte(headerFieldNames[f])) {
			return f
		}
	}
	return fieldOther
}

// decodeJSONHeader parses a JSON header into c within lim (whose fields
// are set), returning its ext fields appended to pairs (the caller puts
// them in a map or a list).
//
// It allocates one copy of the header, which every decoded string is a
// view of: a string with escapes is unescaped within its own bytes of the
// copy (unescaping only shortens JSON text, except for invalid UTF-8,
// which then takes a buffer of its own).
func decodeJSONHeader(h []byte, c *Command, lim HeaderLimits, pairs []ExtField) ([]ExtField, error) {
	own := bytes.Clone(h)
	r := jsonReader{b: h, own: own, extLeft: lim.MaxExtFields, maxDepth: min(lim.MaxDepth, maxJSONDepth)}
	if len(own) > 0 {
		r.s = unsafe.String(&own[0], len(own))
	}
	r.ws()
	if r.peek() != '{' {
		return nil, r.fail("header is not a JSON object")
	}
	r.i++
	r.ws()
	if r.peek() == '}' {
		r.i++
	} else {
		var scratch [32]byte
		for {
			r.ws()
			if r.peek() != '"' {
				return nil, r.fail("expected a key")
			}
			key, err := r.readStringBytes(scratch[:0])
			if err != nil {
				return nil, err
			}
			if err := r.colon(); err != nil {
				return nil, err
			}
			switch headerField(key) {
			case fieldCode:
				err = r.readInt(32, func(v int64) { c.Code = int32(v) })
			case fieldLanguage:
				err = r.readStringField(&c.Language)
			case fieldVersion:
				err = r.readInt(16, func(v int64) { c.Version = int16(v) })
			case fieldOpaque:
				err = r.readInt(32, func(v int64) { c.Opaque = int32(v) })
			case fieldFlag:
				err = r.readInt(32, func(v int64) { c.Flag = int32(v) })
			case fieldRemark:
				err = r.readStringField(&c.Remark)
			case fieldExt:
				pairs, err = r.readExt(pairs)
			default:
				err = r.skipValue(1)
			}
			if err != nil {
				return nil, err
			}
			more, err := r.next('}')
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
		}
	}
	r.ws()
	if r.i != len(r.b) {
		return nil, r.fail("data after the header object")
	}
	return pairs, nil
}

// jsonReader is a cursor over JSON text. Its methods fail with errors that
// wrap ErrBadHeader and name the offset.
type jsonReader struct {
	// b is the input; it is only read.
	b []byte
	// own is the decoder's copy of b and s a string view of it: strings
	// are cut from s, so decoding allocates the header's size once rather
	// than once per string. A string with escapes is unescaped in place in
	// own (in the bytes of its own escaped text) before its view is taken;
	// nothing else ever writes to own.
	own []byte
	s   string
	i   int
	// extLeft is how many more ext entries may be read; maxDepth bounds
	// the nesting of skipped values.
	extLeft  int
	maxDepth int
}

func (r *jsonReader) fail(what string) error {
	return fmt.Errorf("%w: json: %s at offset %d", ErrBadHeader, what, r.i)
}

// peek returns the current byte, or 0 at the end.
func (r *jsonReader) peek() byte {
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// ws skips JSON whitespace.
func (r *jsonReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// colon consumes the ':' after a key and the whitespace around it.
func (r *jsonReader) colon() error {
	r.ws()
	if r.peek() != ':' {
		return r.fail("expected ':'")
	}
	r.i++
	r.ws()
	return nil
}

// next consumes the ',' or the closing byte after a member or element and
// reports whether another one follows.
func (r *jsonReader) next(closing byte) (bool, error) {
	r.ws()
	switch r.peek() {
	case ',':
		r.i++
		return true, nil
	case closing:
		r.i++
		return false, nil
	}
	return false, r.fail("expected ',' or '" + string(closing) + "'")
}

// literal consumes the word (true, false or null) at the cursor.
func (r *jsonReader) literal(word string) error {
	if !bytes.HasPrefix(r.b[r.i:], []byte(word)) {
		return r.fail("invalid literal")
	}
	r.i += len(word)
	return nil
}

// readNumber consumes a number in JSON's grammar and returns its text.
func (r *jsonReader) readNumber() ([]byte, error) {
	start := r.i
	if r.peek() == '-' {
		r.i++
	}
	switch c := r.peek(); {
	case c == '0':
		r.i++
	case c >= '1' && c <= '9':
		for r.i++; isDigit(r.peek()); r.i++ {
		}
	default:
		return nil, r.fail("invalid number")
	}
	if r.peek() == '.' {
		r.i++
		if !isDigit(r.peek()) {
			return nil, r.fail("invalid number")
		}
		for isDigit(r.peek()) {
			r.i++
		}
	}
	if c := r.peek(); c == 'e' || c == 'E' {
		r.i++
		if c := r.peek(); c == '+' || c == '-' {
			r.i++
		}
		if !isDigit(r.peek()) {
			return nil, r.fail("invalid number")
		}
		for isDigit(r.peek()) {
			r.i++
		}
	}
	return r.b[start:r.i], nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// readInt reads an integer field of the given bit size: a JSON number whose
// text is a decimal integer in range calls set, and so does a string that
// holds one (fastjson, RocketMQ's reader, coerces "10" to 10); null leaves
// the field as it is; anything else fails.
func (r *jsonReader) readInt(bits int, set func(int64)) error {
	switch c := r.peek(); {
	case c == 'n':
		return r.literal("null")
	case c == '"':
		at := r.i
		text, err := r.readString()
		if err != nil {
			return err
		}
		v, perr := strconv.ParseInt(strings.TrimSpace(text), 10, bits)
		if perr != nil {
			r.i = at
			return r.fail(fmt.Sprintf("string %q is not an int%d", text, bits))
		}
		set(v)
		return nil
	case c == '-' || isDigit(c):
		at := r.i
		lit, err := r.readNumber()
		if err != nil {
			return err
		}
		v, perr := strconv.ParseInt(string(lit), 10, bits)
		if perr != nil {
			r.i = at
			return r.fail(fmt.Sprintf("number %s is not an int%d", lit, bits))
		}
		set(v)
		return nil
	}
	return r.fail("expected a number")
}

// readStringField reads a string field: a string sets it, null leaves it.
func (r *jsonReader) readStringField(dst *string) error {
	switch r.peek() {
	case 'n':
		return r.literal("null")
	case '"':
		s, err := r.readString()
		if err != nil {
			return err
		}
		*dst = s
		return nil
	}
	return r.fail("expected a string")
}

// readExt reads the extFields object, appending its fields to pairs. As
// with
// encoding/json, null clears the fields, a second object adds to the first
// (a repeated key keeps its last value), and a null value is stored as "".
func (r *jsonReader) readExt(pairs []ExtField) ([]ExtField, error) {
	switch r.peek() {
	case 'n':
		return pairs[:0], r.literal("null")
	case '{':
	default:
		return pairs, r.fail("extFields is not an object")
	}
	r.i++
	r.ws()
	if r.peek() == '}' {
		r.i++
		return pairs, nil
	}
	for {
		r.ws()
		if r.peek() != '"' {
			return pairs, r.fail("expected a key")
		}
		if r.extLeft == 0 {
			return pairs, r.fail("too many ext fields")
		}
		r.extLeft--
		k, err := r.readString()
		if err != nil {
			return pairs, err
		}
		if err := r.colon(); err != nil {
			return pairs, err
		}
		var v string
		switch r.peek() {
		case '"':
			if v, err = r.readString(); err != nil {
				return pairs, err
			}
		case 'n':
			if err := r.literal("null"); err != nil {
				return pairs, err
			}
		default:
			// RocketMQ's brokers read headers with fastjson, which takes
			// any JSON value for a String field as its text: numbers and
			// booleans as written ("queueId":3 is "3"), objects and arrays
			// as their JSON.
			start := r.i
			if err := r.skipValue(2); err != nil {
				return pairs, err
			}
			v = r.s[start:r.i]
		}
		pairs = append(pairs, ExtField{k, v})
		more, err := r.next('}')
		if err != nil || !more {
			return pairs, err
		}
	}
}

// readString reads a string value.
func (r *jsonReader) readString() (string, error) {
	// Fast path: printable ASCII without escapes.
	for j := r.i + 1; j < len(r.b); j++ {
		c := r.b[j]
		if c == '"' {
			s := r.s[r.i+1 : j]
			r.i = j + 1
			return s, nil
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	// Unescape into this string's bytes of own: the result fits unless
	// the text holds invalid UTF-8 (one byte becomes three), and then
	// append moves it to a buffer of its own.
	start := r.i + 1
	b, err := r.readStringBytes(r.own[start:start:r.stringEnd(start)])
	if err != nil || len(b) == 0 {
		return "", err
	}
	// Nothing else refers to b's bytes, and nothing writes to them again.
	return unsafe.String(&b[0], len(b)), nil
}

// stringEnd returns the offset of the closing quote of the string whose
// text starts at start, or len(r.b) when it has none.
func (r *jsonReader) stringEnd(start int) int {
	for j := start; j < len(r.b); j++ {
		switch r.b[j] {
		case '"':
			return j
		case '\\':
			j++
		}
	}
	return len(r.b)
}

// readStringBytes reads a string at the cursor (which is on the opening
// quote) and returns its unescaped bytes. When the string needs no
// unescaping the result aliases the input; otherwise it is appended to
// scratch. Invalid UTF-8 and unpaired surrogate escapes become U+FFFD.
func (r *jsonReader) readStringBytes(scratch []byte) ([]byte, error) {
	start := r.i + 1
	j := start
	for ; j < len(r.b); j++ {
		c := r.b[j]
		if c == '"' {
			r.i = j + 1
			return r.b[start:j], nil
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	out := append(scratch, r.b[start:j]...)
	for j < len(r.b) {
		c := r.b[j]
		switch {
		case c == '"':
			r.i = j + 1
			return out, nil
		case c < 0x20:
			r.i = j
			return nil, r.fail("control character in string")
		case c == '\\':
			if j+1 >= len(r.b) {
				r.i = j
				return nil, r.fail("unterminated escape")
			}
			switch e := r.b[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				j += 2
			case 'b':
				out = append(out, '\b')
				j += 2
			case 'f':
				out = append(out, '\f')
				j += 2
			case 'n':
				out = append(out, '\n')
				j += 2
			case 'r':
				out = append(out, '\r')
				j += 2
			case 't':
				out = append(out, '\t')
				j += 2
			case 'u':
				ru := hex4(r.b[j:])
				if ru < 0 {
					r.i = j
					return nil, r.fail("invalid \\u escape")
				}
				j += 6
				if utf16.IsSurrogate(ru) {
					if ru2 := hex4(r.b[j:]); ru2 >= 0 {
						if dec := utf16.DecodeRune(ru, ru2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							j += 6
							break
						}
					}
					ru = utf8.RuneError
				}
				out = utf8.AppendRune(out, ru)
			default:
				r.i = j
				return nil, r.fail("invalid escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			ru, size := utf8.DecodeRune(r.b[j:])
			if ru == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, r.b[j:j+size]...)
			}
			j += size
		}
	}
	r.i = j
	return nil, r.fail("unterminated string")
}

// hex4 decodes a `\uXXXX` escape at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var v rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		v = v<<4 | rune(c)
	}
	return v
}

// skipValue consumes one value of any type, nested at the given depth (the
// number of enclosing objects and arrays). It is iterative, so hostile
// nesting costs a byte of stack per level rather than a call frame.
func (r *jsonReader) skipValue(depth int) error {
	var closers []byte
	for {
		// A value starts here.
		r.ws()
		switch c := r.peek(); {
		case c == '{' || c == '[':
			if depth+len(closers)+1 > r.maxDepth {
				return r.fail("nesting too deep")
			}
			r.i++
			r.ws()
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			if r.peek() == closing {
				r.i++
				break
			}
			closers = append(closers, closing)
			if closing == '}' {
				if err := r.skipKey(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, err := r.readStringBytes(nil); err != nil {
				return err
			}
		case c == 't':
			if err := r.literal("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := r.literal("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := r.literal("null"); err != nil {
				return err
			}
		default:
			if _, err := r.readNumber(); err != nil {
				return err
			}
		}
		// A value ended: close containers until one has another member.
		for {
			if len(closers) == 0 {
				return nil
			}
			closing := closers[len(closers)-1]
			more, err := r.next(closing)
			if err != nil {
				return err
			}
			if more {
				if closing == '}' {
					if err := r.skipKey(); err != nil {
						return err
					}
				}
				break
			}
			closers = closers[:len(closers)-1]
		}
	}
}

// skipKey consumes an object key and its colon.
func (r *jsonReader) skipKey() error {
	r.ws()
	if r.peek() != '"' {
		return r.fail("expected a key")
	}
	if _, err := r.readStringBytes(nil); err != nil {
		return err
	}
	return r.colon()
}
