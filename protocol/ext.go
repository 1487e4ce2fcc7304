package protocol

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// maxQuoted bounds how much of a bad value an error message repeats: the
// value came from the network and may be megabytes long.
const maxQuoted = 64

// extReader decodes the ext fields of one header and keeps the first
// error, so a Decode reads every field in a row and checks once. Its
// rules are those of the broker's and Java's header decoding:
//
//   - a required string field must be present (it may be empty);
//   - a required number must be present and non-empty; an optional number
//     that is absent or empty is 0;
//   - numbers are decimal, with an optional sign, in range of their type;
//   - a boolean is true when it reads "true" in any case (Java
//     Boolean.parseBoolean), false otherwise or when absent.
type extReader struct {
	header string // names the header in errors: "SEND_MESSAGE request header"
	ext    map[string]string
	// slot, when set, gives a field's slot in slots, which then holds
	// the fields instead of ext (slotReader), or -1.
	slot  func(key string) int
	slots extSlots
	err   error
}

// extSlots are the values of a header's fields by slot, and which were
// present.
type extSlots struct {
	val [16]string
	has [16]bool
}

// slotReader is an extReader of the fields of list, read in one pass: a
// key slot gives no slot is ignored, and a repeated key keeps its last
// value, as in the map of list.
func slotReader(list []remoting.ExtField, slot func(key string) int) extReader {
	r := extReader{slot: slot}
	for _, f := range list {
		if i := slot(f.Key); i >= 0 {
			r.slots.val[i], r.slots.has[i] = f.Value, true
		}
	}
	return r
}

// get returns the field's value and whether it is present.
func (r *extReader) get(key string) (string, bool) {
	if r.slot == nil {
		v, ok := r.ext[key]
		return v, ok
	}
	if i := r.slot(key); i >= 0 && r.slots.has[i] {
		return r.slots.val[i], true
	}
	return "", false
}

func (r *extReader) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("protocol: %s: %w", r.header, err)
	}
}

func (r *extReader) missing(key string) {
	r.fail(fmt.Errorf("%w: %q", remoting.ErrMissingField, key))
}

// str returns the field's value; a required field must be present.
func (r *extReader) str(key string, required bool) string {
	v, ok := r.get(key)
	if !ok && required {
		r.missing(key)
	}
	return v
}

// num parses the field as a decimal integer of bits bits.
func (r *extReader) num(key string, bits int, required bool) int64 {
	v, ok := r.get(key)
	if !ok || v == "" {
		if required {
			r.missing(key)
		}
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		r.fail(fmt.Errorf("%w: ext field %q = %s is not an int%d", remoting.ErrBadHeader, key, quote(v), bits))
		return 0
	}
	return n
}

func (r *extReader) int32(key string, required bool) int32 { return int32(r.num(key, 32, required)) }

// int32Or is an optional int32 that reads def, not 0, when absent or empty.
func (r *extReader) int32Or(key string, def int32) int32 {
	if v, _ := r.get(key); v == "" {
		return def
	}
	return r.int32(key, false)
}
func (r *extReader) int64(key string, required bool) int64 { return r.num(key, 64, required) }
func (r *extReader) bool(key string) bool {
	v, _ := r.get(key)
	return strings.EqualFold(v, "true")
}

// quote quotes s for an error message, cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

func itoa32(n int32) string { return strconv.FormatInt(int64(n), 10) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
