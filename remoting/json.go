package remoting

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
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
	i := plainPrefix(s)
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
	return decodeJSONHeaderIn(h, bytes.Clone(h), c, lim, pairs)
}

// decodeJSONHeaderIn is decodeJSONHeader with the bytes the decoded
// strings are views of given: own holds the same bytes as h, or is h
// itself when the header's bytes are the command's to keep (a frame a
// connection read into a buffer of its own). Either way own is written
// only where a string with escapes is unescaped, within that string's
// text, behind the parser's cursor; nothing may write to it afterwards.
func decodeJSONHeaderIn(h, own []byte, c *Command, lim HeaderLimits, pairs []ExtField) ([]ExtField, error) {
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
			var v int64
			var set bool
			switch headerField(key) {
			case fieldCode:
				if v, set, err = r.readInt(32); set {
					c.Code = int32(v)
				}
			case fieldLanguage:
				err = r.readStringField(&c.Language)
			case fieldVersion:
				if v, set, err = r.readInt(16); set {
					c.Version = int16(v)
				}
			case fieldOpaque:
				if v, set, err = r.readInt(32); set {
					c.Opaque = int32(v)
				}
			case fieldFlag:
				if v, set, err = r.readInt(32); set {
					c.Flag = int32(v)
				}
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
	if r.i+1 < len(r.b) && r.b[r.i] == ':' && r.b[r.i+1] == '"' {
		// `"key":"value"`, as every client writes a header.
		r.i++
		return nil
	}
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
	if r.i < len(r.b) && r.b[r.i] == ',' {
		r.i++
		return true, nil
	}
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
// text is a decimal integer in range is its value, and so is a string that
// holds one (fastjson, RocketMQ's reader, coerces "10" to 10); null leaves
// the field as it is (set is false); anything else fails.
func (r *jsonReader) readInt(bits int) (v int64, set bool, err error) {
	switch c := r.peek(); {
	case c == 'n':
		return 0, false, r.literal("null")
	case c == '"':
		at := r.i
		text, err := r.readString()
		if err != nil {
			return 0, false, err
		}
		v, perr := strconv.ParseInt(strings.TrimSpace(text), 10, bits)
		if perr != nil {
			r.i = at
			return 0, false, r.fail(fmt.Sprintf("string %q is not an int%d", text, bits))
		}
		return v, true, nil
	case c == '-' || isDigit(c):
		at := r.i
		lit, err := r.readNumber()
		if err != nil {
			return 0, false, err
		}
		v, ok := parseIntLiteral(lit, bits)
		if !ok {
			r.i = at
			return 0, false, r.fail(fmt.Sprintf("number %s is not an int%d", lit, bits))
		}
		return v, true, nil
	}
	return 0, false, r.fail("expected a number")
}

// parseIntLiteral is strconv.ParseInt(string(lit), 10, bits) for the text
// of a JSON number, without the string: the few digits of a header's
// integers are summed directly; a fraction or an exponent is not an
// integer, and nineteen digits and more take ParseInt.
func parseIntLiteral(lit []byte, bits int) (int64, bool) {
	digits := lit
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		v, err := strconv.ParseInt(string(lit), 10, bits)
		return v, err == nil
	}
	var v int64
	for _, c := range digits {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if len(digits) < len(lit) {
		v = -v
	}
	limit := int64(1) << (bits - 1)
	return v, v >= -limit && v < limit
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
	start := r.i + 1
	j := plainEnd(r.b, start)
	if j < len(r.b) && r.b[j] == '"' {
		// Printable ASCII without escapes: a view of own as it is.
		r.i = j + 1
		return r.s[start:j], nil
	}
	// Unescape into this string's bytes of own, which unescaping never
	// outgrows: it moves to a buffer of its own first if the text holds
	// invalid UTF-8 (one byte becomes three).
	b, err := r.unescape(r.own[start:start], start, j)
	if err != nil || len(b) == 0 {
		return "", err
	}
	// Nothing else refers to b's bytes, and nothing writes to them again.
	return unsafe.String(&b[0], len(b)), nil
}

// plainEnd returns the offset of the first byte of b from j on that a
// JSON string does not hold as it is (a quote, a backslash, a control
// character, a byte of a multi-byte character), or len(b). It tests eight
// bytes at a time.
func plainEnd(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for j < len(b) && jsonPlain[b[j]] {
		j++
	}
	return j
}

// plainPrefix is plainEnd for a string, from its start.
func plainPrefix(s string) int {
	j := 0
	for ; j+8 <= len(s); j += 8 {
		v := uint64(s[j]) | uint64(s[j+1])<<8 | uint64(s[j+2])<<16 | uint64(s[j+3])<<24 |
			uint64(s[j+4])<<32 | uint64(s[j+5])<<40 | uint64(s[j+6])<<48 | uint64(s[j+7])<<56
		if m := specialBytes(v); m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for j < len(s) && jsonPlain[s[j]] {
		j++
	}
	return j
}

// specialBytes marks, with its high bit, the first byte of the eight of v
// (in little-endian order: the first in memory is the lowest) that is not
// jsonPlain: a byte with its high bit set, below 0x20, a quote or a
// backslash; zero when all are plain. The usual word tricks: a test's
// borrow starts only at a byte that fails it and carries upwards, so
// bytes above the first may be marked wrongly but never the ones below.
func specialBytes(v uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (v - 0x20*ones) &^ v
	q := v ^ '"'*ones
	q = (q - ones) &^ q
	bs := v ^ '\\'*ones
	bs = (bs - ones) &^ bs
	return (v | ctl | q | bs) & highs
}

// readStringBytes reads a string at the cursor (which is on the opening
// quote) and returns its unescaped bytes. When the string needs no
// unescaping the result aliases the input; otherwise it is appended to
// scratch. Invalid UTF-8 and unpaired surrogate escapes become U+FFFD.
func (r *jsonReader) readStringBytes(scratch []byte) ([]byte, error) {
	start := r.i + 1
	j := plainEnd(r.b, start)
	if j < len(r.b) && r.b[j] == '"' {
		r.i = j + 1
		return r.b[start:j], nil
	}
	return r.unescape(scratch, start, j)
}

// unescape reads the rest of the string whose text starts at start, from
// j (where plain text ends), appending its unescaped bytes to out. out
// may be the string's own bytes of the input (in place): each step writes
// no more than it has read, until invalid UTF-8 moves out elsewhere.
func (r *jsonReader) unescape(out []byte, start, j int) ([]byte, error) {
	out = append(out, r.b[start:j]...)
	// moved: out no longer aliases the input (see below).
	moved := false
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
			k := plainEnd(r.b, j+1)
			out = append(out, r.b[j:k]...)
			j = k
		default:
			ru, size := utf8.DecodeRune(r.b[j:])
			if ru == utf8.RuneError && size == 1 {
				// One byte becomes three, the only way unescaped text
				// grows: out leaves the string's bytes first (once), so
				// that unescaping in place never writes ahead of what is
				// still to be read.
				if !moved {
					out, moved = slices.Clip(out), true
				}
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
