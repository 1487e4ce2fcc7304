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
	// list, when not nil, holds the fields instead of ext (a repeated key
	// reads as its last value, as in the map a decoder builds); sorted
	// says its keys are strictly ascending (as encoders write them), so
	// a key is found by binary search.
	list   []remoting.ExtField
	sorted bool
	next   int // in a sorted list, the index after the last field found
	err    error
}

// listReader is an extReader of list.
func listReader(list []remoting.ExtField) extReader {
	if list == nil {
		list = []remoting.ExtField{}
	}
	sorted := true
	for i := 1; i < len(list) && sorted; i++ {
		sorted = list[i-1].Key < list[i].Key
	}
	return extReader{list: list, sorted: sorted}
}

// get returns the field's value and whether it is present.
func (r *extReader) get(key string) (string, bool) {
	if r.list == nil {
		v, ok := r.ext[key]
		return v, ok
	}
	if r.sorted {
		// Decoders ask for fields mostly in the order encoders sort them:
		// look on from the last one found first.
		lo, hi := r.next, len(r.list)
		if lo >= hi || r.list[lo].Key > key {
			lo = 0
		}
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if r.list[mid].Key < key {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo < len(r.list) && r.list[lo].Key == key {
			r.next = lo + 1
			return r.list[lo].Value, true
		}
		return "", false
	}
	for i := len(r.list) - 1; i >= 0; i-- {
		if r.list[i].Key == key {
			return r.list[i].Value, true
		}
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
