package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadAttributes: a topic's attribute changes do not parse.
var ErrBadAttributes = errors.New("protocol: bad attributes")

// MaxAttributes bounds the changes one request makes.
const MaxAttributes = 64

// ParseAttributes reads RocketMQ 5's attribute changes, as its
// AttributeParser does: comma-separated items, "+key=value" to set a
// key and "-key" to remove one; blanks around items are ignored, an
// empty string changes nothing. A key may appear once.
func ParseAttributes(s string) (set map[string]string, remove []string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil, nil
	}
	items := strings.Split(s, ",")
	if len(items) > MaxAttributes {
		return nil, nil, fmt.Errorf("%w: %d items, at most %d", ErrBadAttributes, len(items), MaxAttributes)
	}
	seen := map[string]bool{}
	for _, it := range items {
		it = strings.TrimSpace(it)
		if len(it) < 2 {
			return nil, nil, fmt.Errorf("%w: item %q", ErrBadAttributes, it)
		}
		var key, value string
		switch it[0] {
		case '+':
			k, v, ok := strings.Cut(it[1:], "=")
			if !ok {
				return nil, nil, fmt.Errorf("%w: %q sets no value (+key=value)", ErrBadAttributes, it)
			}
			key, value = k, v
		case '-':
			key = it[1:]
			if strings.Contains(key, "=") {
				return nil, nil, fmt.Errorf("%w: %q removes with a value (-key)", ErrBadAttributes, it)
			}
		default:
			return nil, nil, fmt.Errorf("%w: %q starts with neither + nor -", ErrBadAttributes, it)
		}
		if key == "" || seen[key] {
			return nil, nil, fmt.Errorf("%w: key %q empty or repeated", ErrBadAttributes, key)
		}
		seen[key] = true
		if it[0] == '+' {
			if set == nil {
				set = map[string]string{}
			}
			set[key] = value
		} else {
			remove = append(remove, key)
		}
	}
	return set, remove, nil
}
