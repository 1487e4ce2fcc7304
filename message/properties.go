package message

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Separators of the properties encoding.
const (
	NameValueSeparator byte = 0x01 // between a property's name and its value
	PropertySeparator  byte = 0x02 // after every property, the last one included
)

// PropertiesLen returns the length of EncodeProperties(p) without encoding.
func PropertiesLen(p map[string]string) int {
	n := 0
	for k, v := range p {
		n += len(k) + len(v) + 2
	}
	return n
}

// EncodeProperties encodes p as "name\x01value\x02" items in ascending byte
// order of the names. The output is a pure function of the map's contents,
// so every replica encodes the same properties to the same bytes. An empty
// or nil map encodes to an empty slice.
//
// EncodeProperties does not validate: a name that is empty or a name or
// value that contains \x01 or \x02 yields bytes DecodeProperties rejects.
// ValidateProperties checks a map first; AppendRecord does so itself.
func EncodeProperties(p map[string]string) []byte {
	return AppendProperties(make([]byte, 0, PropertiesLen(p)), p)
}

// AppendProperties appends EncodeProperties(p) to dst and returns the
// extended slice. It allocates nothing beyond growing dst when p has at most
// 16 entries.
func AppendProperties(dst []byte, p map[string]string) []byte {
	if len(p) == 0 {
		return dst
	}
	var stack [16]string
	keys, n := sortedKeys(p, &stack)
	return appendSorted(dst, p, keys, n)
}

// sortedKeys returns p's names in ascending order, using stack when they fit,
// and the encoded length of p.
func sortedKeys(p map[string]string, stack *[16]string) ([]string, int) {
	keys := stack[:0]
	n := 0
	for k, v := range p {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	return keys, n
}

// appendSorted appends the items of p in the order of keys; n is their
// encoded length.
func appendSorted(dst []byte, p map[string]string, keys []string, n int) []byte {
	dst = slices.Grow(dst, n)
	for _, k := range keys {
		dst = append(dst, k...)
		dst = append(dst, NameValueSeparator)
		dst = append(dst, p[k]...)
		dst = append(dst, PropertySeparator)
	}
	return dst
}

// ValidateProperties reports whether p can be encoded so that
// DecodeProperties reads it back unchanged: every name must be non-empty and
// no name or value may contain \x01 or \x02. The error wraps
// ErrBadProperties and names the smallest offending property.
func ValidateProperties(p map[string]string) error {
	bad := ""
	found := false
	for k, v := range p {
		if k == "" || strings.ContainsAny(k, "\x01\x02") || strings.ContainsAny(v, "\x01\x02") {
			if !found || k < bad {
				bad, found = k, true
			}
		}
	}
	if !found {
		return nil
	}
	if bad == "" {
		return fmt.Errorf("%w: empty property name", ErrBadProperties)
	}
	return fmt.Errorf("%w: property %q: name or value contains a separator byte", ErrBadProperties, bad)
}

// DecodeProperties parses encoded properties. It is strict, because every
// known writer (Java, Go, this package) produces exactly this form and a
// deviation in a stored record means corruption or truncation:
//
//   - the input is a sequence of items, each terminated by \x02 (the last
//     one too: trailing bytes without a terminating \x02 are an error);
//   - each item holds exactly one \x01, which splits it into a non-empty
//     name and a value (the value may be empty);
//   - bytes are kept as they are; no UTF-8 validation is done;
//   - a name that appears twice keeps its last value, as in Java and Go.
//
// An empty input is an empty (non-nil) map. Errors wrap ErrBadProperties and
// give the byte offset of the offending item. DecodeProperties never panics.
func DecodeProperties(b []byte) (map[string]string, error) {
	m := make(map[string]string, bytes.Count(b, []byte{PropertySeparator}))
	// One string holds every name and value; the map's strings slice it.
	s := string(b)
	for off := 0; off < len(b); {
		sep, end, err := scanProperty(b, off)
		if err != nil {
			return nil, err
		}
		m[s[off:sep]] = s[sep+1 : end]
		off = end + 1
	}
	return m, nil
}

// CheckEncodedProperties validates encoded properties by the rules of
// DecodeProperties without building a map; it does not allocate unless it
// returns an error.
func CheckEncodedProperties(b []byte) error {
	for off := 0; off < len(b); {
		_, end, err := scanProperty(b, off)
		if err != nil {
			return err
		}
		off = end + 1
	}
	return nil
}

// FindProperty returns the value of the named property in encoded
// properties, without allocating. The value aliases b. If the name appears
// more than once the last value wins, as in DecodeProperties. On malformed
// input it stops at the first bad item and reports only what precedes it.
func FindProperty(b []byte, name string) ([]byte, bool) {
	var (
		val   []byte
		found bool
	)
	for off := 0; off < len(b); {
		sep, end, err := scanProperty(b, off)
		if err != nil {
			break
		}
		if string(b[off:sep]) == name {
			val, found = b[sep+1:end:end], true
		}
		off = end + 1
	}
	return val, found
}

// scanProperty parses the item starting at b[off:]: its name is
// b[off:sep], its value b[sep+1:end], and b[end] is its terminating \x02.
func scanProperty(b []byte, off int) (sep, end int, err error) {
	rel := bytes.IndexByte(b[off:], PropertySeparator)
	if rel < 0 {
		return 0, 0, fmt.Errorf("%w: item at byte %d is not terminated by \\x02", ErrBadProperties, off)
	}
	end = off + rel
	item := b[off:end]
	i := bytes.IndexByte(item, NameValueSeparator)
	switch {
	case i < 0:
		return 0, 0, fmt.Errorf("%w: item at byte %d has no \\x01 between name and value", ErrBadProperties, off)
	case i == 0:
		return 0, 0, fmt.Errorf("%w: item at byte %d has an empty name", ErrBadProperties, off)
	}
	sep = off + i
	if extra := bytes.IndexByte(b[sep+1:end], NameValueSeparator); extra >= 0 {
		return 0, 0, fmt.Errorf("%w: item at byte %d has a second \\x01 at byte %d", ErrBadProperties, off, sep+1+extra)
	}
	return sep, end, nil
}
