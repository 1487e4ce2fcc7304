package broker

import (
	"strings"

	"github.com/ledgermq/ledgermq/message"
)

// decodeProperties is message.DecodeProperties of a send header's
// properties string, with the same rules and result: the names and values
// slice s itself, where DecodeProperties would have it copied twice (to
// the bytes it takes, and back into the string its map slices). Input it
// refuses goes to DecodeProperties for its error, so the two cannot
// disagree on what is wrong.
func decodeProperties(s string) (map[string]string, error) {
	m := make(map[string]string, strings.Count(s, string(rune(message.PropertySeparator))))
	for off := 0; off < len(s); {
		rel := strings.IndexByte(s[off:], message.PropertySeparator)
		if rel < 0 {
			return message.DecodeProperties([]byte(s))
		}
		item := s[off : off+rel]
		i := strings.IndexByte(item, message.NameValueSeparator)
		if i <= 0 || strings.IndexByte(item[i+1:], message.NameValueSeparator) >= 0 {
			return message.DecodeProperties([]byte(s))
		}
		m[item[:i]] = item[i+1:]
		off += rel + 1
	}
	return m, nil
}
