package remoting

import (
	"fmt"
	"strconv"
	"strings"
)

// Header is a typed custom header. Request and response header structs of
// the handlers implement it to build ExtFields; every value is a string on
// the wire (numbers in decimal, booleans as "true"/"false").
type Header interface {
	Encode() map[string]string
}

// ExtString returns the value of a required ext field. A missing key is an
// ErrMissingField error.
func ExtString(ext map[string]string, key string) (string, error) {
	v, ok := ext[key]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrMissingField, key)
	}
	return v, nil
}

// ExtInt parses an ext field as a decimal int64 (Java Long.parseLong:
// optional sign, no spaces). A missing key is ErrMissingField, a value that
// does not parse is ErrBadHeader.
func ExtInt(ext map[string]string, key string) (int64, error) {
	v, err := ExtString(ext, key)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("%w: ext field %q = %q is not an integer", ErrBadHeader, key, v)
	}
	return n, nil
}

// ExtInt32 is ExtInt for fields that must fit an int32 (queue ids, flags,
// counts); a value out of range is ErrBadHeader.
func ExtInt32(ext map[string]string, key string) (int32, error) {
	n, err := ExtInt(ext, key)
	if err != nil {
		return 0, err
	}
	if n != int64(int32(n)) {
		return 0, fmt.Errorf("%w: ext field %q = %d is out of int32 range", ErrBadHeader, key, n)
	}
	return int32(n), nil
}

// ExtBool parses an ext field the way Java's Boolean.parseBoolean does:
// "true" in any case is true and every other value is false. A missing key
// is ErrMissingField.
func ExtBool(ext map[string]string, key string) (bool, error) {
	v, err := ExtString(ext, key)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(v, "true"), nil
}
